"""How each attention head spreads its weight over a sentence: the every-head metrics table, and
one head's attention in one sentence of words (`head_sentence`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from encoder.core.capture import Trace
from encoder.inspect.measures import entropy
from encoder.inspect.predictions import head_label, token_named


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


def head_sentence(
    weights, tokens: Sequence[str], layer: int, head: int, setup: str | None = None
) -> str:
    """One head's attention over one sentence in words, from its own numbers: the query that
    gives the largest single weight (that weight, and its key), then the key that most queries
    give their largest weight ("11 of 16 tokens put most weight on '[CLS]' (position 0)").

    weights: [query, key] over the sentence's real tokens (padding left out), len(tokens) a side;
    layer, head: as head_label names them (from 0); setup: a name to say whose head it is. Ties
    go to the first position. True of any model: it states maxima, not what they mean.
    """
    rows = np.asarray(weights.detach().cpu() if hasattr(weights, "detach") else weights)
    rows = rows.astype(np.float64)
    n = len(tokens)
    if n == 0 or rows.shape != (n, n):
        raise ValueError(
            f"weights must be [query, key] over the {n} tokens; got shape {rows.shape}"
        )
    top = rows.argmax(axis=1)  # [query]: each query's heaviest key
    query = int(rows.max(axis=1).argmax())
    key = int(top[query])
    counts = np.bincount(top, minlength=n)  # [key]: queries whose heaviest key it is
    chosen = int(counts.argmax())
    count = int(counts[chosen])
    where = head_label(layer, head)
    where = where[0].upper() + where[1:] + (f" of {setup}" if setup else "")
    to = "itself" if key == query else token_named(tokens, key)
    tokens_word = "token" if n == 1 else "tokens"
    verb = "puts" if count == 1 else "put"
    return (
        f"{where}: {token_named(tokens, query)} gives {rows[query, key]:.2f} to {to}; "
        f"{count} of {n} {tokens_word} {verb} most weight on {token_named(tokens, chosen)}."
    )
