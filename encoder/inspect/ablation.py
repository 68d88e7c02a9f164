"""What switching heads off changes: a base Trace against one of the same input with heads ablated.

Heads are written `layer.head` and listed with commas (`0.2,1.8`), the form links carry.
Shapes: L = layers, B = sentences, T = tokens (with padding), H = heads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from encoder.core.capture import Trace
from encoder.inspect.measures import cosine

HEAD_PATTERN = re.compile(r"\s*(\d+)\.(\d+)\s*")

Head = tuple[int, int]  # (layer, head)


def parse_heads(text: str, num_layers: int, num_heads: int) -> tuple[tuple[Head, ...], list[str]]:
    """The (layer, head) pairs in `text` ("0.2,1.8"), sorted and without repeats, and a sentence
    for each item that is not one of this model's heads (those items are left out)."""
    heads: set[Head] = set()
    problems = []
    for item in text.split(","):
        if not item.strip():
            continue
        match = HEAD_PATTERN.fullmatch(item)
        if match is None:
            problems.append(f"{item.strip()!r} is not written layer.head (e.g. 0.2)")
            continue
        layer, head = int(match[1]), int(match[2])
        if layer >= num_layers or head >= num_heads:
            problems.append(
                f"{item.strip()!r} is not a head of this model (layers 0..{num_layers - 1}, "
                f"heads 0..{num_heads - 1})"
            )
            continue
        heads.add((layer, head))
    return tuple(sorted(heads)), problems


@dataclass(frozen=True)
class AblationEffect:
    """How far the ablated pass moved from the base pass (float64 numpy arrays).

    depth 0 is the embedding output, depth i + 1 the stream after block i.
    """

    heads: tuple[Head, ...]
    residual_cosine: np.ndarray  # [L + 1, B, T] per token; NaN at padding
    mean_residual_cosine: np.ndarray  # [L + 1, B] mean over each sentence's real tokens
    output_cosine: np.ndarray  # [B, T] cosine of the final output per token; NaN at padding
    output_change: np.ndarray  # [B, T] ||out_ablated - out|| / ||out||; NaN at padding
    sentence_cosine: np.ndarray  # [B] cosine of the mean over real tokens of the output
    attention_difference: np.ndarray  # [L, B, H, T, T] ablated - base attention weights

    @property
    def first_layer(self) -> int:
        """The earliest layer with a head switched off: attention differs only after it."""
        return min(layer for layer, _ in self.heads)

    def head_changes(self, sentence: int, n_valid: int) -> pd.DataFrame:
        """Per (layer, head) of the layers after `first_layer`, over the sentence's real tokens:
        moved = mean over queries of half the summed |change| of the row (the share of
        attention that moved to other keys, 0..1) and largest = the largest |change| of a weight,
        sorted by moved, largest first."""
        later = self.attention_difference[self.first_layer + 1 :, sentence]  # [L', H, T, T]
        real = np.abs(later[:, :, :n_valid, :n_valid])  # [L', H, q, k]
        moved = 0.5 * real.sum(axis=-1).mean(axis=-1)  # [L', H]
        L, H = moved.shape
        layer, head = np.meshgrid(np.arange(L) + self.first_layer + 1, np.arange(H), indexing="ij")
        table = pd.DataFrame(
            {
                "layer": layer.ravel(),
                "head": head.ravel(),
                "moved": moved.ravel(),
                "largest": real.max(axis=(-1, -2), initial=0.0).ravel(),
            }
        )
        return table.sort_values("moved", ascending=False, kind="stable", ignore_index=True)


def compare(base: Trace, ablated: Trace) -> AblationEffect:
    """Layer by layer, token by token: how the ablated pass's stream differs from the base's."""
    if not ablated.ablated_heads:
        raise ValueError("the second trace switches no head off: nothing to compare")
    if base.ablated_heads:
        raise ValueError(f"the base trace already switches heads off: {base.ablated_heads}")
    same_input = base.input_ids.shape == ablated.input_ids.shape and torch.equal(
        base.input_ids.cpu(), ablated.input_ids.cpu()
    )
    if not same_input or not torch.equal(base.attention_mask.cpu(), ablated.attention_mask.cpu()):
        raise ValueError("the two traces were run on different inputs")
    real = base.attention_mask.cpu().bool()  # [B, T]
    base_stream = torch.stack(base.hidden_states).cpu().double()  # [L + 1, B, T, d]
    ablated_stream = torch.stack(ablated.hidden_states).cpu().double()
    residual = cosine(base_stream, ablated_stream).masked_fill(~real, torch.nan)  # [L+1, B, T]
    out, out_ablated = base.output.cpu().double(), ablated.output.cpu().double()  # [B, T, d]
    change = (out_ablated - out).norm(dim=-1) / out.norm(dim=-1).clamp_min(1e-300)  # [B, T]
    weights = real.double()[:, :, None]  # [B, T, 1]
    pooled = (out * weights).sum(dim=1) / weights.sum(dim=1)  # [B, d]
    pooled_ablated = (out_ablated * weights).sum(dim=1) / weights.sum(dim=1)
    difference = ablated.attention.cpu().double() - base.attention.cpu().double()
    return AblationEffect(
        heads=ablated.ablated_heads,
        residual_cosine=residual.numpy(),
        mean_residual_cosine=residual.nanmean(dim=-1).numpy(),
        output_cosine=cosine(out, out_ablated).masked_fill(~real, torch.nan).numpy(),
        output_change=change.masked_fill(~real, torch.nan).numpy(),
        sentence_cosine=cosine(pooled, pooled_ablated).numpy(),
        attention_difference=difference.numpy(),
    )
