"""Hook points, the capture they fill, and the Trace a forward pass returns.

Every captured tensor passes through a `HookPoint`: an identity module named from
`encoder.core.hooks` (TransformerLens style, e.g. `blocks.0.attn.hook_pattern`). Outside a
capture it only returns its input. Inside `capturing()` it also stores the tensor under its
name, when the capture's filter keeps that name. The capture also carries the forward pass's
interventions (heads to switch off). It lives in a context variable, so threads that share one
model (one Streamlit server, many browser sessions) never see each other's tensors or
interventions. So do the replacements `replacing()` makes (activation patching): inside it a
HookPoint passes on a changed tensor, in this context only; a torch hook on a shared model would
change every session's forward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch
from torch import nn

from encoder.core.hooks import NameFilter


@dataclass
class Capture:
    """What one forward pass keeps (`store`, filtered by `keep`) and which heads it switches off."""

    keep: NameFilter
    ablated: dict[int, tuple[int, ...]] = field(default_factory=dict)  # layer -> heads
    store: dict[str, torch.Tensor] = field(default_factory=dict)

    def record(self, name: str, x: torch.Tensor) -> None:
        """What a HookPoint does inside this capture: keep the tensor when the filter says so."""
        if self.keep(name):
            self.store[name] = x


_active: ContextVar[Capture | None] = ContextVar("capture", default=None)
Change = Callable[[torch.Tensor], torch.Tensor]
_replaced: ContextVar[dict[str, Change] | None] = ContextVar("replaced", default=None)


class HookPoint(nn.Module):
    """Identity that records its input under `name` while a capture that keeps it is active;
    inside `replacing` a change of it, where one is given for `name`."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        replaced = _replaced.get()
        if replaced and self.name in replaced:
            x = replaced[self.name](x)
        capture = _active.get()
        if capture is not None:
            capture.record(self.name, x)
        return x

    def extra_repr(self) -> str:
        return self.name


def ablated_heads(layer: int) -> tuple[int, ...]:
    """The heads of `layer` that the active capture switches off (none outside a capture)."""
    capture = _active.get()
    return () if capture is None else capture.ablated.get(layer, ())


@contextmanager
def replacing(changes: dict[str, Change]) -> Iterator[None]:
    """Inside, in this context only, each HookPoint named in `changes` (names from
    encoder.core.hooks) passes on change(x) instead of x; a capture records the changed tensor."""
    token = _replaced.set({**(_replaced.get() or {}), **changes})
    try:
        yield
    finally:
        _replaced.reset(token)


@contextmanager
def activated(capture: Capture) -> Iterator[Capture]:
    """Make `capture` the one the HookPoints run in this context report to."""
    token = _active.set(capture)
    try:
        yield capture
    finally:
        _active.reset(token)


@contextmanager
def capturing(
    keep: NameFilter = lambda name: True, ablated: dict[int, tuple[int, ...]] | None = None
) -> Iterator[dict[str, torch.Tensor]]:
    """Collect the kept HookPoints' tensors run in this context into the yielded dict."""
    with activated(Capture(keep=keep, ablated=dict(ablated or {}))) as capture:
        yield capture.store


@dataclass
class Trace:
    """Everything one forward pass computed, by name.

    output         [B, T, d]   what model(input_ids, attention_mask) returns
    hidden_states  num_layers + 1 tensors [B, T, d]: the embedding output, then the residual
                   stream after each block (before any final norm)
    attention      [num_layers, B, heads, T, T] softmax weights; padded keys get exactly 0
    tensors        {hook name: tensor} of the kept hooks, in the order the data flowed
    input_ids      [B, T]
    attention_mask [B, T] 1 = token, 0 = padding
    ablated_heads  the (layer, head) pairs switched off in this pass
    """

    output: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...]
    attention: torch.Tensor
    tensors: dict[str, torch.Tensor]
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    ablated_heads: tuple[tuple[int, int], ...] = ()

    @property
    def num_layers(self) -> int:
        return len(self.hidden_states) - 1

    def __getitem__(self, name: str) -> torch.Tensor:
        """The tensor of one hook; a KeyError that says how to keep it when it was filtered out."""
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(
                f"{name!r} was not kept in this trace: pass it in model.trace(..., names=...)"
            ) from None

    @property
    def nbytes(self) -> int:
        """Bytes of the trace's distinct tensors (one tensor kept under two names counts once)."""
        tensors = [self.output, *self.hidden_states, self.attention, *self.tensors.values()]
        tensors += [self.input_ids, self.attention_mask]
        distinct = {t.data_ptr(): t for t in tensors if t.numel()}
        return sum(t.numel() * t.element_size() for t in distinct.values())

    def to(self, device: str | torch.device) -> Trace:
        """The same trace with every tensor moved (e.g. to the CPU for drawing)."""
        return Trace(
            output=self.output.to(device),
            hidden_states=tuple(h.to(device) for h in self.hidden_states),
            attention=self.attention.to(device),
            tensors={name: t.to(device) for name, t in self.tensors.items()},
            input_ids=self.input_ids.to(device),
            attention_mask=self.attention_mask.to(device),
            ablated_heads=self.ablated_heads,
        )
