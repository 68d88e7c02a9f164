"""How long training an architecture would take on this machine, and the nearest one that fits.

No Streamlit here: plain functions of an EncoderConfig and the training settings.

The rule. One training step (a forward pass, a backward pass and an AdamW update on one CPU
thread, as the Training view trains) costs about

    num_layers x PER_LAYER_SECONDS         what every block costs however small it is: some
                                           hundred tiny kernel calls, gradient norms, the update
  + values / VALUES_PER_SECOND             memory-bound work on every activation value: the
                                           norms, softmax, activation function, residual adds
  + flops / FLOPS_PER_SECOND               the matrix products: 6 x parameters x tokens (2 per
                                           multiply-add, x3 for the backward pass), plus the
                                           attention scores and weighted sums (n^2 d per layer)

where tokens = batch x sequence length, and the values and FLOPs of a block are those of the
one description of the block (encoder.core.block). The constants were fitted to steps timed here
(2 shared CPU cores, 1 torch thread, 2 to 24 layers, d_model 32 to 512, 8 to 32 tokens): the
model is within a factor of about 1.5 of each measurement, and the same step measured twice
differed by up to 2x with the machine's load. So the page scales the model by its own
measurement once this browser session has trained (`measured_scale`), and quotes the result as
"about".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from encoder.core import block
from encoder.core.config import EncoderConfig
from encoder.core.options import head_counts
from encoder.core.said import Said, formatted
from encoder.train.config import TrainConfig

PER_LAYER_SECONDS = 0.015
VALUES_PER_SECOND = 500e6
FLOPS_PER_SECOND = 30e9
MAX_TRAINING_SECONDS = 120  # longer than this, the Training view does not start the job
SCALE_RANGE = (0.25, 4.0)  # a measured scale outside this is clipped (a stalled or odd run)
WEIGHT_KINDS = ("projection", "feed-forward")  # operations whose parameters are matmul weights


@dataclass(frozen=True)
class StepCost:
    """What one training step of `cfg` does, and the seconds the rule gives for it."""

    parameters: int  # weights (and biases) of the matrix products: the blocks and the head
    tokens: int  # batch x sequence length
    values: int  # activation values written and read, forward and backward
    flops: int
    seconds: float


def step_cost(cfg: TrainConfig, architecture: EncoderConfig | None = None) -> StepCost:
    """The rule of the module docstring for one step of `cfg`, or of `architecture` trained with
    cfg's task, sequence length and batch. The block's work is read from encoder.core.block."""
    sizes = cfg.model if architecture is None else architecture
    tokens = cfg.batch_size * cfg.seq_len
    ops = block.block_ops(sizes, 0, cfg.batch_size, cfg.seq_len)  # every block alike
    L, head = sizes.num_layers, sizes.d_model * cfg.num_classes  # the classifier's weights
    parameters = L * sum(op.params for op in ops if op.kind in WEIGHT_KINDS) + head
    # forward: the blocks' matmuls (projections, attention, feed-forward) and the head's; x3
    # for the backward pass
    flops = 3 * (L * sum(op.matmul_flops for op in ops) + 2 * tokens * head)
    values = 3 * L * sum(op.values for op in ops)  # every value a block's hooks hold, x3
    seconds = L * PER_LAYER_SECONDS + values / VALUES_PER_SECOND + flops / FLOPS_PER_SECOND
    return StepCost(parameters, tokens, values, flops, seconds)


def training_seconds(
    cfg: TrainConfig,
    runs: int = 1,
    scale: float = 1.0,
    architecture: EncoderConfig | None = None,
) -> float:
    """Seconds to train `runs` runs like `cfg` (the comparison trains 4), or with `architecture`
    instead of cfg's, times `scale`."""
    return runs * cfg.steps * step_cost(cfg, architecture).seconds * scale


def measured_scale(cfg: TrainConfig, steps: int, seconds: float) -> float | None:
    """How much slower (> 1) or faster than the rule a finished job's steps ran, clipped to
    SCALE_RANGE; None when nothing was trained."""
    if steps < 1 or seconds <= 0:
        return None
    ratio = seconds / (steps * step_cost(cfg).seconds)
    return min(max(ratio, SCALE_RANGE[0]), SCALE_RANGE[1])


def affordable_steps(cfg: TrainConfig, runs: int, scale: float, budget: float) -> int:
    """The most steps of `cfg` that fit in `budget` seconds (0 when not even one does)."""
    return int(budget / (runs * step_cost(cfg).seconds * scale))


def _shape(cfg: EncoderConfig) -> tuple[float, ...]:
    """An architecture's sizes on a log2 scale: width, feed-forward ratio, depth, heads."""
    return tuple(
        math.log2(value)
        for value in (cfg.d_model, cfg.d_ff / cfg.d_model, cfg.num_layers, cfg.num_heads)
    )


def _distance(a: EncoderConfig, b: EncoderConfig) -> float:
    """How far apart two architectures are: halving d_model, the d_ff / d_model ratio, the
    layers or the heads each count 1 (so a narrower model keeps its d_ff ratio when it can)."""
    return sum(abs(x - y) for x, y in zip(_shape(a), _shape(b), strict=True))


def nearest_fitting(
    architecture: EncoderConfig,
    cfg: TrainConfig,
    runs: int,
    scale: float,
    budget: float,
    d_models: list[int],
    d_ffs: list[int],
) -> EncoderConfig | None:
    """The architecture nearest to `architecture` (see _distance) that trains within `budget`
    with cfg's task, sequence length, batch and steps.

    It keeps the norm placement, activation, norm type and positions, and only shrinks: d_model
    and d_ff from the offered choices (`d_models`, `d_ffs`), fewer layers, and the heads as they
    are when they still divide d_model (else the nearest divisor). Ties go to the slower one,
    the one closest to what was asked. None when not even the smallest fits.
    """
    candidates = []
    for d_model in {architecture.d_model, *d_models}:
        if d_model > architecture.d_model:
            continue
        heads = min(head_counts(d_model), key=lambda h: (abs(h - architecture.num_heads), -h))
        for d_ff in {architecture.d_ff, *d_ffs}:
            if d_ff > architecture.d_ff:
                continue
            try:
                one, two = (
                    replace(architecture, d_model=d_model, num_heads=heads, d_ff=d_ff, num_layers=n)
                    for n in (1, 2)
                )
            except ValueError:  # e.g. an odd d_model with sinusoidal positions
                continue
            # The rule is linear in the layers: the most that fit come straight from 1 and 2.
            first = training_seconds(cfg, runs, scale, one)
            per_layer = training_seconds(cfg, runs, scale, two) - first
            if first > budget:
                continue
            layers = min(architecture.num_layers, 1 + int((budget - first) / per_layer))
            shrunk = replace(one, num_layers=layers)
            seconds = training_seconds(cfg, runs, scale, shrunk)
            if seconds > budget:  # only by a rounding error
                continue
            candidates.append((_distance(shrunk, architecture), -seconds, shrunk))
    if not candidates:
        return None
    return min(candidates, key=lambda c: c[:2])[2]


def duration_text(seconds: float) -> Said:
    """'about 40 s', 'about 3 min', 'about 2.5 h'."""
    if seconds < 90:
        return seconds_text(seconds)
    if seconds < 90 * 60:
        return Said("about {minutes} min", minutes=round(seconds / 60))
    return Said("about {hours} h", hours=formatted(seconds / 3600, ".1f"))


def seconds_text(seconds: float) -> Said:
    """'about 40 s' (at least 1), however long."""
    return Said("about {seconds} s", seconds=max(1, round(seconds)))
