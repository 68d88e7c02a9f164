"""Training jobs a page drives a chunk at a time: one run, or pre- vs post-norm side by side.

    job = comparison_job(TrainConfig(task="sort", num_layers=6))   # or single_job(cfg)
    while job.running:
        job.advance(seconds=0.5)        # redraw the curves between chunks; job.stop() any time
    job.results                         # {run name: TrainResult}, once finished or stopped

Every run of a job trains in lockstep (one step each, round robin), so their curves grow together.
The comparison's runs share the seed, hence the same initial weights (where the architectures
agree) and the same batches: they differ only in norm placement and warmup.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

from encoder.core.options import NORM_PLACEMENTS, norm_first_of, placement_of
from encoder.train.trainer import TrainConfig, Trainer, TrainResult, gradient_norms_at_init

logger = logging.getLogger(__name__)


def run_name(cfg: TrainConfig) -> str:
    """A run's name in charts and tables: "pre-norm" or "post-norm"."""
    return f"{placement_of(cfg.norm_first)}-norm"


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
        plain = replace(cfg, norm_first=norm_first_of(placement), warmup_steps=0)
        runs[run_name(plain)] = plain
        runs[f"{run_name(plain)} + warmup {warmup}"] = replace(plain, warmup_steps=warmup)
    return runs


@dataclass
class TrainingJob:
    """One run or several, trained in lockstep, a chunk at a time, stoppable between steps."""

    trainers: dict[str, Trainer]  # run name -> its trainer
    dashed: tuple[str, ...] = ()  # run names to draw dashed (the comparison's warmup variants)
    init_grad_norms: dict[str, list[float]] = field(default_factory=dict)  # run name -> per block
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
