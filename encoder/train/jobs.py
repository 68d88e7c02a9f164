"""Training jobs a page drives a chunk at a time: one run, pre- vs post-norm side by side,
dropout in each place side by side, or BERT's architecture racing ModernBERT's at one size.

    job = comparison_job(TrainConfig(task="sort").with_model(num_layers=6))   # or single_job(cfg),
                                  # placement_job(cfg, rate=0.3) or race_job(cfg)
    while job.running:
        job.advance(seconds=0.5)        # redraw the curves between chunks; job.stop() any time
    job.results                         # {run name: TrainResult}, once finished or stopped

Every run of a job trains in lockstep (one step each, round robin), so their curves grow together.
The comparison's runs share the seed, hence the same initial weights (where the architectures
agree) and the same batches: they differ only in norm placement and warmup; the placement job's
runs differ only in where dropout sits; the race's runs share the task, seed, batches, d_model,
heads and layers, and differ in every choice ModernBERT made differently from BERT (race_configs).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from encoder.core import block
from encoder.core.config import DROPOUT_PLACES
from encoder.core.options import NORM_PLACEMENTS, norm_first_of, placement_of
from encoder.core.said import Said
from encoder.train.config import TrainConfig
from encoder.train.findings import placement_findings, race_findings
from encoder.train.trainer import Trainer, TrainResult, gradient_norms_at_init

logger = logging.getLogger(__name__)


def run_name(cfg: TrainConfig) -> str:
    """A run's name in charts and tables: "pre-norm" or "post-norm"."""
    return f"{placement_of(cfg.model.norm_first)}-norm"


def comparison_warmup(cfg: TrainConfig) -> int:
    """The warmup of the comparison's warmup runs: cfg's own, or a quarter of the steps."""
    return cfg.warmup_steps or max(1, cfg.steps // 4)


def comparison_configs(cfg: TrainConfig) -> dict[str, TrainConfig]:
    """Pre- and post-norm, each without and with warmup; everything else as in `cfg`.

    Names, in order: "pre-norm", "pre-norm + warmup W", "post-norm", "post-norm + warmup W".
    """
    warmup = comparison_warmup(cfg)
    runs: dict[str, TrainConfig] = {}
    for placement in NORM_PLACEMENTS:
        plain = replace(cfg, warmup_steps=0).with_model(norm_first=norm_first_of(placement))
        runs[run_name(plain)] = plain
        runs[f"{run_name(plain)} + warmup {warmup}"] = replace(plain, warmup_steps=warmup)
    return runs


# The dropout placement job's runs: its name -> the places with dropout (None: torch's places,
# the embeddings' output included, through EncoderConfig.dropout).
DROPOUT_PLACEMENTS: dict[str, tuple[str, ...] | None] = {
    "no dropout": (),
    "attention weights": ("attention",),
    "sublayer outputs": ("residual",),
    "feed-forward hidden": ("ffn",),
    "all (torch's places)": None,
}
DEFAULT_DROPOUT_RATE = 0.3


def placement_configs(cfg: TrainConfig, rate: float) -> dict[str, TrainConfig]:
    """Dropout at `rate` in each placement of DROPOUT_PLACEMENTS (cfg's own dropout replaced);
    everything else as in `cfg`."""
    runs = {}
    for name, places in DROPOUT_PLACEMENTS.items():
        own = {
            f"{place}_dropout": rate if place in (places or ()) else 0.0 for place in DROPOUT_PLACES
        }
        if places is None:  # every place takes `dropout`'s rate
            own = dict.fromkeys(own)
        runs[name] = cfg.with_model(dropout=rate if places is None else 0.0, **own)
    return runs


# The race (issue 34): BERT's choices against ModernBERT's (Warner et al., 2024), at the size of
# the config it starts from. ModernBERT's local window is 128 tokens at sequences of 8192; on a toy
# task's sequences of 8 to 32 symbols a window of 8 (4 positions either side) is what can mask.
BERT_STYLE = dict(
    norm_first=False,
    positional="learned",
    activation="gelu",
    linear_bias=True,
    norm_bias=True,
    attention_window=0,
    global_every=0,
)
RACE_WINDOW = 8
MODERNBERT_STYLE = dict(
    norm_first=True,
    positional="rope",
    activation="geglu",
    linear_bias=False,
    norm_bias=False,
    attention_window=RACE_WINDOW,
    global_every=3,
)
RACE_NAMES = ("BERT-style", "ModernBERT-style")


def encoder_parameters(cfg: TrainConfig) -> int:
    """The parameters of cfg's encoder (the classifier head, the same in every run, left out)."""
    return block.parameters(cfg.model)


def matched_d_ff(cfg: TrainConfig, target: int) -> int:
    """The d_ff that gives cfg's encoder the parameter count nearest `target` (the count grows
    by the same amount with each unit of d_ff: GeGLU's linear1 is 2 x d_ff wide, linear2 d_ff)."""
    one, two = (encoder_parameters(cfg.with_model(d_ff=d_ff)) for d_ff in (1, 2))
    return max(1, 1 + round((target - one) / (two - one)))


def race_configs(cfg: TrainConfig) -> dict[str, TrainConfig]:
    """BERT-style (post-norm, learned positions, GELU, biases, global attention) with cfg's
    d_ff, and ModernBERT-style (pre-norm, RoPE, GeGLU, no biases in linear layers or norms, a
    local window with every third layer global) with the d_ff that makes its parameter count
    closest to BERT-style's; both with cfg's task, seed, d_model, heads and layers."""
    bert = cfg.with_model(**BERT_STYLE)
    modern = cfg.with_model(**MODERNBERT_STYLE)
    modern = modern.with_model(d_ff=matched_d_ff(modern, encoder_parameters(bert)))
    return dict(zip(RACE_NAMES, (bert, modern), strict=True))


@dataclass
class TrainingJob:
    """One run or several, trained in lockstep, a chunk at a time, stoppable between steps."""

    trainers: dict[str, Trainer]  # run name -> its trainer
    dashed: tuple[str, ...] = ()  # run names to draw dashed (the comparison's warmup variants)
    dropout_rate: float | None = None  # the placement job's rate (None: another job)
    init_grad_norms: dict[str, list[float]] = field(default_factory=dict)  # run name -> per block
    # what the finished runs showed, in a sentence (the placement job's and the race's)
    findings: Callable[[dict[str, TrainResult]], Said] | None = None
    results: dict[str, TrainResult] = field(default_factory=dict)  # filled once every run is done

    def __post_init__(self) -> None:
        first = next(iter(self.trainers.values())).cfg
        logger.info(
            "training started: %s, %s task, %d steps, on %s",
            ", ".join(self.trainers), first.task, self.total_steps, first.device,
        )  # fmt: skip

    @property
    def running(self) -> bool:
        return any(not t.done for t in self.trainers.values())

    @property
    def total_steps(self) -> int:
        """The planned steps of the longest run."""
        return max(t.cfg.steps for t in self.trainers.values())

    @property
    def steps_done(self) -> int:
        """Steps taken by all runs together."""
        return sum(t.step for t in self.trainers.values())

    @property
    def seconds(self) -> float:
        """Time spent in training steps, all runs together."""
        return sum(t.seconds for t in self.trainers.values())

    def advance(self, seconds: float) -> None:
        """Give every unfinished run one step, round robin, until about `seconds` have passed.

        At least one round is trained while the job runs, however small `seconds` is.
        """
        started = time.perf_counter()
        while self.running:
            for trainer in self.trainers.values():
                if not trainer.done:
                    trainer.train_step()
            if time.perf_counter() - started >= seconds:
                break
        self._collect_results()

    def stop(self) -> None:
        """End every run now; `results` then holds what was trained so far."""
        if self.running:
            logger.info("training stopped at step %d of %d", self.steps_done, self.total_steps)
        for trainer in self.trainers.values():
            trainer.stop_requested = True
        self._collect_results()

    def _collect_results(self) -> None:
        """Once every run is done: the results, and the optimisers' state and the gradients go
        (a finished job keeps its models and histories only)."""
        if not self.running and not self.results:
            self.results = {name: t.result() for name, t in self.trainers.items()}
            logger.info(
                "training done in %.1f s: %s", self.seconds,
                "; ".join(f"{name}: {r.held_out_accuracy:.3f} held-out accuracy after "
                          f"{len(r.history)} steps" for name, r in self.results.items()),
            )  # fmt: skip
            for trainer in self.trainers.values():
                trainer.optimizer.state.clear()
                trainer.model.zero_grad(set_to_none=True)


def single_job(cfg: TrainConfig) -> TrainingJob:
    """A job of one run, named by its norm placement."""
    return TrainingJob({run_name(cfg): Trainer(cfg)})


def comparison_job(cfg: TrainConfig) -> TrainingJob:
    """The four comparison runs (see comparison_configs), with each placement's gradient norms
    per block at initialisation, on the first training batch."""
    runs = comparison_configs(cfg)
    plain = [name for name, run in runs.items() if run.warmup_steps == 0]
    return TrainingJob(
        {name: Trainer(run) for name, run in runs.items()},
        dashed=tuple(name for name in runs if name not in plain),
        init_grad_norms={name: gradient_norms_at_init(runs[name]) for name in plain},
    )


def placement_job(cfg: TrainConfig, rate: float = DEFAULT_DROPOUT_RATE) -> TrainingJob:
    """The runs of placement_configs: dropout at `rate` in each place, side by side."""
    runs = placement_configs(cfg, rate)
    return TrainingJob(
        {name: Trainer(run) for name, run in runs.items()},
        dropout_rate=rate,
        findings=placement_findings,
    )


def race_job(cfg: TrainConfig) -> TrainingJob:
    """The race's two runs (race_configs), with each one's gradient norms per block at
    initialisation, on the first training batch."""
    runs = race_configs(cfg)
    return TrainingJob(
        {name: Trainer(run) for name, run in runs.items()},
        init_grad_norms={name: gradient_norms_at_init(run) for name, run in runs.items()},
        findings=race_findings,
    )
