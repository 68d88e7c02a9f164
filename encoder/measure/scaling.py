"""How the forward pass's cost grows with the number of tokens n: measured and from the table.

Per block, the attention's n^2 terms (the scores Q K^T and the weighted sum of V, the block
table's operations of kind "attention") cost 2 x 2 n^2 d FLOPs, and the feed-forward's two
matmuls (kind "feed-forward") 2 x 2 n d d_ff. So attention overtakes the feed-forward once
n >= d_ff (`crossover_tokens` solves it from the table, whatever the table counts). Measured
times grow more slowly than the FLOPs at small n, where fixed per-call costs dominate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import torch

from encoder.core import block
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.ledger import matmul_flops_by_kind
from encoder.inspect.measures import log_log_slope
from encoder.measure.timing import Budget, evaluating, median_ms, random_ids

FIRST_TOKENS = 16
MAX_TOKENS = 512  # longest length measured, whatever max_len allows


@dataclass(frozen=True)
class ScalingPoint:
    """One length: the median forward time of one sentence of `tokens` tokens, and its FLOPs."""

    tokens: int
    ms: float
    flops: int  # all of the forward pass's FLOPs
    attention_flops: int  # the n^2 terms: scores and weighted sum, all layers
    ffn_flops: int  # linear1 and linear2, all layers


@dataclass(frozen=True)
class Scaling:
    """Measured points, fitted exponents and the crossover length of one architecture."""

    points: list[ScalingPoint]
    crossover_tokens: int  # the first n at which attention's FLOPs reach the feed-forward's
    complete: bool  # False: the budget ran out before the longest length

    @property
    def exponents(self) -> dict[str, float]:
        """k in cost ~ n^k, fitted over all points: measured ms, attention and feed-forward FLOPs
        (exactly 2 and 1), and ms over the two longest lengths (closest to the FLOPs' trend)."""
        tokens = [p.tokens for p in self.points]
        return {
            "ms": log_log_slope(tokens, [p.ms for p in self.points]),
            "ms_longest": log_log_slope(tokens[-2:], [p.ms for p in self.points[-2:]]),
            "attention_flops": log_log_slope(tokens, [p.attention_flops for p in self.points]),
            "ffn_flops": log_log_slope(tokens, [p.ffn_flops for p in self.points]),
        }


def flops_at(cfg: EncoderConfig, batch: int, tokens: int) -> dict[str, int]:
    """{"flops", "attention_flops", "ffn_flops"} of a forward pass over [batch, tokens]."""
    ops = block.model_ops(cfg, batch, tokens)
    by_kind = matmul_flops_by_kind(ops)
    return {
        "flops": sum(op.total_flops for op in ops),
        "attention_flops": by_kind["attention"],
        "ffn_flops": by_kind["feed-forward"],
    }


def crossover_tokens(cfg: EncoderConfig) -> int:
    """The smallest n with attention FLOPs(n) >= feed-forward FLOPs(n), in closed form from the
    table: attention = a n^2 + b n and feed-forward = c n (read at n = 1 and 2), so n >= (c-b)/a.
    For this encoder it is d_ff."""
    one, two = flops_at(cfg, 1, 1), flops_at(cfg, 1, 2)
    a = (two["attention_flops"] - 2 * one["attention_flops"]) / 2
    b = one["attention_flops"] - a
    c = one["ffn_flops"]
    return max(1, math.ceil((c - b) / a))


def scaling_lengths(cfg: EncoderConfig, max_tokens: int = MAX_TOKENS) -> list[int]:
    """16, 32, 64, ... up to min(max_len, max_tokens); just that length when it is under 16."""
    top = min(cfg.max_len, max_tokens)
    lengths = [FIRST_TOKENS] if top >= FIRST_TOKENS else [top]
    while lengths[-1] * 2 <= top:
        lengths.append(lengths[-1] * 2)
    return lengths


@torch.no_grad()
def measure_scaling(
    model: TransformerEncoder,
    *,
    max_tokens: int = MAX_TOKENS,
    repeats: int = 3,
    warmup: int = 1,
    budget: Budget | None = None,
    seed: int = 0,
) -> Scaling:
    """Median forward time of one sentence of random tokens at each of `scaling_lengths`.

    A length whose predicted time (the last one's, scaled by n^2, times the calls) does not fit in
    what is left of the budget is not measured, nor any longer one (`complete` is then False).
    """
    cfg, device = model.cfg, model.device
    points: list[ScalingPoint] = []
    lengths = scaling_lengths(cfg, max_tokens)
    with evaluating(model):
        for tokens in lengths:
            if points and budget is not None:
                last = points[-1]
                predicted_s = last.ms / 1000 * (tokens / last.tokens) ** 2 * (repeats + warmup)
                if predicted_s > budget.left:
                    break
            ids = random_ids(cfg.vocab_size, 1, tokens, seed, device)  # [1, n]
            ms = median_ms(partial(model, ids), device, repeats=repeats, warmup=warmup)
            points.append(ScalingPoint(tokens, ms, **flops_at(cfg, 1, tokens)))
    return Scaling(points, crossover_tokens(cfg), complete=len(points) == len(lengths))
