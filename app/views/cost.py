"""The Cost view: what a block costs and how gradients flow, measured live on the model in front
of you, next to the formulas.

Four questions, each a figure and a sentence with the measured numbers: which operation takes the
time (against its share of the FLOPs), how the time grows with length (and where attention's n²
overtakes the feed-forward), what training keeps in memory (pre vs post, with and without
checkpointing), and how gradients flow at initialisation (against Xiong et al. 2020). Measuring
runs only while this view is open, within a time budget, once per configuration and text (the
server keeps the reports), with a progress bar while it runs.
"""

from __future__ import annotations

import math

import streamlit as st

from app.charts.cost import (
    gradient_flow_chart,
    light_shares,
    operation_time_chart,
    scaling_chart,
    train_memory_chart,
)
from app.keys import Selection
from app.runs import Run, Runs
from app.views.changes import what_changed
from app.views.layout import show_for, side_by_side
from encoder.measure.gradients import LOSS

BUDGET_S = 60.0  # measuring time of one setup on the page (the command line's default is 120 s)


def _measured(run: Run, name: str, budget_s: float) -> dict | None:
    """The run's cost report as plain rows, measured now (with a progress bar) or remembered."""
    if run.measure_cost is None:
        st.info("This run has no model to measure.")
        return None
    bar = st.progress(0.0, text="Measuring…")

    def progress(what: str, done: float) -> None:
        bar.progress(done, text=f"Measuring {what} ({name or 'this model'})…")

    report = run.measure_cost(budget_s, progress)
    bar.empty()
    return report.to_dict()


def _megabytes(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def _time_sentence(report: dict) -> str:
    slowest = report["slowest_operation"]
    light_time, light_flops = light_shares(report["by_operation"])
    clock = report["clock"].split(" (")[0]
    return (
        f"One forward pass of this batch takes {report['total_ms']:.1f} ms (the median {clock}); "
        f"its operations add up to {report['ops_over_total']:.0%} of it. The "
        f"slowest operation is {slowest['operation']}: {slowest['time_share']:.0%} of the time "
        f"for {slowest['flop_share']:.0%} of the FLOPs, at {slowest['gflops_per_s']:.1f} GFLOP/s. "
        f"The norms, softmax and activation do {light_flops:.1%} of the FLOPs but take "
        f"{light_time:.0%} of the time: they read and write every value and do little with it."
    )


def _scaling_sentence(report: dict) -> str:
    exponents = report["scaling_exponents"]
    fitted = exponents.get("ms", math.nan)
    growth = f"n^{fitted:.2f}" if math.isfinite(fitted) else "(too few lengths to fit)"
    points, crossover = report["scaling"], report["crossover_tokens"]
    longest = points[-1]["tokens"]
    trend = (
        "below the crossover the n·d·d_ff terms dominate, so it stays close to linear"
        if longest < crossover
        else f"past n = {crossover:,} the n² terms dominate, so it grows faster than linear"
    )
    return (
        f"Per layer, attention's scores and weighted sum cost 4·n²·d FLOPs and the feed-forward "
        f"4·n·d·d_ff, so attention overtakes the feed-forward at n = {crossover:,} tokens for "
        f"this architecture (where n = d_ff). Measured from {points[0]['tokens']} to {longest} "
        f"tokens, the time grows like {growth}: {trend}."
    )


def _memory_sentence(report: dict) -> str:
    by_norm = report["train_memory_by_norm"]
    pre, post = by_norm["pre"], by_norm["post"]
    own = report["train_memory"]
    saved = own["saved_bytes"] / max(own["saved_bytes_checkpointed"], 1)
    return (
        f"One forward pass with gradients on keeps {_megabytes(pre['saved_bytes'])} for the "
        f"backward pass in pre-norm and {_megabytes(post['saved_bytes'])} in post-norm (counted "
        f"tensor by tensor, weights left out). Checkpointing every block keeps only the blocks' "
        f"inputs: {_megabytes(own['saved_bytes_checkpointed'])} for this model ({saved:.1f}x "
        f"less), and recomputes each block during the backward pass, which made forward + "
        f"backward {own['ms_checkpointed'] / own['ms']:.2f}x as long here "
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


def _panel(run: Run, name: str, budget_s: float) -> None:
    report = _measured(run, name, budget_s)
    if report is None:
        return
    st.subheader("Time per operation")
    show_for(operation_time_chart(report["by_operation"]), "cost_operations", name)
    st.info(_time_sentence(report))
    st.subheader("Time against length")
    show_for(scaling_chart(report["scaling"], report["crossover_tokens"]), "cost_scaling", name)
    st.info(_scaling_sentence(report))
    st.subheader("Memory for training")
    show_for(train_memory_chart(report["train_memory_by_norm"]), "cost_memory", name)
    st.info(_memory_sentence(report))
    st.subheader("Gradient flow at initialisation")
    _gradients(report, name)
    st.caption(
        f"Measured on {report['device']} in {report['seconds']:.0f} s (at most about "
        f"{budget_s:.0f} s: a tight budget measures fewer repeats, lengths and depths)."
    )


def draw(runs: Runs, chosen: Selection) -> None:
    what_changed(runs)
    budget_s = BUDGET_S / len(runs.named())
    st.caption(
        f"Measured live on this model and text, within about {budget_s:.0f} s per setup; the "
        "result is kept for this configuration, so coming back is instant."
    )
    for name, run in side_by_side(runs):
        _panel(run, name, budget_s)
