"""Hook points and the Trace they fill.

Every captured tensor passes through a `HookPoint`: an identity module with a fixed name
(TransformerLens style, e.g. `blocks.0.attn.hook_pattern`). Outside a capture it only returns its
input. Inside `capturing()` it also stores the tensor under its name. The active store lives in a
context variable, so threads that share one model (one Streamlit server, many browser sessions)
never see each other's tensors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import torch
from torch import nn

_active_store: ContextVar[dict[str, torch.Tensor] | None] = ContextVar("capture", default=None)


class HookPoint(nn.Module):
    """Identity that records its input under `name` while a capture is active."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        store = _active_store.get()
        if store is not None:
            store[self.name] = x
        return x

    def extra_repr(self) -> str:
        return self.name


@contextmanager
def capturing() -> Iterator[dict[str, torch.Tensor]]:
    """Collect every HookPoint's tensor run in this thread into the yielded dict."""
    store: dict[str, torch.Tensor] = {}
    token = _active_store.set(store)
    try:
        yield store
    finally:
        _active_store.reset(token)


@dataclass
class Trace:
    """Everything one forward pass computed, by name.

    output         [B, T, d]   what model(input_ids, attention_mask) returns
    hidden_states  num_layers + 1 tensors [B, T, d]: the embedding output, then the residual
                   stream after each block (before any final norm)
    attention      [num_layers, B, heads, T, T] softmax weights; padded keys get exactly 0
    tensors        {hook name: tensor}, in the order the data flowed
    input_ids      [B, T]
    attention_mask [B, T] 1 = token, 0 = padding
    """

    output: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...]
    attention: torch.Tensor
    tensors: dict[str, torch.Tensor]
    input_ids: torch.Tensor
    attention_mask: torch.Tensor

    @property
    def num_layers(self) -> int:
        return len(self.hidden_states) - 1

    def to(self, device: str | torch.device) -> Trace:
        """The same trace with every tensor moved (e.g. to the CPU for drawing)."""
        return Trace(
            output=self.output.to(device),
            hidden_states=tuple(h.to(device) for h in self.hidden_states),
            attention=self.attention.to(device),
            tensors={name: t.to(device) for name, t in self.tensors.items()},
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
        )
