"""The few measures several tables share: entropy of a distribution, cosine similarity, the
exponent of a power law."""

from __future__ import annotations

import math

import torch


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """-sum p log p over the last dimension, in nats (0 log 0 = 0): [..., n] -> [...]."""
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), 0.0)
    return -plogp.sum(dim=-1)


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of a and b over the last dimension (1 where both vectors are zero)."""
    dot = (a * b).sum(dim=-1)
    norms = a.norm(dim=-1) * b.norm(dim=-1)
    return torch.where(norms > 0, dot / norms.clamp_min(1e-300), torch.ones_like(dot))


def pairwise_cosine(states: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every pair of rows: [..., n, d] -> [..., n, n] (0 for a zero row)."""
    unit = states / states.norm(dim=-1, keepdim=True).clamp_min(1e-12)
    return unit @ unit.transpose(-1, -2)


def log_log_slope(xs: list[float], ys: list[float]) -> float:
    """The exponent k of a power law y ~ x^k: the least-squares slope of log y against log x
    (nan with fewer than two distinct x)."""
    if len(set(xs)) < 2:
        return math.nan
    log_x = torch.tensor(xs, dtype=torch.float64).log()
    log_y = torch.tensor(ys, dtype=torch.float64).log()
    dx = log_x - log_x.mean()
    return float((dx * (log_y - log_y.mean())).sum() / (dx * dx).sum())
