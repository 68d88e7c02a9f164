"""The Training view: train the sidebar's architecture on a toy task, live, then open it anywhere.

The sidebar is the architecture (norm placement, d_model, heads, layers, d_ff, activation, norm
type, positions); this view holds only what training adds: task, sequence length, steps, learning
rate, warmup, batch and seed. Before anything starts it says how long training would take here
(encoder.train.duration); where that is longer than MAX_TRAINING_SECONDS, each button trains the
nearest architecture that fits instead (or fewer steps), and one sentence says so with the numbers.
Besides one run: BERT vs ModernBERT (the two architectures at the sidebar's size, d_ff matched to
the parameter count: encoder.train.jobs.race_configs), Pre vs post, and Dropout placement.

Training runs in chunks inside a fragment that reruns itself every REFRESH_SECONDS: each rerun
trains for about CHUNK_SECONDS and redraws the progress bar and curves. Between chunks the browser
is free, so the Stop button (a full rerun, which Streamlit lets interrupt a running fragment)
takes effect within one chunk. The job lives in this session's TrainingLab, which the page keeps
across reruns and hands to the view. Each finished run becomes a model source of this session
(through `TrainingActions.keep_models`): the sidebar offers it, and every view reads it.

Training counts in the server's memory budget (app.training_session): what would not fit is
refused before it starts, with the page saying why and what the limit is, and so is keeping a
finished run's model that no longer fits.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import pandas as pd
import streamlit as st

from app.charts import training as training_charts
from app.keys import Key
from app.settings import D_FF_CHOICES, D_MODEL_CHOICES, Settings
from app.user_text import literal
from app.views.widgets import show
from encoder.core.config import EncoderConfig
from encoder.core.options import ARCHITECTURE_FIELDS, placement_of
from encoder.measure.train_memory import TrainMemory
from encoder.tasks.tasks import TASKS
from encoder.train.duration import (
    MAX_TRAINING_SECONDS,
    affordable_steps,
    duration_text,
    measured_scale,
    nearest_fitting,
    step_cost,
    training_seconds,
)
from encoder.train.jobs import (
    DEFAULT_DROPOUT_RATE,
    DROPOUT_PLACEMENTS,
    TrainingJob,
    comparison_configs,
    comparison_job,
    placement_job,
    race_configs,
    race_job,
    race_sizes,
    single_job,
    window_sentence,
)
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainConfig, TrainResult, sample_trace, torch_threads

CHUNK_SECONDS = 0.5  # training time between two redraws
REFRESH_SECONDS = 0.2  # how soon the fragment asks for the next chunk
TRAINING_THREADS = 1  # the browser drawing the live charts shares the cores (see torch_threads)
MAX_STEPS = 5000
MAX_SEQ_LEN = 32
BATCH_SIZES = (16, 32, 64, 128, 256)
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
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
DROPOUT_RATES = (0.1, 0.2, 0.3, 0.4, 0.5)
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


def preset_values(name: str | None) -> dict[str, object]:
    """The Training view's widget values a training preset sets."""
    if name is None:
        return {}
    cfg = TrainConfig(**TRAINING_PRESETS[name])
    return {key: getattr(cfg, field) for key, field in TRAINING_FIELDS.items()}


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
    open_model: Callable[[str, int, int], None]  # (model id, layer, head) in the Attention view
    memory_check: Callable[[TrainConfig, int], str]  # (cfg, runs) -> why it cannot start, or ""
    # (lab, make_job, cfg, runs): start the job if its memory fits, else lab.refuse(why)
    start: Callable[[TrainingLab, Callable[[TrainConfig], TrainingJob], TrainConfig, int], None]
    checkpointing: Callable[[TrainConfig], TrainMemory]  # a step's memory and time, both ways


def _preset_label(name: str) -> str:
    cfg = TrainConfig(**TRAINING_PRESETS[name])
    return (
        f"{name}: {cfg.task}, {placement_of(cfg.norm_first)}-norm {cfg.num_layers} x "
        f"{cfg.num_heads}, d_model {cfg.d_model}, d_ff {cfg.d_ff}, {cfg.steps} steps"
    )


def _controls(actions: TrainingActions) -> tuple[dict, float]:
    """The controls: the TrainConfig fields other than the architecture (the widgets', and the
    chosen preset's hidden ones, such as `decay`), and the dropout placement runs' rate."""
    preset = st.selectbox(
        "Preset",
        list(TRAINING_PRESETS),
        index=None,
        placeholder="Start from a training preset…",
        format_func=_preset_label,
        key="train_preset",
        persist_state="session",
        on_change=actions.apply_preset,
        help="Fills in the controls below and the sidebar's architecture (and hidden settings "
        "such as the learning-rate decay).",
    )
    left, middle, right = st.columns(3)
    with left:
        task = st.selectbox(
            "Task",
            list(TASKS),
            key="train_task",
            persist_state="session",
            help="\n".join(f"- **{t.name}**: {t.description}" for t in TASKS.values()),
        )
        seq_len = st.number_input(
            "Sequence length", min_value=2, max_value=MAX_SEQ_LEN, key="train_seq_len"
        )
        seed = st.number_input(
            "Seed", min_value=0, max_value=2**31 - 1, key="train_seed", persist_state="session"
        )
    with middle:
        steps = st.number_input(
            "Steps", min_value=1, max_value=MAX_STEPS, key="train_steps", persist_state="session"
        )
        lr = st.select_slider(
            "Learning rate",
            LEARNING_RATES,
            key="train_lr",
            persist_state="session",
            format_func=lambda v: f"{v:g}",
        )
    with right:
        warmup = st.number_input(
            "Warmup steps", min_value=0, max_value=MAX_STEPS, key="train_warmup"
        )
        batch = st.select_slider("Batch", BATCH_SIZES, key="train_batch", persist_state="session")
        rate = st.select_slider(
            "Dropout rate (placement runs)",
            DROPOUT_RATES,
            key="train_dropout_rate",
            persist_state="session",
            help="**Dropout placement** trains with dropout at this rate on the attention "
            "weights, on each sublayer's output before its residual add, on the feed-forward's "
            "hidden layer, and in all of torch's places, beside a run without dropout.",
        )
    checkpoint = st.toggle(
        "Checkpoint every block",
        key="train_checkpoint",
        persist_state="session",
        help="Keep only each block's input for the backward pass and recompute the rest while "
        "going back: less memory, more time. The losses are the same.",
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
    hidden = {
        name: value
        for name, value in TRAINING_PRESETS.get(preset or "", {}).items()
        if name not in ARCHITECTURE_FIELDS and name not in chosen
    }
    return {**hidden, **chosen}, rate


def architecture_text(cfg: EncoderConfig) -> str:
    return (
        f"{placement_of(cfg.norm_first)}-norm, {cfg.num_layers} layers x {cfg.num_heads} heads, "
        f"d_model {cfg.d_model}, d_ff {cfg.d_ff}, {cfg.activation.upper()}, {cfg.norm_type}, "
        f"{cfg.positional} positions"
    )


@dataclass(frozen=True)
class Plan:
    """What one button trains: the controls' settings on the sidebar's architecture when that
    fits the time limit, else on the nearest architecture that does (or, when not even the
    smallest does, fewer steps); None when nothing fits."""

    cfg: TrainConfig | None
    seconds: float  # the estimate for the job's runs (of `cfg` when there is one)


def plan(cfg: TrainConfig, architecture: EncoderConfig, runs: int, scale: float) -> Plan:
    """The job of `runs` runs that the view offers for `cfg` (see Plan)."""
    seconds = training_seconds(cfg, runs, scale)
    if seconds <= MAX_TRAINING_SECONDS:
        return Plan(cfg, seconds)
    fitting = nearest_fitting(
        architecture, cfg, runs, scale, MAX_TRAINING_SECONDS, D_MODEL_CHOICES, D_FF_CHOICES
    )
    if fitting is not None:
        shrunk = replace(cfg, **{name: getattr(fitting, name) for name in ARCHITECTURE_FIELDS})
        return Plan(shrunk, training_seconds(shrunk, runs, scale))
    steps = affordable_steps(cfg, runs, scale, MAX_TRAINING_SECONDS)
    if steps < 1:
        return Plan(None, seconds)
    fewer = replace(cfg, steps=steps, warmup_steps=min(cfg.warmup_steps, steps))
    return Plan(fewer, training_seconds(fewer, runs, scale))


def _change_text(chosen: TrainConfig, planned: TrainConfig) -> str:
    """How a plan differs from the chosen settings: "a 2-layer, d_model 64 copy (4 heads, d_ff
    128)" or "300 of the 5000 steps"."""
    if planned.steps != chosen.steps:
        return f"{planned.steps} of the {chosen.steps} steps"
    return (
        f"a {planned.num_layers}-layer, d_model {planned.d_model} copy ({planned.num_heads} "
        f"heads, d_ff {planned.d_ff})"
    )


def _plan_sentence(cfg: TrainConfig, plans: dict[int, Plan], model: str, scale: float) -> str:
    """One sentence: how long the chosen settings would take, and what each button trains
    instead where they do not fit; "" when they fit."""
    changed = {runs: p for runs, p in plans.items() if p.cfg != cfg}
    if not changed:
        return ""
    first = min(changed)
    what = "once" if first == 1 else f"{first} times ({JOB_NAMES[first]})"
    seconds = training_seconds(cfg, first, scale)
    took, limit = duration_text(seconds), f"{MAX_TRAINING_SECONDS // 60} min"
    if took == f"about {limit}":  # just over: in whole minutes it would read as the limit
        took, limit = f"about {round(seconds)} s", f"{MAX_TRAINING_SECONDS} s"
    parts = [
        f"**{JOB_NAMES[runs]}**"
        + ("" if runs == 1 else f" ({runs} runs)")
        + (
            f" trains {_change_text(cfg, p.cfg)} in {duration_text(p.seconds)}"
            if p.cfg is not None
            else " is off: even one step of the smallest architecture would take longer"
        )
        for runs, p in changed.items()
    ]
    return (
        f"Training {model} {what} would take {took} here, and training is limited to {limit} "
        "on this server: "
        f"{'; '.join(parts)}."
    )


def _time_check(
    cfg: TrainConfig, architecture: EncoderConfig, lab: TrainingLab, model: str
) -> dict[int, Plan]:
    """Show the estimates and, where the chosen settings do not fit the time limit, what each
    button trains instead; {runs: its plan} for one run, the comparison and the placement runs."""
    scale = lab.scale or 1.0
    seconds = {runs: training_seconds(cfg, runs, scale) for runs in JOB_RUNS}
    cost = step_cost(cfg)
    basis = f"modelled from {cost.parameters:,} weights x {cost.tokens:,} tokens per step"
    if lab.scale is not None:
        basis += f", scaled by this session's last training ({scale:.2g}x the model)"
    estimates = ", ".join(
        f"**{JOB_NAMES[runs]}**{'' if runs == 1 else f' ({runs} runs)'} "
        f"{duration_text(seconds[runs])}"
        for runs in JOB_RUNS
    )
    st.caption(f"Estimated time here: {estimates} ({basis}).")
    plans = {runs: plan(cfg, architecture, runs, scale) for runs in JOB_RUNS}
    sentence = _plan_sentence(cfg, plans, model, scale)
    if sentence:
        st.info(sentence)
    return plans


def _checkpointing_note(memory: TrainMemory) -> str:
    """What checkpointing saves and costs for one step of this training, measured."""
    kept, checkpointed = memory.saved_bytes / 1e6, memory.saved_bytes_checkpointed / 1e6
    return (
        f"Checkpointing: each step keeps {checkpointed:,.2f} MB for the backward pass instead of "
        f"{kept:,.2f} MB ({kept / max(checkpointed, 1e-9):.1f}x less), and a forward + backward "
        f"pass takes {memory.checkpointing_time_factor:.2f}x as long (measured here on this "
        "architecture and batch)."
    )


def _draw_progress(job: TrainingJob) -> None:
    first = next(iter(job.trainers.values()))
    total = job.total_steps * len(job.trainers)
    st.progress(
        min(1.0, job.steps_done / total),
        text=f"step {first.step} / {first.cfg.steps} · {job.seconds:.1f} s of training",
    )
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


def _sharpest_head(result: TrainResult) -> tuple[int, int]:
    """(layer, head) whose rows put the most weight on a single key, on average, on a fresh
    sequence of the task."""
    attention = sample_trace(result.model, result.config).trace.attention[:, 0]  # [L, H, T, T]
    sharpness = attention.max(dim=-1).values.mean(dim=-1)  # [layer, head]
    layer, head = divmod(int(sharpness.argmax()), sharpness.shape[1])
    return layer, head


def _results(job: TrainingJob, models: dict[str, str], actions: TrainingActions) -> None:
    rows = [
        {
            "run": name,
            "held-out accuracy": round(r.held_out_accuracy, 4),
            "whole sequences right": round(r.held_out_sequence_accuracy, 4),
            "final loss": round(r.final_loss, 4),
            "steps": len(r.history),
            "seconds": round(r.seconds, 1),
            "stopped": r.stopped,
        }
        for name, r in job.results.items()
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    counted = next(iter(job.results.values())).held_out_examples
    st.caption(f"Held-out accuracy: per token, on {counted} fresh sequences never trained on.")
    st.subheader("Open it in the views")
    st.caption(
        "Each run is now a model source in the sidebar (Weights): every view reads it, and the "
        "text box takes its task's sequences."
    )

    def open_model(model_id: str, result: TrainResult) -> None:  # read its sharpest head
        actions.open_model(model_id, *_sharpest_head(result))

    if not models:
        return
    columns = st.columns(len(models))
    for index, (column, (name, model_id)) in enumerate(zip(columns, models.items(), strict=True)):
        column.button(
            f"Open {name}" if len(models) > 1 else "Open the trained model",
            key=f"train_open_{index}",
            on_click=open_model,
            args=(model_id, job.results[name]),
            disabled=model_id not in actions.kept,
            help=actions.kept.get(model_id, "No longer kept in this session."),
        )


def _placement_results(job: TrainingJob) -> None:
    """The dropout placement runs' held-out accuracy side by side, and what this run showed."""
    show(
        training_charts.held_out_bars(
            {name: r.held_out_accuracy for name, r in job.results.items()},
            title=f"Held-out accuracy with dropout {job.dropout_rate:g} in each place",
        ),
        key="train_placement_accuracy",
    )
    st.caption(
        "One run per placement, one seed: the same initial weights and batches, dropout the only "
        "difference. Another seed can order them differently; dropout is off when measuring "
        "held-out accuracy."
    )


def _comparison_results(job: TrainingJob) -> None:
    show(
        training_charts.layer_grad_norms_chart(
            job.init_grad_norms, title="Gradient norm of each block at initialisation"
        ),
        key="train_init_grads",
    )
    st.caption(
        "Same batch, same seed, untrained weights: how much each block's gradient asks it to "
        "change at step 1."
    )


def race_text(cfg: TrainConfig) -> str:
    """What the race trains from `cfg` (its plan): the two architectures, their parameter
    counts, and what the local window masks at the task's sequence length."""
    runs = race_configs(cfg)
    modern = runs["ModernBERT-style"]
    return (
        f"**{JOB_NAMES[RACE_RUNS]}** trains BERT's architecture (post-norm, learned positions, "
        "GELU, biases, global attention) against ModernBERT's (pre-norm, RoPE, GeGLU, no biases "
        f"in the linear layers or the norms, a local window of {modern.attention_window}, every "
        f"layer whose index is a multiple of {modern.global_every} global) on {cfg.task}, seed "
        f"{cfg.seed}, the same "
        f"batches, {cfg.num_layers} layers x {cfg.num_heads} heads, d_model {cfg.d_model}. "
        f"{race_sizes(runs)} {window_sentence(modern)}"
    )


def draw(settings: Settings, lab: TrainingLab, actions: TrainingActions) -> None:
    """The whole Training view (its widget keys start with `train_`) for the sidebar's
    architecture (`settings.cfg`; None, with `settings.error` saying why, when impossible)."""
    st.header("Training lab")
    st.caption(
        "Train the architecture in the sidebar on a toy task and watch its heads turn from noise "
        "into a pattern; then open the trained model in every view. **BERT vs ModernBERT** races "
        "the two architectures at one size; **Pre vs post** trains "
        "pre-norm and post-norm (each with and without warmup) on the same data side by side; "
        "**Dropout placement** trains with dropout in one place at a time (the attention "
        "weights, the sublayer outputs, the feed-forward's hidden layer, all of them) beside a "
        "run without."
    )
    chosen, rate = _controls(actions)
    architecture = settings.cfg
    if architecture is None:
        st.error(f"The sidebar's architecture is impossible: {literal(settings.error)}")
        return
    st.caption(f"Architecture (from the sidebar): {architecture_text(architecture)}.")
    try:
        cfg = TrainConfig.from_architecture(architecture, **chosen)
    except ValueError as problem:
        st.error(f"These settings cannot be trained: {literal(str(problem))}")
        return
    job = lab.job
    running = job is not None and job.running
    model = "MiniLM's architecture" if settings.a.source == "pretrained" else "this architecture"
    plans = _time_check(cfg, architecture, lab, model)
    room = dict.fromkeys(JOB_RUNS, "")  # {runs: why their plan's memory does not fit}
    if not running:  # (a running job's memory is counted already)
        for runs, planned in plans.items():
            room[runs] = planned.cfg is not None and actions.memory_check(planned.cfg, runs) or ""
        first = next((why for why in room.values() if why), "")
        if first:
            st.warning(literal(first))
    single = plans[1].cfg
    if single is not None and single.checkpoint_blocks and not room[1]:  # measuring needs a
        st.caption(_checkpointing_note(actions.checkpointing(single)))  # training step's memory
    if plans[RACE_RUNS].cfg is not None:
        st.caption(race_text(plans[RACE_RUNS].cfg))
    left, race, middle, placements, right = st.columns(5)
    for column, key, make_job, runs in (
        (left, "train_start", single_job, 1),
        (race, "train_race", race_job, RACE_RUNS),
        (middle, "train_compare", comparison_job, COMPARISON_RUNS),
        (placements, "train_placements", partial(placement_job, rate=rate), PLACEMENT_RUNS),
    ):
        planned = plans[runs].cfg
        column.button(
            JOB_NAMES[runs],
            key=key,
            type="primary" if runs == 1 else "secondary",
            disabled=running or planned is None or bool(room[runs]),
            on_click=actions.start,
            args=(lab, make_job, planned, runs),
        )
    right.button(
        "Stop",
        key="train_stop",
        disabled=not running,
        on_click=lab.stop,
        args=(actions.keep_models,),
    )
    if lab.note and lab.note not in room.values():  # not twice
        st.warning(literal(lab.note))
    if job is None:
        st.info("Choose a task, then press **Train**.")
        return
    st.fragment(_live_training, run_every=REFRESH_SECONDS if running else None)(lab, actions)
    if job.running:
        return
    _results(job, lab.models or {}, actions)
    if job.findings is not None:
        st.info(job.findings(job.results))
    if job.init_grad_norms:
        _comparison_results(job)
        return
    if job.dropout_rate is not None:
        _placement_results(job)
        return
    result = next(iter(job.results.values()))
    show(training_charts.grad_norm_heatmap(result.history), key="train_grads")
