"""The Training view: train the sidebar's architecture on a toy task, live, then open it anywhere.

The sidebar is the architecture (norm placement, d_model, heads, layers, d_ff, activation, norm
type, positions); this view holds only what training adds: task, sequence length, steps, learning
rate, warmup, batch and seed. Before anything starts it says how long training would take here,
and what each button trains where that is over the time limit (plan.py). Besides one run: BERT vs
ModernBERT (the two architectures at the sidebar's size, d_ff matched to the parameter count:
encoder.train.jobs.race_configs), Pre vs post, and Dropout placement.

Training runs in chunks inside a fragment that reruns itself every REFRESH_SECONDS: each rerun
trains for about CHUNK_SECONDS and redraws the progress bar and curves. Between chunks the browser
is free, so the Stop button (a full rerun, which Streamlit lets interrupt a running fragment)
takes effect within one chunk. Under the progress bar, a run whose curve shows it is not
learning says so, and what to try (encoder.train.stall); the finished job's results are
results.py. The job lives in this session's TrainingLab (app.page.training), which the page keeps
across reruns and hands to the view. Each finished run becomes a model source of this session
(through `TrainingActions.keep_models`): the sidebar offers it, and every view reads it.

Training counts in the server's memory budget (app.training_session): what would not fit is
refused before it starts, with the page saying why and what the limit is, and so is keeping a
finished run's model that no longer fits.
"""

from __future__ import annotations

import math
from dataclasses import fields
from functools import partial

import streamlit as st

from app.charts import training as training_charts
from app.i18n import _, localised, number, told
from app.keys import Key
from app.page.training import (
    COMPARISON_RUNS,
    JOB_RUNS,
    PLACEMENT_RUNS,
    RACE_RUNS,
    TRAINING_FIELDS,
    TrainingActions,
    TrainingLab,
    job_name,
    preset_values,
)
from app.page.widgets import show
from app.settings import Settings
from app.user_text import literal
from app.views.training import results
from app.views.training.plan import (
    Plan,
    architecture_text,
    checkpointing_note,
    norm_name,
    race_text,
    time_check,
)
from encoder.tasks.tasks import TASKS
from encoder.train.config import TrainConfig, trainable
from encoder.train.jobs import (
    DEFAULT_DROPOUT_RATE,
    TrainingJob,
    comparison_job,
    placement_job,
    race_job,
    single_job,
)
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import torch_threads

CHUNK_SECONDS = 0.5  # training time between two redraws
REFRESH_SECONDS = 0.2  # how soon the fragment asks for the next chunk
TRAINING_THREADS = 1  # the browser drawing the live charts shares the cores (see torch_threads)
MAX_STEPS = 5000
MAX_SEQ_LEN = 32
BATCH_SIZES = (16, 32, 64, 128, 256)
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
DROPOUT_RATES = (0.1, 0.2, 0.3, 0.4, 0.5)


def preset_name(name: str) -> str:
    """A training preset's display name (its id, TRAINING_PRESETS's key, stays in the link)."""
    return _(name) if name in TRAINING_PRESETS else name


def task_description(name: str) -> str:
    """A task's description (encoder.tasks.tasks's, a Said), in the run's language."""
    return told(TASKS[name].description) if name in TASKS else name


KEYS = (  # the controls (a preset in the link fills in the others) and the session's lab
    Key(
        "train_preset",
        None,
        in_url=True,
        choices=tuple(TRAINING_PRESETS),
        fills=preset_values,
    ),
    *(Key(key, getattr(TrainConfig(), field)) for key, field in TRAINING_FIELDS.items()),
    Key("train_dropout_rate", DEFAULT_DROPOUT_RATE),  # the placement runs'
    Key("_training_lab"),  # TrainingLab
)


def _preset_label(name: str) -> str:
    cfg = TRAINING_PRESETS[name]
    return _(
        "{name}: {task}, {norm} {layers} x {heads}, d_model {d_model}, d_ff {d_ff}, {steps} steps",
        name=preset_name(name),
        task=cfg.task,
        norm=norm_name(cfg.model.norm_first),
        layers=cfg.model.num_layers,
        heads=cfg.model.num_heads,
        d_model=cfg.model.d_model,
        d_ff=cfg.model.d_ff,
        steps=cfg.steps,
    )


def _controls(actions: TrainingActions) -> tuple[dict, float]:
    """The controls: the TrainConfig fields other than the architecture (the widgets', and the
    chosen preset's hidden ones, such as `decay`), and the dropout placement runs' rate."""
    preset = st.selectbox(
        _("Preset"),
        list(TRAINING_PRESETS),
        index=None,
        placeholder=_("Start from a training preset…"),
        format_func=_preset_label,
        key="train_preset",
        persist_state="session",
        on_change=actions.apply_preset,
        help=_(
            "Fills in the controls below and the sidebar's architecture (and hidden settings "
            "such as the learning-rate decay)."
        ),
    )
    left, middle, right = st.columns(3)
    with left:
        task, seq_len, seed = _task_controls(actions)
    with middle:
        steps, lr = _step_controls()
    with right:
        warmup, batch, rate = _batch_controls()
    checkpoint = st.toggle(
        _("Checkpoint every block"),
        key="train_checkpoint",
        persist_state="session",
        help=_(
            "Keep only each block's input for the backward pass and recompute the rest while "
            "going back: less memory, more time. The losses are the same."
        ),
    )
    chosen = dict(
        task=task,
        seq_len=seq_len,
        steps=steps,
        lr=lr,
        warmup_steps=warmup,
        batch_size=batch,
        seed=seed,
        checkpoint_blocks=checkpoint,
    )
    start = TRAINING_PRESETS.get(preset or "", TrainConfig())  # its hidden fields: decay...
    hidden = {f.name: getattr(start, f.name) for f in fields(start) if f.name not in chosen}
    del hidden["model"]  # the sidebar's architecture
    return {**hidden, **chosen}, rate


def _task_controls(actions: TrainingActions) -> tuple[str, int, int]:
    task = st.selectbox(
        _("Task"),
        list(TASKS),
        key="train_task",
        persist_state="session",
        on_change=actions.choose_task,
        help="\n".join(f"- **{t.name}**: {task_description(t.name)}" for t in TASKS.values()),
    )
    seq_len = st.number_input(
        _("Sequence length"), min_value=2, max_value=MAX_SEQ_LEN, key="train_seq_len"
    )
    seed = st.number_input(
        _("Seed"), min_value=0, max_value=2**31 - 1, key="train_seed", persist_state="session"
    )
    return task, seq_len, seed


def _step_controls() -> tuple[int, float]:
    steps = st.number_input(
        _("Steps"), min_value=1, max_value=MAX_STEPS, key="train_steps", persist_state="session"
    )
    lr = st.select_slider(
        _("Learning rate"),
        LEARNING_RATES,
        key="train_lr",
        persist_state="session",
        format_func=lambda v: localised(f"{v:g}"),
    )
    return steps, lr


def _batch_controls() -> tuple[int, int, float]:
    warmup = st.number_input(
        _("Warmup steps"), min_value=0, max_value=MAX_STEPS, key="train_warmup"
    )
    batch = st.select_slider(_("Batch"), BATCH_SIZES, key="train_batch", persist_state="session")
    rate = st.select_slider(
        _("Dropout rate (placement runs)"),
        DROPOUT_RATES,
        key="train_dropout_rate",
        persist_state="session",
        help=_(
            "**{job}** trains with dropout at this rate on the attention "
            "weights, on each sublayer's output before its residual add, on the "
            "feed-forward's hidden layer, and in all of torch's places, beside a run without "
            "dropout.",
            job=job_name(PLACEMENT_RUNS),
        ),
    )
    return warmup, batch, rate


def _draw_progress(job: TrainingJob) -> None:
    first = next(iter(job.trainers.values()))
    total = job.total_steps * len(job.trainers)
    st.progress(
        min(1.0, job.steps_done / total),
        text=_(
            "step {step} / {steps} · {seconds} s of training",
            step=first.step,
            steps=first.cfg.steps,
            seconds=number(job.seconds, 1, grouped=False),
        ),
    )
    results.draw_stalls(job.trainers)
    show(
        training_charts.training_curves(
            {name: t.history for name, t in job.trainers.items()},
            job.total_steps,
            chance_loss=math.log(first.cfg.num_classes),
            dashed=job.dashed,
        ),
        key="train_curves",
    )


def _live_training(lab: TrainingLab, actions: TrainingActions) -> None:
    """Train one chunk and redraw; when the job ends, rerun the page to show the results."""
    job = lab.job
    if job is None:
        return
    was_running = job.running
    with torch_threads(TRAINING_THREADS):
        job.advance(CHUNK_SECONDS)
    _draw_progress(job)
    if was_running and not job.running:
        lab.finish(actions.keep_models)
        st.rerun(scope="app")  # the sidebar offers the new models, the results are drawn


def draw(settings: Settings, lab: TrainingLab, actions: TrainingActions) -> None:
    """The whole Training view (its widget keys start with `train_`) for the sidebar's
    architecture (`settings.cfg`; None, with `settings.error` saying why, when impossible)."""
    _intro()
    chosen, rate = _controls(actions)
    architecture = settings.cfg
    if architecture is None:
        st.error(
            _(
                "The sidebar's architecture is impossible: {error}",
                error=literal(told(settings.error)),
            )
        )
        return
    st.caption(
        _(
            "Architecture (from the sidebar): {architecture}.",
            architecture=architecture_text(architecture),
        )
    )
    try:
        cfg = TrainConfig(model=trainable(architecture), **chosen)
    except ValueError as problem:
        st.error(_("These settings cannot be trained: {error}", error=literal(told(problem))))
        return
    job = lab.job
    running = job is not None and job.running
    model = (
        _("MiniLM's architecture") if settings.a.source == "pretrained" else _("this architecture")
    )
    plans = time_check(cfg, architecture, lab, model)
    room = _room(plans, running, actions)
    single = plans[1].cfg
    if single is not None and single.checkpoint_blocks and not room[1]:  # measuring needs a
        st.caption(checkpointing_note(actions.checkpointing(single)))  # training step's memory
    if plans[RACE_RUNS].cfg is not None:
        st.caption(race_text(plans[RACE_RUNS].cfg))
    _buttons(plans, room, running, lab, actions, rate)
    if job is None:
        if single is not None and not room[1]:  # else the sentences above say why it is off
            st.info(
                _(
                    "Press **{button}** to train on the {task} task, {steps} steps: the curves "
                    "are drawn here as it trains.",
                    button=job_name(1),
                    task=single.task,
                    steps=single.steps,
                )
            )
        return
    st.fragment(_live_training, run_every=REFRESH_SECONDS if running else None)(lab, actions)
    if job.running:
        return
    results.draw(job, lab.models or {}, actions)


def _intro() -> None:
    st.header(_("Training lab"))
    st.caption(
        _(
            "Train the architecture in the sidebar on a toy task and watch its heads turn from "
            "noise into a pattern; then open the trained model in every view. **{race}** races "
            "the two architectures at one size; **{compare}** trains "
            "pre-norm and post-norm (each with and without warmup) on the same data side by "
            "side; **{placement}** trains with dropout in one place at a time (the attention "
            "weights, the sublayer outputs, the feed-forward's hidden layer, all of them) beside "
            "a run without.",
            race=job_name(RACE_RUNS),
            compare=job_name(COMPARISON_RUNS),
            placement=job_name(PLACEMENT_RUNS),
        )
    )


def _room(plans: dict[int, Plan], running: bool, actions: TrainingActions) -> dict[int, str]:
    """{runs: why their plan's memory does not fit, or ""}; the first reason shown."""
    room = dict.fromkeys(JOB_RUNS, "")
    if not running:  # (a running job's memory is counted already)
        for runs, planned in plans.items():
            room[runs] = planned.cfg is not None and actions.memory_check(planned.cfg, runs) or ""
        first = next((why for why in room.values() if why), "")
        if first:
            st.warning(literal(first))
    return room


def _buttons(
    plans: dict[int, Plan],
    room: dict[int, str],
    running: bool,
    lab: TrainingLab,
    actions: TrainingActions,
    rate: float,
) -> None:
    """A button per kind of job (off while one runs, or where its plan does not fit), Stop."""
    left, race, middle, placements, right = st.columns(5)
    for column, key, make_job, runs in (
        (left, "train_start", single_job, 1),
        (race, "train_race", race_job, RACE_RUNS),
        (middle, "train_compare", comparison_job, COMPARISON_RUNS),
        (placements, "train_placements", partial(placement_job, rate=rate), PLACEMENT_RUNS),
    ):
        planned = plans[runs].cfg
        column.button(
            job_name(runs),
            key=key,
            type="primary" if runs == 1 else "secondary",
            disabled=running or planned is None or bool(room[runs]),
            on_click=actions.start,
            args=(lab, make_job, planned, runs),
        )
    right.button(
        _("Stop"),
        key="train_stop",
        disabled=not running,
        on_click=lab.stop,
        args=(actions.keep_models,),
    )
    if lab.note and lab.note not in room.values():  # not twice
        st.warning(literal(lab.note))
