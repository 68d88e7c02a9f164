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
takes effect within one chunk. Under the progress bar, a run whose curve shows it is not
learning says so, and what to try (encoder.train.stall); the finished job's results are
app/views/training_results.py. The job lives in this session's TrainingLab, which the page keeps
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
from dataclasses import dataclass, fields, replace
from functools import partial

import streamlit as st

from app.charts import training as training_charts
from app.charts.cost import percent
from app.i18n import _, localised, number, told
from app.keys import Key
from app.page.widgets import show
from app.settings import D_FF_CHOICES, D_MODEL_CHOICES, Settings, say
from app.user_text import literal
from app.views import training_results
from encoder.core.config import EncoderConfig
from encoder.measure.train_memory import TrainMemory
from encoder.tasks.tasks import TASKS
from encoder.train.config import TrainConfig, trainable
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
    encoder_parameters,
    placement_job,
    race_configs,
    race_job,
    single_job,
    window_masked_pairs,
)
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainResult, torch_threads

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


def job_name(runs: int) -> str:
    """The button's name of the job of `runs` runs (JOB_NAMES's), in the run's language."""
    return {
        1: _("Train"),
        RACE_RUNS: _("BERT vs ModernBERT"),
        COMPARISON_RUNS: _("Pre vs post"),
        PLACEMENT_RUNS: _("Dropout placement"),
    }[runs]


def preset_name(name: str) -> str:
    """A training preset's display name (its id, TRAINING_PRESETS's key, stays in the link)."""
    names = {
        "default": _("default"),
        "pre vs post: deep, high lr": _("pre vs post: deep, high lr"),
        "pre vs post: 6 layers, lr 1e-3": _("pre vs post: 6 layers, lr 1e-3"),
        "BERT vs ModernBERT: 6 layers, sequences of 16": _(
            "BERT vs ModernBERT: 6 layers, sequences of 16"
        ),
    }
    return names.get(name, name)


def task_description(name: str) -> str:
    """A task's description (encoder.tasks.tasks's, a Said), in the run's language."""
    return told(TASKS[name].description) if name in TASKS else name


def norm_name(norm_first: bool) -> str:
    """'pre-norm' or 'post-norm', in the run's language."""
    return _("pre-norm") if norm_first else _("post-norm")


def duration_words(seconds: float) -> str:
    """encoder.train.duration.duration_text's 'about 40 s', 'about 3 min', 'about 2.5 h', in the
    run's language."""
    if seconds < 90:
        return _("about {seconds} s", seconds=max(1, round(seconds)))
    if seconds < 90 * 60:
        return _("about {minutes} min", minutes=round(seconds / 60))
    return _("about {hours} h", hours=number(seconds / 3600, 1, grouped=False))


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
    cfg = TRAINING_PRESETS[name]
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
        task = st.selectbox(
            _("Task"),
            list(TASKS),
            key="train_task",
            persist_state="session",
            help="\n".join(f"- **{t.name}**: {task_description(t.name)}" for t in TASKS.values()),
        )
        seq_len = st.number_input(
            _("Sequence length"), min_value=2, max_value=MAX_SEQ_LEN, key="train_seq_len"
        )
        seed = st.number_input(
            _("Seed"), min_value=0, max_value=2**31 - 1, key="train_seed", persist_state="session"
        )
    with middle:
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
    with right:
        warmup = st.number_input(
            _("Warmup steps"), min_value=0, max_value=MAX_STEPS, key="train_warmup"
        )
        batch = st.select_slider(
            _("Batch"), BATCH_SIZES, key="train_batch", persist_state="session"
        )
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


def architecture_text(cfg: EncoderConfig) -> str:
    """The architecture in words, each option as the page names it ("post-norm, 4 layers x 4
    heads, d_model 256, d_ff 1024, GELU, LayerNorm, sinusoidal positions")."""
    return _(
        "{norm}, {layers} layers x {heads} heads, d_model {d_model}, d_ff {d_ff}, {activation}, "
        "{norm_type}, {positions}",
        norm=norm_name(cfg.norm_first),
        layers=cfg.num_layers,
        heads=cfg.num_heads,
        d_model=cfg.d_model,
        d_ff=cfg.d_ff,
        activation=say("activation", cfg.activation),
        norm_type=say("norm_type", cfg.norm_type),
        positions=say("positional", cfg.positional),
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
        shrunk = replace(cfg, model=trainable(fitting))
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
        return _("{steps} of the {chosen} steps", steps=planned.steps, chosen=chosen.steps)
    planned = planned.model
    if planned.num_layers == 1:
        return _(
            "a 1-layer, d_model {d_model} copy ({heads} heads, d_ff {d_ff})",
            d_model=planned.d_model,
            heads=planned.num_heads,
            d_ff=planned.d_ff,
        )
    return _(
        "a {layers}-layer, d_model {d_model} copy ({heads} heads, d_ff {d_ff})",
        layers=planned.num_layers,
        d_model=planned.d_model,
        heads=planned.num_heads,
        d_ff=planned.d_ff,
    )


def _plan_sentence(cfg: TrainConfig, plans: dict[int, Plan], model: str, scale: float) -> str:
    """One sentence: how long the chosen settings would take, and what each button trains
    instead where they do not fit; "" when they fit."""
    changed = {runs: p for runs, p in plans.items() if p.cfg != cfg}
    if not changed:
        return ""
    first = min(changed)
    what = _("once") if first == 1 else _("{count} times ({job})", count=first, job=job_name(first))
    seconds = training_seconds(cfg, first, scale)
    took, limit = duration_words(seconds), _("{minutes} min", minutes=MAX_TRAINING_SECONDS // 60)
    if duration_text(seconds) == f"about {MAX_TRAINING_SECONDS // 60} min":  # just over: in
        # whole minutes it would read as the limit
        took = _("about {seconds} s", seconds=round(seconds))
        limit = _("{seconds} s", seconds=MAX_TRAINING_SECONDS)
    parts = [_part(runs, cfg, p) for runs, p in changed.items()]
    return _(
        "Training {model} {what} would take {took} here, and training is limited to {limit} "
        "on this server: {parts}.",
        model=model,
        what=what,
        took=took,
        limit=limit,
        parts="; ".join(parts),
    )


def _part(runs: int, cfg: TrainConfig, p: Plan) -> str:
    """What one button trains instead of the chosen settings, or that it is off."""
    job = job_name(runs)
    if p.cfg is None:
        if runs == 1:
            return _(
                "**{job}** is off: even one step of the smallest architecture would take longer",
                job=job,
            )
        return _(
            "**{job}** ({runs} runs) is off: even one step of the smallest architecture would "
            "take longer",
            job=job,
            runs=runs,
        )
    change, took = _change_text(cfg, p.cfg), duration_words(p.seconds)
    if runs == 1:
        return _("**{job}** trains {change} in {took}", job=job, change=change, took=took)
    return _(
        "**{job}** ({runs} runs) trains {change} in {took}",
        job=job,
        runs=runs,
        change=change,
        took=took,
    )


def _time_check(
    cfg: TrainConfig, architecture: EncoderConfig, lab: TrainingLab, model: str
) -> dict[int, Plan]:
    """Show the estimates and, where the chosen settings do not fit the time limit, what each
    button trains instead; {runs: its plan} for one run, the comparison and the placement runs."""
    scale = lab.scale or 1.0
    seconds = {runs: training_seconds(cfg, runs, scale) for runs in JOB_RUNS}
    cost = step_cost(cfg)
    weights, tokens = number(cost.parameters), number(cost.tokens)
    basis = (
        _(
            "modelled from {weights} weights x {tokens} tokens per step",
            weights=weights,
            tokens=tokens,
        )
        if lab.scale is None
        else _(
            "modelled from {weights} weights x {tokens} tokens per step, scaled by this "
            "session's last training ({scale}x the model)",
            weights=weights,
            tokens=tokens,
            scale=localised(f"{scale:.2g}"),
        )
    )
    estimates = ", ".join(
        _("**{job}** {took}", job=job_name(runs), took=duration_words(seconds[runs]))
        if runs == 1
        else _(
            "**{job}** ({runs} runs) {took}",
            job=job_name(runs),
            runs=runs,
            took=duration_words(seconds[runs]),
        )
        for runs in JOB_RUNS
    )
    st.caption(_("Estimated time here: {estimates} ({basis}).", estimates=estimates, basis=basis))
    plans = {runs: plan(cfg, architecture, runs, scale) for runs in JOB_RUNS}
    sentence = _plan_sentence(cfg, plans, model, scale)
    if sentence:
        st.info(sentence)
    return plans


def _checkpointing_note(memory: TrainMemory) -> str:
    """What checkpointing saves and costs for one step of this training, measured."""
    kept, checkpointed = memory.saved_bytes / 1e6, memory.saved_bytes_checkpointed / 1e6
    return _(
        "Checkpointing: each step keeps {checkpointed} MB for the backward pass instead of "
        "{kept} MB ({less}x less), and a forward + backward "
        "pass takes {factor}x as long (measured here on this "
        "architecture and batch).",
        checkpointed=number(checkpointed, 2),
        kept=number(kept, 2),
        less=number(kept / max(checkpointed, 1e-9), 1, grouped=False),
        factor=number(memory.checkpointing_time_factor, 2, grouped=False),
    )


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
    training_results.draw_stalls(job.trainers)
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


def race_text(cfg: TrainConfig) -> str:
    """What the race trains from `cfg` (its plan): the two architectures, their parameter
    counts, and what the local window masks at the task's sequence length."""
    runs = race_configs(cfg)
    modern = runs["ModernBERT-style"]
    race = _(
        "**{job}** trains BERT's architecture (post-norm, learned positions, "
        "GELU, biases, global attention) against ModernBERT's (pre-norm, RoPE, GeGLU, no biases "
        "in the linear layers or the norms, a local window of {window}, every "
        "layer whose index is a multiple of {every} global) on {task}, seed "
        "{seed}, the same batches, {layers} layers x {heads} heads, d_model {d_model}.",
        job=job_name(RACE_RUNS),
        window=modern.model.attention_window,
        every=modern.model.global_every,
        task=cfg.task,
        seed=cfg.seed,
        layers=cfg.model.num_layers,
        heads=cfg.model.num_heads,
        d_model=cfg.model.d_model,
    )
    return f"{race} {race_sizes(runs)} {window_sentence(modern)}"


def race_sizes(runs: dict[str, TrainConfig]) -> str:
    """encoder.train.jobs.race_sizes in the run's language: the race's two parameter counts and
    how far apart they are."""
    (bert_name, bert), (modern_name, modern) = runs.items()
    counts = {name: encoder_parameters(run) for name, run in runs.items()}
    apart = counts[modern_name] / counts[bert_name] - 1
    values = dict(
        bert=bert_name,
        bert_count=number(counts[bert_name]),
        bert_d_ff=bert.model.d_ff,
        modern=modern_name,
        modern_count=number(counts[modern_name]),
        modern_d_ff=modern.model.d_ff,
        wide=2 * modern.model.d_ff,
        apart=percent(abs(apart), 2),
    )
    if apart > 0:
        return _(
            "{bert} has {bert_count} encoder parameters (d_ff {bert_d_ff}); {modern} "
            "{modern_count} with d_ff {modern_d_ff} (GeGLU's linear1 is 2 x {modern_d_ff} = "
            "{wide} wide): {apart} more.",
            **values,
        )
    return _(
        "{bert} has {bert_count} encoder parameters (d_ff {bert_d_ff}); {modern} "
        "{modern_count} with d_ff {modern_d_ff} (GeGLU's linear1 is 2 x {modern_d_ff} = "
        "{wide} wide): {apart} fewer.",
        **values,
    )


def _layers(numbers: list[int]) -> str:
    """ "layer 1" or "layers 1, 2 and 4", in the run's language."""
    if len(numbers) == 1:
        return _("layer {layer}", layer=numbers[0])
    return _(
        "layers {layers} and {last}",
        layers=", ".join(str(n) for n in numbers[:-1]),
        last=numbers[-1],
    )


def window_sentence(cfg: TrainConfig) -> str:
    """encoder.train.jobs.window_sentence in the run's language: whether cfg's local window
    masks anything at its task's sequence length, in numbers."""
    encoder = cfg.model
    local = [i for i in range(encoder.num_layers) if encoder.is_local(i)]
    if not local:
        return _("Every layer attends globally.")
    width, reach, T = encoder.attention_window, encoder.attention_window // 2, cfg.seq_len
    masked = window_masked_pairs(cfg)
    global_layers = [i for i in range(encoder.num_layers) if i not in local]
    if masked == 0:
        return _(
            "At sequence length {length}, the window of {width} ({reach} positions either side) "
            "masks nothing: every query already sees every key, so {local} attend as "
            "global ones do.",
            length=T,
            width=width,
            reach=reach,
            local=_layers(local),
        )
    values = dict(
        length=T,
        width=width,
        reach=reach,
        masked=masked,
        pairs=T * T,
        share=percent(masked / (T * T)),
        local=_layers(local),
    )
    if global_layers:
        return _(
            "At sequence length {length}, the window of {width} lets a query see only the keys "
            "within {reach} positions: it masks {masked} of the {pairs} query-key pairs "
            "({share}) in {local}; {others} stay global.",
            others=_layers(global_layers),
            **values,
        )
    return _(
        "At sequence length {length}, the window of {width} lets a query see only the keys "
        "within {reach} positions: it masks {masked} of the {pairs} query-key pairs "
        "({share}) in {local}.",
        **values,
    )


def draw(settings: Settings, lab: TrainingLab, actions: TrainingActions) -> None:
    """The whole Training view (its widget keys start with `train_`) for the sidebar's
    architecture (`settings.cfg`; None, with `settings.error` saying why, when impossible)."""
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
    training_results.draw(job, lab.models or {}, actions)
