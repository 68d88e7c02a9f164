"""The Training view's results, once a job has ended: the runs' held-out accuracy (against
guessing; for the masked-word task, its top words on an example sentence), a button per
kept model that opens it in the Attention view at its sharpest head, what the job showed (the
race's and the placement runs' findings, encoder.train.jobs's Said, in the run's language), and
the job's own figures; and, while it trains, the warning of a run that is not learning."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts import training as training_charts
from app.i18n import _, localised, told
from app.page.layout import written
from app.page.training import TrainingActions
from app.page.widgets import show
from encoder.tasks.tasks import get_task
from encoder.train.findings import example_fill, held_out_said
from encoder.train.jobs import TrainingJob
from encoder.train.stall import Stall, stalled
from encoder.train.trainer import Trainer, TrainResult, sample_trace


def stall_said(stall: Stall) -> str:
    """What encoder.train.stall read from a run's curve, and what to try, in the run's
    language."""
    return " ".join(told(said) for said in (stall.said, *stall.tries))


def draw_stalls(trainers: dict[str, Trainer]) -> None:
    """A warning for each run whose curve so far shows it is not learning (encoder.train.stall),
    named by its run where the job has several; nothing for a run that learns."""
    for name, trainer in trainers.items():
        stall = stalled(trainer.cfg, trainer.history)
        if stall is None:
            continue
        said = stall_said(stall)
        st.warning(said if len(trainers) == 1 else _("**{run}**: {said}", run=name, said=said))


def draw(job: TrainingJob, models: dict[str, str], actions: TrainingActions) -> None:
    """A finished job's results (`models`: {run name: session model id} of the runs kept)."""
    _results(job, models, actions)
    if job.findings is not None:
        st.info(told(job.findings(job.results)))
    if job.init_grad_norms:
        _comparison_results(job)
        return
    if job.dropout_rate is not None:
        _placement_results(job)
        return
    result = next(iter(job.results.values()))
    show(training_charts.grad_norm_heatmap(result.history), key="train_grads")


def _sharpest_head(result: TrainResult) -> tuple[int, int]:
    """(layer, head) whose rows put the most weight on a single key, on average, on a fresh
    sequence of the task."""
    attention = sample_trace(result.model, result.config).trace.attention[:, 0]  # [L, H, T, T]
    sharpness = attention.max(dim=-1).values.mean(dim=-1)  # [layer, head]
    layer, head = divmod(int(sharpness.argmax()), sharpness.shape[1])
    return layer, head


def _results(job: TrainingJob, models: dict[str, str], actions: TrainingActions) -> None:
    seconds = _("seconds")
    first = next(iter(job.results.values()))
    words = get_task(first.config.task).reads_words
    whole = _("sentences with every hidden word right") if words else _("whole sequences right")
    rows = [
        {
            _("run"): name,
            _("held-out accuracy"): r.held_out_accuracy,
            whole: r.held_out_sequence_accuracy,
            _("final loss"): r.final_loss,
            _("steps"): len(r.history),
            seconds: r.seconds,
            _("stopped"): r.stopped,
        }
        for name, r in job.results.items()
    ]
    st.dataframe(written(written(pd.DataFrame(rows), 4), 1, [seconds]), hide_index=True)
    st.caption(told(held_out_said(first)))
    fill = example_fill(first) if len(job.results) == 1 else None
    if fill is not None:
        st.info(told(fill))
    st.subheader(_("Open it in the views"))
    st.caption(
        _(
            "Each run is now a model source in the sidebar (Weights): every view reads it, and "
            "the text box takes its task's sequences."
        )
    )

    def open_model(model_id: str, result: TrainResult) -> None:  # read its sharpest head
        actions.open_model(model_id, *_sharpest_head(result))

    if not models:
        return
    columns = st.columns(len(models))
    for index, (column, (name, model_id)) in enumerate(zip(columns, models.items(), strict=True)):
        column.button(
            _("Open {name}", name=name) if len(models) > 1 else _("Open the trained model"),
            key=f"train_open_{index}",
            on_click=open_model,
            args=(model_id, job.results[name]),
            disabled=model_id not in actions.kept,
            help=actions.kept.get(model_id, _("No longer kept in this session.")),
        )


def _placement_results(job: TrainingJob) -> None:
    """The dropout placement runs' held-out accuracy side by side, and what this run showed."""
    show(
        training_charts.held_out_bars(
            {name: r.held_out_accuracy for name, r in job.results.items()},
            title=_(
                "Held-out accuracy with dropout {rate} in each place",
                rate=localised(f"{job.dropout_rate:g}"),
            ),
        ),
        key="train_placement_accuracy",
    )
    st.caption(
        _(
            "One run per placement, one seed: the same initial weights and batches, dropout the "
            "only difference. Another seed can order them differently; dropout is off when "
            "measuring held-out accuracy."
        )
    )


def _comparison_results(job: TrainingJob) -> None:
    show(
        training_charts.layer_grad_norms_chart(
            job.init_grad_norms, title=_("Gradient norm of each block at initialisation")
        ),
        key="train_init_grads",
    )
    st.caption(
        _(
            "Same batch, same seed, untrained weights: how much each block's gradient asks it to "
            "change at step 1."
        )
    )
