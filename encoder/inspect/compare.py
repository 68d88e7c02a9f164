"""Two passes over the same input, compared: setup A against setup B (or a model against itself
with heads switched off, encoder.inspect.ablation).

Which comparisons exist depends on the shapes: the residual stream and the output can be compared
when both models have the same d_model (depth by depth, up to the shallower one's depth); the
attention weights when both have the same layers and heads. `TraceComparison` holds what exists
and says why the rest does not. Shapes: L = layers, B = sentences, T = tokens (with padding),
H = heads, d = d_model; depth 0 is the embedding output, depth i + 1 the stream after block i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from encoder.core.capture import Trace
from encoder.inspect.measures import cosine


@dataclass(frozen=True)
class TraceComparison:
    """How far pass `b` is from pass `a` (float64 numpy arrays; NaN at padding), or None where
    the shapes do not allow the comparison (`why_not` says why)."""

    residual_cosine: np.ndarray | None  # [D, B, T], D = the shallower depth count
    mean_residual_cosine: np.ndarray | None  # [D, B] mean over each sentence's real tokens
    output_cosine: np.ndarray | None  # [B, T] cosine of the final output per token
    output_change: np.ndarray | None  # [B, T] ||out_b - out_a|| / ||out_a||
    sentence_cosine: np.ndarray | None  # [B] cosine of the mean over real tokens of the output
    attention_difference: np.ndarray | None  # [L, B, H, T, T] b - a attention weights
    why_not: tuple[str, ...] = ()  # a sentence for each comparison that could not be made

    def head_changes(self, sentence: int, n_valid: int, from_layer: int = 0) -> pd.DataFrame:
        """Per (layer, head) from `from_layer` on, over the sentence's real tokens: moved = mean
        over queries of half the summed |change| of the row (the share of attention that moved
        to other keys, 0..1) and largest = the largest |change| of a weight, sorted by moved,
        largest first."""
        if self.attention_difference is None:
            raise ValueError("the two passes' attention has different shapes: " + self.why_not[0])
        later = self.attention_difference[from_layer:, sentence]  # [L', H, T, T]
        real = np.abs(later[:, :, :n_valid, :n_valid])  # [L', H, q, k]
        moved = 0.5 * real.sum(axis=-1).mean(axis=-1)  # [L', H]
        L, H = moved.shape
        layer, head = np.meshgrid(np.arange(L) + from_layer, np.arange(H), indexing="ij")
        table = pd.DataFrame(
            {
                "layer": layer.ravel(),
                "head": head.ravel(),
                "moved": moved.ravel(),
                "largest": real.max(axis=(-1, -2), initial=0.0).ravel(),
            }
        )
        return table.sort_values("moved", ascending=False, kind="stable", ignore_index=True)


def same_input(a: Trace, b: Trace) -> bool:
    """True when both passes read the same token ids with the same mask."""
    return (
        a.input_ids.shape == b.input_ids.shape
        and torch.equal(a.input_ids.cpu(), b.input_ids.cpu())
        and torch.equal(a.attention_mask.cpu(), b.attention_mask.cpu())
    )


def compare_traces(a: Trace, b: Trace) -> TraceComparison:
    """Layer by layer, token by token: how pass b's stream and attention differ from pass a's.
    ValueError when the two passes read different inputs."""
    if not same_input(a, b):
        raise ValueError("the two passes read different tokens: there is nothing to line up")
    real = a.attention_mask.cpu().bool()  # [B, T]
    why_not = []
    stream = output = attention = None
    d_a, d_b = a.output.shape[-1], b.output.shape[-1]
    if d_a == d_b:
        depths = min(len(a.hidden_states), len(b.hidden_states))
        stream_a = torch.stack(a.hidden_states[:depths]).cpu().double()  # [D, B, T, d]
        stream_b = torch.stack(b.hidden_states[:depths]).cpu().double()
        stream = cosine(stream_a, stream_b).masked_fill(~real, torch.nan)  # [D, B, T]
        output = _output_comparison(a.output, b.output, real)
    else:
        why_not.append(f"d_model differs ({d_a} vs {d_b}): the streams have different sizes")
    if a.attention.shape == b.attention.shape:
        attention = (b.attention.cpu().double() - a.attention.cpu().double()).numpy()
    else:
        (la, _, ha, *_), (lb, _, hb, *_) = a.attention.shape, b.attention.shape
        why_not.append(
            f"the attention has {la} layers x {ha} heads in A and {lb} x {hb} in B: there is no "
            "head-by-head difference"
        )
    return TraceComparison(
        residual_cosine=None if stream is None else stream.numpy(),
        mean_residual_cosine=None if stream is None else stream.nanmean(dim=-1).numpy(),
        output_cosine=None if output is None else output[0],
        output_change=None if output is None else output[1],
        sentence_cosine=None if output is None else output[2],
        attention_difference=attention,
        why_not=tuple(why_not),
    )


def _output_comparison(
    out_a: torch.Tensor, out_b: torch.Tensor, real: torch.Tensor
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per token cosine and relative change of the outputs [B, T, d], and the cosine of the
    sentences' mean-pooled outputs [B]."""
    out_a, out_b = out_a.cpu().double(), out_b.cpu().double()
    change = (out_b - out_a).norm(dim=-1) / out_a.norm(dim=-1).clamp_min(1e-300)  # [B, T]
    weights = real.double()[:, :, None]  # [B, T, 1]
    pooled_a = (out_a * weights).sum(dim=1) / weights.sum(dim=1)  # [B, d]
    pooled_b = (out_b * weights).sum(dim=1) / weights.sum(dim=1)
    return (
        cosine(out_a, out_b).masked_fill(~real, torch.nan).numpy(),
        change.masked_fill(~real, torch.nan).numpy(),
        cosine(pooled_a, pooled_b).numpy(),
    )
