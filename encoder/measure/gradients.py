"""Gradient norms at initialisation, against Xiong et al. 2020 ("On Layer Normalization in the
Transformer Architecture").

The paper's claim, for the gradient of the last layer's second feed-forward weight W2 at
initialisation: post-norm's is large and does not depend on the depth L; pre-norm's is about the
same in every layer and shrinks like 1/sqrt(L). Its analysis takes a loss whose gradient with
respect to the final, normalised output is of order one whatever the depth. LOSS is such a loss
without a task head (whose own initialisation would enter): the mean squared error between the
encoder's output (post-norm: the last block's norm; pre-norm: the final norm; both unit variance
per token) and standard-normal targets.

Every number is a mean over `seeds` weight initialisations (cfg.seed, cfg.seed + 1, ...) and
`batches` random batches (the same batches for every model), in eval mode (no dropout).

Why pre-norm's slope here is shallower than -0.5 (checked once, 6 x 512, L = 2..12): the paper
assumes Xavier-initialised weights, so that each sublayer adds about as much to the residual
stream as the embeddings hold. Our blocks initialise like nn.TransformerEncoderLayer (in_proj
Xavier, the other linear layers PyTorch's default, variance 1/(3 fan_in)), so each block adds
little and the stream grows slowly with L: slope about -0.14. With Xavier on every linear weight
the same measure gave about -0.37 (the embeddings' own variance still flattens it).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.core.options import placement_of
from encoder.inspect.limits import RunTooLarge, check_run
from encoder.inspect.measures import log_log_slope
from encoder.measure.timing import Budget, random_ids

LOSS = (
    "mean squared error between the encoder's output and standard-normal targets "
    "(F.mse_loss, mean over batch, tokens and features), random token ids"
)
# name in the rows -> the parameter of an EncoderBlock whose gradient norm it is
WEIGHTS = {
    "w1": "linear1.weight",
    "w2": "linear2.weight",
    "in_proj": "self_attn.in_proj_weight",
    "out_proj": "self_attn.out_proj.weight",
}
DEPTHS = (2, 4, 6, 8, 12)
PAPER_SLOPE = {"pre": -0.5, "post": 0.0}  # log |grad W2 of the last layer| against log L
SLOPE_TOLERANCE = 0.15  # a fitted slope this close to the paper's agrees with it
FLAT_FACTOR = 2.0  # per-layer norms within this factor of each other count as "about flat"


@dataclass(frozen=True)
class GradientSettings:
    """How many models and batches each mean takes, and their size."""

    seeds: int = 3
    batches: int = 2
    batch_size: int = 2
    tokens: int = 16
    depths: tuple[int, ...] = DEPTHS
    data_seed: int = 0


def probe_batches(
    cfg: EncoderConfig, settings: GradientSettings, device: torch.device | str
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The (input_ids [B, T], targets [B, T, d]) pairs every model is measured on."""
    tokens = min(settings.tokens, cfg.max_len)
    pairs = []
    for index in range(settings.batches):
        seed = settings.data_seed + index
        ids = random_ids(cfg.vocab_size, settings.batch_size, tokens, seed, device)
        generator = torch.Generator().manual_seed(seed)
        shape = (settings.batch_size, tokens, cfg.d_model)
        pairs.append((ids, torch.randn(shape, generator=generator).to(device)))
    return pairs


def weight_grad_norms(
    model: TransformerEncoder, input_ids: torch.Tensor, targets: torch.Tensor
) -> list[dict[str, float]]:
    """One backward pass of LOSS: per layer, {"layer", "w1", "w2", "in_proj", "out_proj"}."""
    model.zero_grad(set_to_none=True)
    F.mse_loss(model(input_ids), targets).backward()
    rows = []
    for index, layer in enumerate(model.layers):
        parameters = dict(layer.named_parameters())
        norms = {name: parameters[path].grad.norm().item() for name, path in WEIGHTS.items()}
        rows.append({"layer": index, **norms})
    return rows


def _mean_rows(runs: list[list[dict[str, float]]]) -> list[dict[str, float]]:
    """Per layer, the mean of each weight's norm over the runs."""
    return [
        {"layer": layer, **{w: statistics.fmean(run[layer][w] for run in runs) for w in WEIGHTS}}
        for layer in range(len(runs[0]))
    ]


def grad_norms_at_init(
    cfg: EncoderConfig,
    settings: GradientSettings = GradientSettings(),
    *,
    device: torch.device | str = "cpu",
    budget: Budget | None = None,
) -> list[dict[str, float]]:
    """Per layer, the mean gradient norm of each of WEIGHTS over seeds x batches (LOSS).

    Stops adding seeds once the budget is spent (at least one seed is measured)."""
    check_run(cfg, settings.batch_size, settings.tokens)
    batches = probe_batches(cfg, settings, device)
    runs = []
    with torch.enable_grad():
        for offset in range(settings.seeds):
            model = TransformerEncoder(replace(cfg, seed=cfg.seed + offset)).to(device).eval()
            model.embed.requires_grad_(False)  # only the blocks' gradients are read
            runs += [weight_grad_norms(model, ids, targets) for ids, targets in batches]
            if budget is not None and budget.expired:
                break
    return _mean_rows(runs)


def by_placement(cfg: EncoderConfig) -> dict[str, EncoderConfig]:
    """{"pre": cfg as pre-norm, "post": cfg as post-norm}."""
    return {placement_of(first): replace(cfg, norm_first=first) for first in (True, False)}


def last_w2_by_depth(
    cfg: EncoderConfig,
    settings: GradientSettings = GradientSettings(),
    *,
    device: torch.device | str = "cpu",
    budget: Budget | None = None,
) -> list[dict[str, float]]:
    """For each depth L in settings.depths: {"layers": L, "pre": ..., "post": ...}, the last
    layer's W2 gradient norm of cfg's architecture with L layers (mean over seeds x batches).

    Depths run in order, each with every seed and batch. A depth whose predicted time (the last
    depth's, scaled by the number of layers) does not fit in what is left of the budget does not
    start, nor does one over the bounds of encoder.inspect.limits."""
    rows: list[dict[str, float]] = []
    seconds_per_layer = 0.0
    for depth in sorted(settings.depths):
        if rows and budget is not None and seconds_per_layer * depth > budget.left:
            break
        started = time.perf_counter()
        row: dict[str, float] = {"layers": depth}
        try:
            for placement, placed in by_placement(replace(cfg, num_layers=depth)).items():
                row[placement] = grad_norms_at_init(placed, settings, device=device)[-1]["w2"]
        except RunTooLarge:
            break
        rows.append(row)
        seconds_per_layer = (time.perf_counter() - started) / depth
    return rows


@dataclass(frozen=True)
class Finding:
    """One of the paper's claims, what this model measured, and whether the two agree."""

    claim: str
    measured: str
    agrees: bool

    def sentence(self) -> str:
        return f"{self.measured} Paper: {self.claim} {'Agrees.' if self.agrees else 'Differs.'}"


def _depth_slope_finding(by_depth: list[dict[str, float]], placement: str) -> Finding:
    depths = [row["layers"] for row in by_depth]
    slope = log_log_slope(depths, [row[placement] for row in by_depth])
    paper = PAPER_SLOPE[placement]
    claim = {
        "pre": "pre-norm's last-layer W2 gradient shrinks like 1/sqrt(L) (slope -0.5).",
        "post": "post-norm's last-layer W2 gradient does not depend on L (slope 0).",
    }[placement]
    first, last = by_depth[0], by_depth[-1]
    measured = (
        f"{placement.capitalize()}-norm: the last layer's W2 gradient goes from "
        f"{first[placement]:.3g} at L={first['layers']} to {last[placement]:.3g} at "
        f"L={last['layers']}, a fitted slope of log norm against log L of {slope:+.2f}."
    )
    return Finding(claim, measured, abs(slope - paper) <= SLOPE_TOLERANCE)


def _per_layer_findings(per_layer: dict[str, list[dict[str, float]]]) -> list[Finding]:
    pre = [row["w2"] for row in per_layer["pre"]]
    post = [row["w2"] for row in per_layer["post"]]
    spread = max(pre) / min(pre)
    largest = max(range(len(post)), key=post.__getitem__)
    return [
        Finding(
            "pre-norm's gradients are about the same in every layer.",
            f"Pre-norm: the W2 gradients of the {len(pre)} layers span a factor of "
            f"{spread:.2f} (from {min(pre):.3g} to {max(pre):.3g}).",
            spread <= FLAT_FACTOR,
        ),
        Finding(
            "post-norm's gradients are largest near the output.",
            f"Post-norm: the W2 gradient is largest in layer {largest} of 0..{len(post) - 1}; "
            f"the last layer's is {post[-1] / post[0]:.2f}x the first layer's.",
            largest == len(post) - 1,
        ),
        Finding(
            "post-norm's last-layer gradient is larger than pre-norm's.",
            f"At L={len(post)}, post-norm's last-layer W2 gradient is {post[-1] / pre[-1]:.2f}x "
            f"pre-norm's (about sqrt(L) = {math.sqrt(len(post)):.2f} if both claims hold).",
            post[-1] > pre[-1],
        ),
    ]


def findings(
    per_layer: dict[str, list[dict[str, float]]], by_depth: list[dict[str, float]]
) -> list[Finding]:
    """Where this model agrees with the paper and where not, from the measured numbers.

    per_layer: {"pre": rows, "post": rows} of grad_norms_at_init at one depth; by_depth: the rows
    of last_w2_by_depth (slopes need two depths or more)."""
    found = _per_layer_findings(per_layer) if len(per_layer["pre"]) > 1 else []
    if len(by_depth) > 1:
        found += [_depth_slope_finding(by_depth, placement) for placement in ("pre", "post")]
    return found
