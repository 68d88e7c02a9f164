"""Attention rollout (Abnar & Zuidema, ACL 2020, "Quantifying Attention Flow in Transformers").

Per layer l, the attention averaged over heads, with the residual connection counted as an equal
share of identity and rows renormalised:

    A_hat_l = rownorm(0.5 * mean_h(alpha_l) + 0.5 * I)
    R_1 = A_hat_1,    R_l = A_hat_l @ R_{l-1}

R_l[i, j] is how much of token i's representation after layer l draws on input token j. Padded
positions take no part: real rows put nothing on padded keys, and padded rows come out as 0.
"""

from __future__ import annotations

import torch

from encoder.core.capture import Trace


def rollout(attention: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """attention [L, B, H, query, key] (padded keys 0), attention_mask [B, T] -> [L, B, T, T]:
    the rollout up to each layer (index l: layers 0..l composed)."""
    real = attention_mask.bool()  # [B, T]
    T = real.shape[1]
    pair = (real[:, :, None] & real[:, None, :]).to(attention.dtype)  # [B, T, T]
    identity = torch.eye(T, dtype=attention.dtype, device=attention.device)
    composed = []
    current = None
    for layer in attention:  # [B, H, T, T]
        mixed = 0.5 * layer.mean(dim=1) * pair + 0.5 * identity  # [B, T, T]
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        current = mixed if current is None else mixed @ current
        composed.append(current * pair)
    return torch.stack(composed)  # [L, B, T, T]


def trace_rollout(trace: Trace) -> torch.Tensor:
    """rollout of a trace's attention: [L, B, T, T]."""
    return rollout(trace.attention, trace.attention_mask)


def top_sources(row: torch.Tensor, tokens: list[str], count: int = 3) -> list[tuple[str, float]]:
    """The `count` input tokens a rollout row draws on most: (token, share), largest first."""
    values = row[: len(tokens)]
    order = torch.argsort(values, descending=True)[:count]
    return [(tokens[int(j)], float(values[j])) for j in order]


def rollout_sentence(matrix: torch.Tensor, tokens: list[str], query: int) -> str:
    """Which tokens `query`'s final representation draws on (matrix: the last layer's rollout of
    one sentence, [T, T])."""
    sources = top_sources(matrix[query], tokens)
    listed = ", ".join(f"“{token}” ({share:.0%})" for token, share in sources)
    own = float(matrix[query, query])
    return (
        f"After the last layer, “{tokens[query]}” (position {query}) draws most on {listed}; "
        f"{own:.0%} of it is still its own input token."
    )
