"""The Training view's session side: its lab, kept across reruns, and the callbacks through which
it changes the sidebar, the open view and this session's models."""

from __future__ import annotations

from app import session_models, sidebar, state
from app.runs import checkpoint_cost
from app.views.training import TrainingActions, TrainingLab
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainConfig, TrainResult


def _keep_models(results: dict[str, TrainResult]) -> dict[str, str]:
    """Each finished run as a model source of this session: {run name: its id}."""
    in_use = state.get("source")
    return {name: session_models.add_trained(result, in_use) for name, result in results.items()}


def _apply_preset() -> None:
    """The chosen training preset into the Training view's controls and the sidebar."""
    name = state.get("train_preset")
    if name is None:
        return
    state.update(state.training_preset_values(name))
    cfg = TrainConfig(**TRAINING_PRESETS[name])
    sidebar.use_architecture(state.architecture_values(cfg.encoder_config()))


def _open_model(model_id: str, layer: int, head: int) -> None:
    """Read a trained model in the Attention view, at this head."""
    sidebar.select_source(model_id)
    state.open_view("Attention", {"layer": layer, "head": head})


def lab_and_actions() -> tuple[TrainingLab, TrainingActions]:
    lab = state.keep("_training_lab", TrainingLab)
    kept = {model_id: model.label for model_id, model in session_models.session_models().items()}
    return lab, TrainingActions(
        keep_models=_keep_models,
        kept=kept,
        use_architecture=sidebar.use_architecture,
        apply_preset=_apply_preset,
        open_model=_open_model,
        checkpointing=checkpoint_cost,
    )
