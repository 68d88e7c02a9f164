"""How each attention head spreads its weight over a sentence: the every-head metrics table."""

from __future__ import annotations

import math

import pandas as pd
import torch

from encoder.core.capture import Trace
from encoder.inspect.measures import entropy


def head_metrics(trace: Trace, sentence: int) -> pd.DataFrame:
    """How each head of each layer spreads its attention over one sentence's real tokens.

    Per (layer, head), averaged over the real query tokens: entropy (nats), max_weight (row
    max), mean_distance (sum_k w * |q - k|, in tokens) and the share of attention to_self,
    to_previous (queries that have one), to_next (likewise), to_first and to_last real token.
    """
    real = trace.attention_mask[sentence].bool()
    index = real.nonzero(as_tuple=True)[0]
    weights = (
        trace.attention[:, sentence].float()[:, :, index][:, :, :, index].cpu()
    )  # [L, H, q, k]
    L, H, n, _ = weights.shape
    steps = torch.arange(n, dtype=torch.float32)
    distance = (steps[:, None] - steps[None, :]).abs()  # [q, k]

    def mean_over_queries(values: torch.Tensor) -> torch.Tensor:  # [L, H, q] -> [L, H]
        return values.mean(dim=-1) if values.shape[-1] else torch.full((L, H), math.nan)

    metrics = {
        "entropy": mean_over_queries(entropy(weights)),
        "max_weight": mean_over_queries(weights.amax(dim=-1)),
        "mean_distance": mean_over_queries((weights * distance).sum(dim=-1)),
        "to_self": mean_over_queries(weights.diagonal(dim1=-2, dim2=-1)),
        "to_previous": mean_over_queries(weights.diagonal(offset=-1, dim1=-2, dim2=-1)),
        "to_next": mean_over_queries(weights.diagonal(offset=1, dim1=-2, dim2=-1)),
        "to_first": mean_over_queries(weights[..., 0]),
        "to_last": mean_over_queries(weights[..., n - 1]),
    }
    layer, head = torch.meshgrid(torch.arange(L), torch.arange(H), indexing="ij")
    table = {"layer": layer.flatten().numpy(), "head": head.flatten().numpy()}
    table.update({name: value.flatten().numpy() for name, value in metrics.items()})
    return pd.DataFrame(table)
