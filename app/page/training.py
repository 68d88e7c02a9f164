"""The Training view's lab, below the view and the page's session side (app.training_session),
which both build on it: this browser session's training (TrainingLab), what the view changes
outside itself (TrainingActions, callbacks the session side makes), the kinds of job and their
buttons' names, and the controls' values a training preset sets."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from app.i18n import _
from app.settings import architecture_values
from encoder.measure.train_memory import TrainMemory
from encoder.tasks.tasks import get_task
from encoder.train.config import TrainConfig
from encoder.train.duration import measured_scale
from encoder.train.jobs import DROPOUT_PLACEMENTS, TrainingJob, comparison_configs, race_configs
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainResult

COMPARISON_RUNS = len(comparison_configs(TrainConfig()))
PLACEMENT_RUNS = len(DROPOUT_PLACEMENTS)
RACE_RUNS = len(race_configs(TrainConfig()))
# runs per kind of job -> its button's name (each kind has its own number of runs)
JOB_NAMES = {
    1: "Train",
    RACE_RUNS: "BERT vs ModernBERT",
    COMPARISON_RUNS: "Pre vs post",
    PLACEMENT_RUNS: "Dropout placement",
}
JOB_RUNS = tuple(sorted(JOB_NAMES))


def job_name(runs: int) -> str:
    """The button's name of the job of `runs` runs (JOB_NAMES's), in the run's language."""
    return {
        1: _("Train"),
        RACE_RUNS: _("BERT vs ModernBERT"),
        COMPARISON_RUNS: _("Pre vs post"),
        PLACEMENT_RUNS: _("Dropout placement"),
    }[runs]


# Training widget key -> the TrainConfig field it sets.
TRAINING_FIELDS = {
    "train_task": "task",
    "train_seq_len": "seq_len",
    "train_steps": "steps",
    "train_lr": "lr",
    "train_warmup": "warmup_steps",
    "train_batch": "batch_size",
    "train_seed": "seed",
    "train_checkpoint": "checkpoint_blocks",
}


def training_link_values(preset: str) -> dict[str, object]:
    """The URL values that open the Training view on a preset: random weights with the preset's
    architecture in the sidebar (a link's, a button's)."""
    model = TRAINING_PRESETS[preset].model
    return {"source": "random", **architecture_values(model), "train_preset": preset}


def preset_values(name: str | None) -> dict[str, object]:
    """The Training view's widget values a training preset sets."""
    if name is None:
        return {}
    cfg = TRAINING_PRESETS[name]
    return {key: getattr(cfg, field) for key, field in TRAINING_FIELDS.items()}


MASKED_PRESET = "masked words"  # what choosing a word task fills in (TRAINING_PRESETS's)


def task_values(task: str) -> dict[str, object]:
    """What choosing `task` fills in beside it: for a word task, the masked preset's training
    controls (whole corpus sentences, its batch, steps and learning rate; not the sidebar's
    architecture); nothing for a symbol task."""
    if not get_task(task).reads_words:
        return {}
    values = preset_values(MASKED_PRESET)
    return {key: value for key, value in values.items() if key != "train_task"}


# results -> ({run name: session model id} of the models kept, why the others were not, or "")
KeepModels = Callable[[dict[str, TrainResult]], tuple[dict[str, str], str]]

log = logging.getLogger(__name__)


@dataclass
class TrainingLab:
    """This browser session's training: the job, the model ids its finished runs became, and how
    fast this machine trained for it (the measured step time over the rule's)."""

    job: TrainingJob | None = None
    models: dict[str, str] | None = None  # {run name: session model id} of the finished job
    scale: float | None = None
    note: str = ""  # why the last training did not start, or a run's model was not kept

    def start(self, make_job: Callable[[TrainConfig], TrainingJob], cfg: TrainConfig) -> None:
        self.job, self.models, self.note = make_job(cfg), None, ""
        log.info("training started: %s, %d steps", cfg.task, cfg.steps)

    def refuse(self, why: str) -> None:
        """A training that could not start (its memory did not fit)."""
        self.note = why
        log.warning("training refused: %s", why)

    def drop(self) -> None:
        """Let the job go (its session has ended)."""
        self.job, self.models = None, None

    def stop(self, keep_models: KeepModels) -> None:
        if self.job is not None and self.job.running:
            self.job.stop()
            log.info("training stopped after %d steps", self.job.steps_done)
            self.finish(keep_models)

    def finish(self, keep_models: KeepModels) -> None:
        """Each finished run as a model source, once per job, and how fast this machine trained,
        for the next estimates. Called as the job ends (the last chunk, or Stop's callback),
        before the rerun that draws the sidebar with the new models."""
        if self.models is not None or self.job is None:
            return
        self.models, self.note = keep_models(self.job.results)
        log.info(
            "training finished: models kept %s%s", self.models, f"; {self.note}" * bool(self.note)
        )
        first = next(iter(self.job.trainers.values()))
        scale = measured_scale(first.cfg, self.job.steps_done, self.job.seconds)
        if scale is not None:
            self.scale = scale


@dataclass(frozen=True)
class TrainingActions:
    """What the Training view changes outside itself, and what it asks the page: callbacks made
    by the page."""

    keep_models: KeepModels  # results -> ({name: id} of the models kept, why others were not)
    kept: dict[str, str]  # the session's models now: {id: label}
    apply_preset: Callable[[], None]  # the preset selectbox's choice into the controls
    choose_task: Callable[[], None]  # the task selectbox's choice: what it fills in (task_values)
    open_model: Callable[[str, int, int], None]  # (model id, layer, head) in the Attention view
    memory_check: Callable[[TrainConfig, int], str]  # (cfg, runs) -> why it cannot start, or ""
    # (lab, make_job, cfg, runs): start the job if its memory fits, else lab.refuse(why)
    start: Callable[[TrainingLab, Callable[[TrainConfig], TrainingJob], TrainConfig, int], None]
    checkpointing: Callable[[TrainConfig], TrainMemory]  # a step's memory and time, both ways
