"""The Training view's session side: its lab, kept across reruns, and the callbacks through which
it changes the sidebar, the open view and this session's models.

A training counts in the memory budget from its start to its end as what this session keeps
(session_models.training_bytes: weights, gradients, optimiser state, activations); it starts only
if that fits, and each finished run's model is then kept only if it fits
(app.controls.session_models)."""

from __future__ import annotations

from app import session_end
from app.controls import session_models, source_picker, state, url
from app.i18n import _
from app.jobs import checkpoint_cost
from app.memory import MemoryRefused
from app.page.training import (
    TrainingActions,
    TrainingLab,
    job_name,
    preset_values,
    task_values,
)
from app.settings import architecture_values
from encoder.train.config import TrainConfig
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainResult


def _training_what(runs: int) -> str:
    if runs == 1:
        return _("Training this architecture once")
    return _("Training this architecture {count} times ({jobs})", count=runs, jobs=job_name(runs))


def _memory_check(cfg: TrainConfig, runs: int) -> str:
    """Why training `runs` runs of `cfg` cannot start now (session_models.ModelShelf.plan_room);
    "" when it can."""
    nbytes = session_models.training_bytes(cfg, runs)
    shelf = session_models.session_models()
    try:
        shelf.plan_room(_training_what(runs), nbytes, nbytes, url.sources_in_use())
    except MemoryRefused as refusal:
        return str(refusal)
    return ""


def _start(lab: TrainingLab, make_job, cfg: TrainConfig, runs: int) -> None:
    """Start a job if its memory fits (then it counts in the budget until it ends)."""
    nbytes = session_models.training_bytes(cfg, runs)
    try:
        session_models.session_models().start_training(
            _training_what(runs), nbytes, url.sources_in_use()
        )
    except MemoryRefused as refusal:
        lab.refuse(str(refusal))
        return
    lab.start(make_job, cfg)


def _keep_models(results: dict[str, TrainResult]) -> tuple[dict[str, str], str]:
    """Each finished run as a model source of this session: ({run name: its id}, why the runs
    left out could not be kept, or "")."""
    return session_models.session_models().keep_trained(results, url.sources_in_use())


def _apply_preset() -> None:
    """The chosen training preset into the Training view's controls and the sidebar."""
    name = state.get("train_preset")
    if name is None:
        return
    state.update(preset_values(name))
    source_picker.use_architecture(architecture_values(TRAINING_PRESETS[name].model))


def _choose_task() -> None:
    """What the chosen task fills in beside it (a word task: its length, batch, steps, lr)."""
    state.update(task_values(state.get("train_task")))


def _open_model(model_id: str, layer: int, head: int) -> None:
    """Read a trained model in the Attention view, at this head."""
    source_picker.select_source(model_id)
    state.open_view("Attention", {"layer": layer, "head": head})


def _new_lab() -> TrainingLab:
    lab = TrainingLab()
    session_end.on_end(lab.drop)  # a training left running goes with its session
    return lab


def lab_and_actions() -> tuple[TrainingLab, TrainingActions]:
    lab = state.keep("_training_lab", _new_lab)
    kept = {model_id: model.label for model_id, model in session_models.session_models().items()}
    return lab, TrainingActions(
        keep_models=_keep_models,
        kept=kept,
        apply_preset=_apply_preset,
        choose_task=_choose_task,
        open_model=_open_model,
        memory_check=_memory_check,
        start=_start,
        checkpointing=checkpoint_cost,
    )
