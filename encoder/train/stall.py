"""Whether a run is learning, read from its curve: when it is not, what it shows and what to try,
in sentences (Saids) a page can say in its reader's language.

    stall = stalled(trainer.cfg, trainer.history)   # None while the run learns (or too early)
    stall.said, stall.tries                         # "The loss has been flat since step 20 ..."

A run has stalled when, after its warmup, its training loss (a running mean over SMOOTHING steps)
has come down by less than FLAT_FRACTION over the last FLAT_STEPS steps or more while its
training accuracy is below LEARNED_ACCURACY. "Flat since step N" names the first step from which
the loss stayed within FLAT_FRACTION of its lowest; the accuracy is set beside what guessing
scores on the run's task (encoder.tasks.tasks.guessing_accuracy), so "at chance" is true of the
task and not a fixed 1 / classes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from encoder.core.said import Said
from encoder.tasks.tasks import guessing_accuracy
from encoder.train.config import TrainConfig

SMOOTHING = 10  # steps in the running mean (one batch's loss is noisy)
FLAT_FRACTION = 0.1  # a loss that came down by less than this share of itself is flat
FLAT_STEPS = 50  # ... for at least this many steps after warmup
LEARNED_ACCURACY = 0.9  # a run above this training accuracy has learned its task (each toy task
# can be solved exactly), however flat its loss
CHANCE_MARGIN = 0.02
STEADY_LR = 1e-3  # above, a stall may be steps too large (try smaller, or a warmup); below, too
# small (try larger)  # an accuracy within this of what guessing scores is "at chance"


@dataclass(frozen=True)
class Stall:
    """A run that is not learning: since when, where its curve sits, and what to try."""

    since: int  # the step (1-based) since which the loss has stayed flat
    step: int  # the last step read
    loss: float  # the running mean of the training loss at `step`
    accuracy: float  # the running mean of the training accuracy at `step`
    chance: float  # what guessing without reading the input scores on the task
    said: Said  # what the curve shows
    tries: tuple[Said, ...]  # what to change, one sentence each

    @property
    def at_chance(self) -> bool:
        return abs(self.accuracy - self.chance) <= CHANCE_MARGIN

    def __str__(self) -> str:
        return " ".join((self.said, *self.tries))


def _running_mean(values: list[float]) -> list[float]:
    """The mean of each value and the SMOOTHING - 1 before it (from the SMOOTHING-th on)."""
    return [
        sum(values[end - SMOOTHING : end]) / SMOOTHING for end in range(SMOOTHING, len(values) + 1)
    ]


def tries(cfg: TrainConfig) -> tuple[Said, ...]:
    """What to change in `cfg` to make a stalled run learn: pre-norm for a post-norm model; for a
    learning rate above STEADY_LR, a warmup (where there is none) and a third of it; below, three
    times it."""
    said = []
    if not cfg.model.norm_first:
        said.append(
            Said(
                "Try pre-norm (the sidebar's Norm placement): the gradient then reaches every "
                "layer straight down the residual stream."
            )
        )
    if cfg.lr > STEADY_LR and cfg.warmup_steps == 0:
        said.append(Said("Try a warmup of {steps} steps.", steps=max(1, min(cfg.steps // 10, 100))))
    if cfg.lr > STEADY_LR:
        said.append(
            Said(
                "Try a smaller learning rate: {lr} instead of {now}.",
                lr=float(f"{cfg.lr / 3:.1g}"),
                now=cfg.lr,
            )
        )
    elif cfg.lr < STEADY_LR:
        said.append(
            Said(
                "Try a larger learning rate: {lr} instead of {now}.",
                lr=float(f"{cfg.lr * 3:.1g}"),
                now=cfg.lr,
            )
        )
    return tuple(said)


def stalled(cfg: TrainConfig, history: list[dict[str, float]]) -> Stall | None:
    """The Stall of a run of `cfg` whose steps so far are `history` (Trainer.history's rows), or
    None while it learns, once it has learned, or before FLAT_STEPS steps after its warmup."""
    losses = [row["loss"] for row in history]
    if len(losses) < SMOOTHING or not all(map(math.isfinite, losses)):
        return None
    loss = _running_mean(losses)  # loss[i] ends at step i + SMOOTHING
    accuracy = _running_mean([row["accuracy"] for row in history])[-1]
    lowest = min(loss)
    if accuracy >= LEARNED_ACCURACY or loss[-1] > lowest / (1 - FLAT_FRACTION):
        return None  # learned, or the loss went back up (not flat)
    first = next(i for i, value in enumerate(loss) if value * (1 - FLAT_FRACTION) <= lowest)
    since = max(first + SMOOTHING, cfg.warmup_steps + 1)  # the step its mean ends at
    step = len(losses)
    if step - since < FLAT_STEPS:
        return None
    chance = guessing_accuracy(cfg.task, cfg.seq_len, cfg.vocab)
    values = dict(
        since=since,
        loss=round(loss[-1], 2),
        accuracy=round(accuracy, 2),
        chance=round(chance, 2),
        task=cfg.task,
    )
    if abs(accuracy - chance) <= CHANCE_MARGIN:
        said = Said(
            "This run is not learning: the loss has been flat at {loss} since step {since}, and "
            "the accuracy, {accuracy}, is about what guessing without reading the input scores "
            "on the {task} task ({chance}).",
            **values,
        )
    else:
        said = Said(
            "This run is not learning: the loss has been flat at {loss} since step {since}, "
            "with the accuracy at {accuracy} (guessing without reading the input scores "
            "{chance} on the {task} task).",
            **values,
        )
    return Stall(since, step, loss[-1], accuracy, chance, said, tries(cfg))
