"""The Training view's plan: how long each button's job would take here (encoder.train.duration),
and, where the chosen settings are over MAX_TRAINING_SECONDS, what each button trains instead (the
nearest architecture that fits, or fewer steps), said in one sentence with the numbers; what the
race trains, and what checkpointing saves; the architecture in words."""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from app.i18n import _, localised, number, told
from app.page.training import JOB_RUNS, RACE_RUNS, TrainingLab, job_name
from app.settings import D_FF_CHOICES, D_MODEL_CHOICES, say
from encoder.core.config import EncoderConfig
from encoder.measure.train_memory import TrainMemory
from encoder.train.config import TrainConfig, trainable
from encoder.train.duration import (
    MAX_TRAINING_SECONDS,
    affordable_steps,
    duration_text,
    nearest_fitting,
    seconds_text,
    step_cost,
    training_seconds,
)
from encoder.train.findings import race_sizes, window_sentence
from encoder.train.jobs import race_configs


def norm_name(norm_first: bool) -> str:
    """'pre-norm' or 'post-norm', in the run's language."""
    return _("pre-norm") if norm_first else _("post-norm")


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
    took, limit = (
        told(duration_text(seconds)),
        _("{minutes} min", minutes=MAX_TRAINING_SECONDS // 60),
    )
    if duration_text(seconds) == f"about {MAX_TRAINING_SECONDS // 60} min":  # just over: in
        # whole minutes it would read as the limit
        took = told(seconds_text(seconds))
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
    change, took = _change_text(cfg, p.cfg), told(duration_text(p.seconds))
    if runs == 1:
        return _("**{job}** trains {change} in {took}", job=job, change=change, took=took)
    return _(
        "**{job}** ({runs} runs) trains {change} in {took}",
        job=job,
        runs=runs,
        change=change,
        took=took,
    )


def time_check(
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
        _("**{job}** {took}", job=job_name(runs), took=told(duration_text(seconds[runs])))
        if runs == 1
        else _(
            "**{job}** ({runs} runs) {took}",
            job=job_name(runs),
            runs=runs,
            took=told(duration_text(seconds[runs])),
        )
        for runs in JOB_RUNS
    )
    st.caption(_("Estimated time here: {estimates} ({basis}).", estimates=estimates, basis=basis))
    plans = {runs: plan(cfg, architecture, runs, scale) for runs in JOB_RUNS}
    sentence = _plan_sentence(cfg, plans, model, scale)
    if sentence:
        st.info(sentence)
    return plans


def checkpointing_note(memory: TrainMemory) -> str:
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
    return f"{race} {told(race_sizes(runs))} {told(window_sentence(modern))}"
