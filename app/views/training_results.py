"""The Training view's results, once a job has ended: the runs' held-out accuracy, a button per
kept model that opens it in the Attention view at its sharpest head, what the job showed (the
race's and the placement runs' findings in the run's language), and the job's own figures."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from app.charts import training as training_charts
from app.i18n import _, localised, number, percent, told
from app.page.layout import written
from app.page.widgets import show
from encoder.train.jobs import TrainingJob, placement_findings, race_findings
from encoder.train.stall import Stall, stalled
from encoder.train.trainer import Trainer, TrainResult, sample_trace

if TYPE_CHECKING:
    from app.views.training import TrainingActions


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
        st.info(findings_said(job))
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
    rows = [
        {
            _("run"): name,
            _("held-out accuracy"): r.held_out_accuracy,
            _("whole sequences right"): r.held_out_sequence_accuracy,
            _("final loss"): r.final_loss,
            _("steps"): len(r.history),
            seconds: r.seconds,
            _("stopped"): r.stopped,
        }
        for name, r in job.results.items()
    ]
    st.dataframe(written(written(pd.DataFrame(rows), 4), 1, [seconds]), hide_index=True)
    counted = next(iter(job.results.values())).held_out_examples
    st.caption(
        _(
            "Held-out accuracy: per token, on {count} fresh sequences never trained on.",
            count=counted,
        )
    )
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


def _share(value: float) -> str:
    return _("not measured") if math.isnan(value) else percent(value, 1)


def race_said(results: dict[str, TrainResult]) -> str:
    """encoder.train.jobs.race_findings in the run's language: which run reached what loss in
    how many steps and seconds, and when the leader first got down to the other's final loss."""
    said = "; ".join(
        _(
            "{name} reached a training loss of {loss} after {steps} steps in {seconds} s "
            "(held-out accuracy {accuracy})",
            name=name,
            loss=number(r.final_loss, 3, grouped=False),
            steps=len(r.history),
            seconds=number(r.seconds, 1, grouped=False),
            accuracy=_share(r.held_out_accuracy),
        )
        for name, r in results.items()
    )
    (leader, led), (other, behind) = sorted(results.items(), key=lambda item: item[1].final_loss)
    if led.final_loss == behind.final_loss:
        return _("{said}: a tie.", said=said)
    step = next((row["step"] for row in led.history if row["loss"] <= behind.final_loss), None)
    if step is None:
        return _("{said}. {leader} ends lower.", said=said, leader=leader)
    return _(
        "{said}. {leader} ends lower. {leader} first got down to {other}'s final loss at step "
        "{step}, after {seconds} s.",
        said=said,
        leader=leader,
        other=other,
        step=step,
        seconds=number(led.elapsed[step - 1], 1, grouped=False),
    )


def placement_said(results: dict[str, TrainResult]) -> str:
    """encoder.train.jobs.placement_findings in the run's language: the held-out accuracies (the
    best, or that they tie), and where the final training loss was highest and lowest."""
    accuracy = {name: r.held_out_accuracy for name, r in results.items()}
    loss = {name: r.final_loss for name, r in results.items()}
    best = max(accuracy.values())
    leaders = [name for name, value in accuracy.items() if round(value, 3) == round(best, 3)]
    highest, lowest = max(loss, key=loss.get), min(loss, key=loss.get)
    values = dict(
        steps=max(len(r.history) for r in results.values()),
        best=number(best, 3, grouped=False),
        highest=highest,
        highest_loss=number(loss[highest], 3, grouped=False),
        lowest=lowest,
        lowest_loss=number(loss[lowest], 3, grouped=False),
    )
    if len(leaders) == len(accuracy):
        return _(
            "In this run of {steps} steps, every placement reached {best} held-out accuracy; "
            "the final training loss (measured with dropout on) was highest with {highest} "
            "({highest_loss}) and lowest with {lowest} ({lowest_loss}).",
            **values,
        )
    others = ", ".join(
        f"{name} {number(value, 3, grouped=False)}"
        for name, value in accuracy.items()
        if name not in leaders
    )
    return _(
        "In this run of {steps} steps, {leaders} reached the best held-out accuracy, {best} "
        "({others}); the final training loss (measured with dropout on) was highest with "
        "{highest} ({highest_loss}) and lowest with {lowest} ({lowest_loss}).",
        leaders=_listed(leaders),
        others=others,
        **values,
    )


def _listed(names: list[str]) -> str:
    """'a', 'a and b', 'a and b and c' (as encoder.train.jobs writes the leaders)."""
    said = names[0]
    for name in names[1:]:
        said = _("{names} and {last}", names=said, last=name)
    return said


def findings_said(job: TrainingJob) -> str:
    """What the finished job showed, in the run's language (the library's sentence for a job
    this view does not know)."""
    if job.findings is race_findings:
        return race_said(job.results)
    if job.findings is placement_findings:
        return placement_said(job.results)
    return job.findings(job.results)
