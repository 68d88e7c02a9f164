"""What a block costs and how gradients flow, measured live: the four measures in one report.

    report = cost_report(model, input_ids, attention_mask, CostSettings(budget_s=30))
    report.to_dict()   # what `python -m encoder profile --json` prints

- time per operation (encoder.measure.op_times), for this batch;
- scaling with length (encoder.measure.scaling), one sentence of random tokens per length;
- training memory (encoder.measure.train_memory), for this batch, pre- and post-norm: the model
  itself for its own placement, random weights of the same architecture for the other (saved
  bytes depend on shapes only);
- gradient norms at initialisation (encoder.measure.gradients), pre- and post-norm at the
  model's depth, and the last layer's W2 against depth, for its architecture with random weights.

The whole is bounded by `budget_s`: each measure gets a share of what is left when it starts
(BUDGET_SHARES) and measures less (fewer repeats, lengths, seeds or depths) rather than run over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial

import torch

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.core.options import placement_of
from encoder.core.said import N_
from encoder.measure import gradients
from encoder.measure.op_times import OpProfile, profile_ops
from encoder.measure.scaling import MAX_TOKENS, Scaling, measure_scaling
from encoder.measure.timing import CLOCK_NAMES, Budget, clock_kind
from encoder.measure.train_memory import TrainMemory, measure_train_memory

# each measure, in the order they run, and the fraction of the budget left that it may take
BUDGET_SHARES = {
    "ops": 0.1,
    "scaling": 0.4,
    "train_memory": 0.25,
    "grad_norms": 0.3,
    "last_w2_by_depth": 1.0,
}


@dataclass(frozen=True)
class CostSettings:
    """Repeats, the longest length, the time budget and the gradient probe's sizes."""

    repeats: int = 10  # forward passes per operation timing (scaling and memory take fewer)
    warmup: int = 2
    max_tokens: int = MAX_TOKENS
    budget_s: float = 120.0
    gradients: gradients.GradientSettings = field(default_factory=gradients.GradientSettings)


@dataclass(frozen=True)
class CostReport:
    device: str
    batch: tuple[int, int]  # [B, T] of the batch the operations and memory were measured on
    ops: OpProfile
    scaling: Scaling
    train_memory: dict[str, TrainMemory]  # "pre" / "post"
    grad_norms: dict[str, list[dict[str, float]]]  # "pre" / "post" -> per-layer rows
    last_w2_by_depth: list[dict[str, float]]
    placement: str  # the model's own: "pre" or "post"
    seconds: float
    seconds_by_measure: dict[str, float]  # wall-clock seconds each measure took

    @property
    def findings(self) -> list[gradients.Finding]:
        return gradients.findings(self.grad_norms, self.last_w2_by_depth)

    def to_dict(self) -> dict:
        """Plain JSON: the model's own numbers under the names the command line promises
        (`total_ms`, `ops`, `scaling`, `train_memory`, `grad_norms`, `loss`), then both
        placements, the fitted exponents, the crossover and the findings."""
        ops = self.ops.to_dict()
        slowest = self.ops.slowest()
        by_operation = self.ops.by_operation()
        return {
            "device": self.device,
            "clock": CLOCK_NAMES[clock_kind(self.device)],
            "batch": list(self.batch),
            "norm": self.placement,
            "total_ms": ops.pop("total_ms"),
            "ops": ops.pop("ops"),
            **ops,
            "slowest": {
                "name": slowest.name,
                "ms": slowest.ms,
                "share": slowest.ms / self.ops.ops_ms,
            },
            "slowest_operation": self.ops.slowest_operation(),
            "by_operation": by_operation,
            "scaling": [asdict(point) for point in self.scaling.points],
            "scaling_exponents": self.scaling.exponents,
            "scaling_complete": self.scaling.complete,
            "crossover_tokens": self.scaling.crossover_tokens,
            "train_memory": self.train_memory[self.placement].to_dict(),
            "train_memory_by_norm": {p: m.to_dict() for p, m in self.train_memory.items()},
            "grad_norms": self.grad_norms[self.placement],
            "grad_norms_by_norm": self.grad_norms,
            "last_w2_by_depth": self.last_w2_by_depth,
            "loss": gradients.LOSS,
            "findings": [asdict(finding) for finding in self.findings],
            "seconds": self.seconds,
            "seconds_by_measure": self.seconds_by_measure,
        }


def _train_memory_by_placement(
    model: TransformerEncoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    budget: Budget,
) -> dict[str, TrainMemory]:
    own = placement_of(model.cfg.norm_first)
    memory = {}
    for index, (placement, cfg) in enumerate(gradients.by_placement(model.cfg).items()):
        measured = model if placement == own else TransformerEncoder(cfg).to(model.device)
        memory[placement] = measure_train_memory(
            measured, input_ids, attention_mask, budget=budget.share(1 / (2 - index))
        )
    return memory


def _grad_norms_by_placement(
    cfg: EncoderConfig,
    settings: gradients.GradientSettings,
    device: torch.device,
    budget: Budget,
) -> dict[str, list[dict[str, float]]]:
    return {
        placement: gradients.grad_norms_at_init(
            placed, settings, device=device, budget=budget.share(1 / (2 - index))
        )
        for index, (placement, placed) in enumerate(gradients.by_placement(cfg).items())
    }


MEASURE_NAMES = {  # each measure as a sentence can name it while it runs (marked, told there)
    "ops": N_("the time of every operation"),
    "scaling": N_("the time against length"),
    "train_memory": N_("the memory kept for training"),
    "grad_norms": N_("the gradients at initialisation"),
    "last_w2_by_depth": N_("the gradients against depth"),
}


def cost_report(
    model: TransformerEncoder,
    input_ids: torch.Tensor,  # [B, T] long, on the model's device
    attention_mask: torch.Tensor | None = None,  # [B, T]
    settings: CostSettings = CostSettings(),
    progress: Callable[[str, float], None] | None = None,
    stop: threading.Event | None = None,
) -> CostReport:
    """Measure the four costs of the module docstring within settings.budget_s (about);
    `progress(what, done)` hears of each measure as it starts (done: 0..1 of them); once `stop`
    is set, each measure ends within a step (the report then holds what was measured)."""
    started = time.perf_counter()
    budget = Budget(settings.budget_s, stop=stop)
    cfg, device = model.cfg, model.device
    measures = {  # each takes its share of the budget as `budget=`
        "ops": partial(profile_ops, model, input_ids, attention_mask,
                       repeats=settings.repeats, warmup=settings.warmup),
        "scaling": partial(measure_scaling, model, max_tokens=settings.max_tokens),
        "train_memory": partial(_train_memory_by_placement, model, input_ids, attention_mask),
        "grad_norms": partial(_grad_norms_by_placement, cfg, settings.gradients, device),
        "last_w2_by_depth": partial(gradients.last_w2_by_depth, cfg, settings.gradients,
                                    device=device),
    }  # fmt: skip
    results, seconds = {}, {}
    for index, (name, measure) in enumerate(measures.items()):
        if progress is not None:
            progress(MEASURE_NAMES[name], index / len(measures))
        began = time.perf_counter()
        results[name] = measure(budget=budget.share(BUDGET_SHARES[name]))
        seconds[name] = time.perf_counter() - began
    return CostReport(
        device=str(device),
        batch=tuple(input_ids.shape),
        **results,
        placement=placement_of(cfg.norm_first),
        seconds=time.perf_counter() - started,
        seconds_by_measure=seconds,
    )
