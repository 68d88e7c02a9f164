"""The Cost view: what a block costs and how gradients flow, measured live on the model in front
of you, next to the formulas.

Four questions, each a figure and a sentence with the measured numbers: which operation takes the
time (against its share of the FLOPs), how the time grows with length (and where attention's n²
overtakes the feed-forward), what training keeps in memory (pre vs post, with and without
checkpointing), and how gradients flow at initialisation (against Xiong et al. 2020).

The page draws at once what the shapes tell (parameters, FLOPs by operation, memory of the
weights and of training's copies); the measurement runs in a background thread (app.runs.cost_job:
once per architecture, device and budget, so a second visit is instant), and a fragment polls it
with a progress bar until its numbers are drawn, without the user doing anything.
"""

from __future__ import annotations

import math

import streamlit as st

from app.charts.cost import (
    flop_chart,
    gradient_flow_chart,
    light_shares,
    operation_time_chart,
    scaling_chart,
    train_memory_chart,
)
from app.keys import Selection
from app.runs import CostJob, Run, Runs
from app.views.changes import what_changed
from app.views.layout import show_for, side_by_side
from encoder import EncoderConfig
from encoder.core import block
from encoder.inspect.ledger import matmul_flops_by_kind
from encoder.inspect.limits import BYTES_PER_VALUE
from encoder.measure.gradients import LOSS
from encoder.measure.op_times import flops_by_operation

BUDGET_S = 60.0  # measuring time of one setup on the page (the command line's default is 120 s)
POLL_S = 1.0  # how often the page asks a running measurement how far it is (each ask is a
# fragment run, which waits on the measuring thread for the interpreter)
TRAINING_COPIES = 4  # Adam: the weights, their gradients and two moments, each as large


def _megabytes(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def known_sentence(cfg: EncoderConfig, batch: int, tokens: int) -> str:
    """What the shapes tell before anything is measured: parameters, the memory of the weights
    and of training's copies, the FLOPs of one forward pass and their parts."""
    ops = block.model_ops(cfg, batch, tokens)
    parameters = sum(op.params for op in ops)
    flops = sum(op.total_flops for op in ops)
    parts = matmul_flops_by_kind(ops)
    shares = {kind: value / flops for kind, value in parts.items()}
    rest = 1 - sum(shares.values())
    weights = BYTES_PER_VALUE * parameters
    return (
        f"This architecture has {parameters:,} parameters: {_megabytes(weights)} as float32, and "
        f"{_megabytes(TRAINING_COPIES * weights)} to train it with Adam (weights, gradients and "
        f"two moments). One forward pass of this batch ({batch} × {tokens} tokens, padding "
        f"included) does {flops:,} FLOPs: projections {shares['projection']:.1%}, attention's "
        f"scores and weighted sum {shares['attention']:.1%}, the feed-forward "
        f"{shares['feed-forward']:.1%}, the rest (norms, softmax, activation, adds) {rest:.1%}."
    )


def time_sentence(report: dict, status_batch: tuple[int, int]) -> str:
    """The measured forward pass and the operations' sum, each named for what it measures."""
    slowest = report["slowest_operation"]
    light_time, light_flops = light_shares(report["by_operation"])
    clock = report["clock"].split(" (")[0]
    batch, tokens = report["batch"]
    where = (
        "this batch"
        if (batch, tokens) == tuple(status_batch)
        else "the text that was in the box when this architecture was first measured"
    )
    ratio = report["ops_over_total"]
    light = (
        f"but take {light_time:.0%} of the time: they read and write every value and do little "
        "with it"
        if light_time > light_flops
        else f"and take {light_time:.0%} of the time"
    )
    return (
        f"A forward pass without hooks of {batch} × {tokens} tokens ({where}) takes "
        f"{report['total_ms']:.1f} ms: the median of {report['repeats']} timed passes "
        f"({clock}). The status line's traced forward pass is another measure: one pass of the "
        "text in the box with the inspection hooks capturing every tensor, timed once when its "
        "run was made (a single pass, so it varies more than a median). Timed operation by "
        f"operation (a timing hook after each, medians of {report['repeats']} passes with them), "
        f"the operations add up to {report['ops_ms']:.1f} ms, {ratio:.0%} of the pass without "
        "hooks: the two come from different passes (with and without the timing hooks) and "
        "a sum of medians is not the median of a sum, so they need not agree exactly. "
        "The chart's shares are of the operations' sum. The slowest operation is "
        f"{slowest['operation']}: {slowest['time_share']:.0%} of that sum for "
        f"{slowest['flop_share']:.0%} of the FLOPs, at {slowest['gflops_per_s']:.1f} GFLOP/s. "
        f"The norms, softmax and activation do {light_flops:.1%} of the FLOPs {light}."
    )


def scaling_sentence(report: dict) -> str:
    exponents = report["scaling_exponents"]
    fitted = exponents.get("ms", math.nan)
    growth = f"n^{fitted:.2f}" if math.isfinite(fitted) else "(too few lengths to fit)"
    points, crossover = report["scaling"], report["crossover_tokens"]
    longest = points[-1]["tokens"]
    if not math.isfinite(fitted):
        trend = ""
    elif fitted > 1.1:
        trend = ", faster than linear"
    elif fitted < 0.9:
        trend = ", slower than linear (fixed costs still weigh at these lengths)"
    else:
        trend = ", about linear"
    side = "below" if longest < crossover else "past"
    return (
        f"Per layer, attention's scores and weighted sum cost 4·n²·d FLOPs and the feed-forward "
        f"4·n·d·d_ff, so attention overtakes the feed-forward at n = {crossover:,} tokens for "
        f"this architecture (where n = d_ff). Measured from {points[0]['tokens']} to {longest} "
        f"tokens, the time grows like {growth}{trend}; by FLOPs, {longest} tokens is {side} "
        "the crossover."
    )


def memory_sentence(report: dict) -> str:
    by_norm = report["train_memory_by_norm"]
    pre, post = by_norm["pre"], by_norm["post"]
    own = report["train_memory"]
    kept = own["saved_bytes_checkpointed"] / max(own["saved_bytes"], 1)
    return (
        f"One forward pass with gradients on keeps {_megabytes(pre['saved_bytes'])} for the "
        f"backward pass in pre-norm and {_megabytes(post['saved_bytes'])} in post-norm (counted "
        f"tensor by tensor, weights left out). Checkpointing every block keeps only the blocks' "
        f"inputs: {_megabytes(own['saved_bytes_checkpointed'])} for this model ({kept:.0%} of "
        "the plain pass's), and recomputes each block during the backward pass, which made "
        f"forward + backward {own['ms_checkpointed'] / own['ms']:.2f}x as long here "
        f"({own['ms']:.1f} → {own['ms_checkpointed']:.1f} ms)."
    )


def _gradients(report: dict, name: str) -> None:
    show_for(
        gradient_flow_chart(report["grad_norms_by_norm"], report["last_w2_by_depth"]),
        "cost_gradients",
        name,
    )
    st.caption(
        f'Loss: {LOSS}; averaged over several seeds and batches. Xiong et al. (2020), "On Layer '
        "Normalization in the Transformer Architecture\": post-norm's gradient is largest near "
        "the output and does not depend on depth; pre-norm's is about flat across layers and "
        "shrinks like 1/sqrt(L)."
    )
    lines = [
        f"- **{'Agrees' if finding['agrees'] else 'Differs'}.** The paper: {finding['claim']} "
        f"This model: {finding['measured']}"
        for finding in report["findings"]
    ]
    st.markdown("\n".join(lines))  # our own sentences, no user text


def _measured(job: CostJob, run: Run, name: str, budget_s: float, polling: bool) -> None:
    """The measured part: a progress bar while the background measurement runs (this fragment
    polls it), then its four figures and sentences; once it is done, the page reruns whole so
    that the polling stops."""
    if not job.finished:
        st.progress(
            job.done,
            text=f"Measuring {job.what} ({name or 'this model'}) in the background: the "
            "measured numbers appear here when they are ready…",
        )
        return
    if polling:
        st.rerun(scope="app")
    if job.error is not None:
        st.error(f"The measurement failed: {job.error}")
        return
    report = job.report.to_dict()
    sections = st.tabs(list(SECTIONS), key=f"cost_section_{name or 'A'}", on_change="rerun")
    for tab, (heading, draw_section) in zip(sections, SECTIONS.items(), strict=True):
        if tab.open:  # only the open tab is computed and sent
            with tab:
                st.header(heading)
                draw_section(report, run, name)
    st.caption(
        f"Measured on {report['device']} in {report['seconds']:.0f} s (at most about "
        f"{budget_s:.0f} s: a tight budget measures fewer repeats, lengths and depths)."
    )


def _time_section(report: dict, run: Run, name: str) -> None:
    show_for(operation_time_chart(report["by_operation"]), "cost_operations", name)
    st.info(time_sentence(report, run.input_ids.shape))


def _scaling_section(report: dict, run: Run, name: str) -> None:
    show_for(scaling_chart(report["scaling"], report["crossover_tokens"]), "cost_scaling", name)
    st.info(scaling_sentence(report))


def _memory_section(report: dict, run: Run, name: str) -> None:
    show_for(train_memory_chart(report["train_memory_by_norm"]), "cost_memory", name)
    st.info(memory_sentence(report))


def _gradient_section(report: dict, run: Run, name: str) -> None:
    _gradients(report, name)


SECTIONS = {  # the measured part's tabs: heading -> what draws it
    "Time per operation": _time_section,
    "Time against length": _scaling_section,
    "Memory for training": _memory_section,
    "Gradient flow at initialisation": _gradient_section,
}


def _panel(run: Run, name: str, budget_s: float) -> None:
    """The measurement's fragment (a progress bar until its numbers are ready, then them); below
    it, drawn at once, what the shapes tell."""
    batch, tokens = run.input_ids.shape
    if run.measure_cost is None:
        st.info("This run has no model to measure.")
    else:
        job = run.measure_cost(budget_s)
        polling = not job.finished
        st.fragment(_measured, run_every=POLL_S if polling else None)(
            job, run, name, budget_s, polling
        )
    st.header("What the shapes tell")
    st.info(known_sentence(run.cfg, batch, tokens))
    show_for(flop_chart(flops_by_operation(run.cfg, batch, tokens)), "cost_flops", name)


def draw(runs: Runs, chosen: Selection) -> None:
    what_changed(runs)
    budget_s = BUDGET_S / len(runs.named())
    st.caption(
        "What the shapes tell is drawn at once. The time, memory and gradients are measured live "
        f"on this architecture in the background, within about {budget_s:.0f} s per setup, once "
        "per architecture and device: coming back is instant."
    )
    for name, run in side_by_side(runs):
        _panel(run, name, budget_s)
