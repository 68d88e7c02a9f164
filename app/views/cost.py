"""The Cost view: what a block costs and how gradients flow, measured live on the model in front
of you, next to the formulas.

Four questions, each a figure and a sentence with the measured numbers: which operation takes the
time (against its share of the FLOPs), how the time grows with length (and where attention's n²
overtakes the feed-forward), what training keeps in memory (pre vs post, with and without
checkpointing), and how gradients flow at initialisation (against Xiong et al. 2020).

The page draws at once what the shapes tell (parameters, FLOPs by operation, memory of the
weights and of training's copies); the measurement runs in a background thread (app.jobs.cost_job:
once per architecture, device and budget, so a second visit is instant), and a fragment polls it
with a progress bar until its numbers are drawn, without the user doing anything.
"""

from __future__ import annotations

import math

import streamlit as st

from app.charts.cost import flop_chart, light_shares, operation_time_chart, scaling_chart
from app.charts.training_cost import gradient_flow_chart, train_memory_chart
from app.i18n import N_, _, number, percent, told
from app.jobs import CostJob
from app.keys import Key, Selection
from app.page.changes import what_changed
from app.page.layout import operations_named, show_for, side_by_side
from app.runs import Run, Runs
from encoder import EncoderConfig
from encoder.core import block
from encoder.inspect.ledger import matmul_flops_by_kind
from encoder.inspect.limits import BYTES_PER_VALUE
from encoder.measure.op_times import flops_by_operation

BUDGET_S = 60.0  # measuring time of one setup on the page (the command line's default is 120 s)
POLL_S = 1.0  # how often the page asks a running measurement how far it is (each ask is a
# fragment run, which waits on the measuring thread for the interpreter)
TRAINING_COPIES = 4  # Adam: the weights, their gradients and two moments, each as large


def _megabytes(n: float) -> str:
    return f"{number(n / 1e6, 2)} MB"


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
    return _(
        "This architecture has {parameters} parameters: {weights} as float32, and "
        "{training} to train it with Adam (weights, gradients and "
        "two moments). One forward pass of this batch ({batch} × {tokens} tokens, padding "
        "included) does {flops} FLOPs: projections {projection}, attention's "
        "scores and weighted sum {attention}, the feed-forward "
        "{feed_forward}, the rest (norms, softmax, activation, adds) {rest}.",
        parameters=number(parameters),
        weights=_megabytes(weights),
        training=_megabytes(TRAINING_COPIES * weights),
        batch=batch,
        tokens=tokens,
        flops=number(flops),
        projection=percent(shares["projection"], 1),
        attention=percent(shares["attention"], 1),
        feed_forward=percent(shares["feed-forward"], 1),
        rest=percent(rest, 1),
    )


def time_sentence(report: dict, status_batch: tuple[int, int]) -> str:
    """The measured forward pass and the operations' sum, each named for what it measures."""
    slowest = report["slowest_operation"]
    clock = _(report["clock"].split(" (")[0])  # encoder.measure.timing.CLOCK_NAMES's, marked there
    batch, tokens = report["batch"]
    where = (
        _("this batch")
        if (batch, tokens) == tuple(status_batch)
        else _("the text that was in the box when this architecture was first measured")
    )
    ratio = report["ops_over_total"]
    sentences = (
        _(
            "A forward pass without hooks of {batch} × {tokens} tokens ({where}) takes "
            "{ms} ms: the median of {repeats} timed passes ({clock}).",
            batch=batch,
            tokens=tokens,
            where=where,
            ms=number(report["total_ms"], 1, grouped=False),
            repeats=report["repeats"],
            clock=clock,
        ),
        _(
            "The status line's traced forward pass (Show timings, in the sidebar) is another "
            "measure: one pass of the text in the box with the inspection hooks capturing every "
            "tensor, timed once when its run was made (a single pass, so it varies more than a "
            "median)."
        ),
        _(
            "Timed operation by operation (a timing hook after each, medians of {repeats} "
            "passes with them), the operations add up to {ms} ms, {ratio} of the pass without "
            "hooks: the two come from different passes (with and without the timing hooks) and "
            "a sum of medians is not the median of a sum, so they need not agree exactly.",
            repeats=report["repeats"],
            ms=number(report["ops_ms"], 1, grouped=False),
            ratio=percent(ratio),
        ),
        _("The chart's shares are of the operations' sum."),
        _(
            "The slowest operation is {operation}: {time} of that sum for "
            "{flops} of the FLOPs, at {rate} GFLOP/s.",
            operation=slowest["operation"],
            time=percent(slowest["time_share"]),
            flops=percent(slowest["flop_share"]),
            rate=number(slowest["gflops_per_s"], 1, grouped=False),
        ),
        _light_sentence(report),
    )
    return " ".join(sentences)


def _light_sentence(report: dict) -> str:
    """The light operations' (norms, softmax, activation) share of the FLOPs against the time."""
    light_time, light_flops = light_shares(report["by_operation"])
    return (
        _(
            "The norms, softmax and activation do {flops} of the FLOPs but take {time} of the "
            "time: they read and write every value and do little with it.",
            flops=percent(light_flops, 1),
            time=percent(light_time),
        )
        if light_time > light_flops
        else _(
            "The norms, softmax and activation do {flops} of the FLOPs and take {time} of the "
            "time.",
            flops=percent(light_flops, 1),
            time=percent(light_time),
        )
    )


def scaling_sentence(report: dict) -> str:
    exponents = report["scaling_exponents"]
    fitted = exponents.get("ms", math.nan)
    growth = (
        f"n^{number(fitted, 2, grouped=False)}"
        if math.isfinite(fitted)
        else _("(too few lengths to fit)")
    )
    points, crossover = report["scaling"], report["crossover_tokens"]
    longest = points[-1]["tokens"]
    if not math.isfinite(fitted):
        trend = ""
    elif fitted > 1.1:
        trend = _(", faster than linear")
    elif fitted < 0.9:
        trend = _(", slower than linear (fixed costs still weigh at these lengths)")
    else:
        trend = _(", about linear")
    crossing = _(
        "Per layer, attention's scores and weighted sum cost 4·n²·d FLOPs and the feed-forward "
        "4·n·d·d_ff, so attention overtakes the feed-forward at n = {crossover} tokens for "
        "this architecture (where n = d_ff).",
        crossover=number(crossover),
    )
    measured = (
        _(
            "Measured from {first} to {longest} tokens, the time grows like {growth}{trend}; by "
            "FLOPs, {longest} tokens is below the crossover.",
            first=points[0]["tokens"],
            longest=longest,
            growth=growth,
            trend=trend,
        )
        if longest < crossover
        else _(
            "Measured from {first} to {longest} tokens, the time grows like {growth}{trend}; by "
            "FLOPs, {longest} tokens is past the crossover.",
            first=points[0]["tokens"],
            longest=longest,
            growth=growth,
            trend=trend,
        )
    )
    return f"{crossing} {measured}"


def memory_sentence(report: dict) -> str:
    by_norm = report["train_memory_by_norm"]
    pre, post = by_norm["pre"], by_norm["post"]
    own = report["train_memory"]
    kept = own["saved_bytes_checkpointed"] / max(own["saved_bytes"], 1)
    return _(
        "One forward pass with gradients on keeps {pre} for the "
        "backward pass in pre-norm and {post} in post-norm (counted "
        "tensor by tensor, weights left out). Checkpointing every block keeps only the blocks' "
        "inputs: {checkpointed} for this model ({kept} of "
        "the plain pass's), and recomputes each block during the backward pass, which made "
        "forward + backward {factor}x as long here "
        "({plain_ms} → {checkpointed_ms} ms).",
        pre=_megabytes(pre["saved_bytes"]),
        post=_megabytes(post["saved_bytes"]),
        checkpointed=_megabytes(own["saved_bytes_checkpointed"]),
        kept=percent(kept),
        factor=number(own["ms_checkpointed"] / own["ms"], 2, grouped=False),
        plain_ms=number(own["ms"], 1, grouped=False),
        checkpointed_ms=number(own["ms_checkpointed"], 1, grouped=False),
    )


def _gradients(report: dict, name: str) -> None:
    show_for(
        gradient_flow_chart(report["grad_norms_by_norm"], report["last_w2_by_depth"]),
        "cost_gradients",
        name,
    )
    st.caption(
        _(
            "Loss: {loss}; averaged over several seeds and batches. Xiong et al. (2020), "
            '"On Layer Normalization in the Transformer Architecture": post-norm\'s gradient is '
            "largest near the output and does not depend on depth; pre-norm's is about flat "
            "across layers and shrinks like 1/sqrt(L).",
            loss=_(
                "mean squared error between the encoder's output and standard-normal targets "
                "(F.mse_loss, mean over batch, tokens and features), random token ids"
            ),
        )
    )
    lines = [
        "- "
        + (
            _(
                "**Agrees.** The paper: {claim} This model: {measured}",
                claim=finding["claim"],
                measured=finding["measured"],
            )
            if finding["agrees"]
            else _(
                "**Differs.** The paper: {claim} This model: {measured}",
                claim=finding["claim"],
                measured=finding["measured"],
            )
        )
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
            text=_(
                "Measuring {what} ({name}) in the background: the "
                "measured numbers appear here when they are ready…",
                what=_(job.what),
                name=name or _("this model"),
            ),
        )
        return
    if polling:
        st.rerun(scope="app")
    if job.error is not None:
        st.error(_("The measurement failed: {error}", error=told(job.error)))
        return
    report = job.report.to_dict()
    labels = section_labels()
    sections = st.tabs(labels, key=f"cost_section_{name or 'A'}", on_change="rerun")
    for tab, label, draw_section in zip(sections, labels, SECTIONS.values(), strict=True):
        if tab.open:  # only the open tab is computed and sent
            with tab:
                st.header(label)
                draw_section(report, run, name)
    st.caption(
        _(
            "Measured on {device} in {seconds} s (at most about "
            "{budget} s: a tight budget measures fewer repeats, lengths and depths).",
            device=report["device"],
            seconds=number(report["seconds"], 0, grouped=False),
            budget=number(budget_s, 0, grouped=False),
        )
    )


def _time_section(report: dict, run: Run, name: str) -> None:
    (slowest,) = operations_named([report["slowest_operation"]], run.cfg)
    named = report | {"by_operation": operations_named(report["by_operation"], run.cfg),
                      "slowest_operation": slowest}  # fmt: skip
    show_for(operation_time_chart(named["by_operation"]), "cost_operations", name)
    st.info(time_sentence(named, run.input_ids.shape))


def _scaling_section(report: dict, run: Run, name: str) -> None:
    show_for(scaling_chart(report["scaling"], report["crossover_tokens"]), "cost_scaling", name)
    st.info(scaling_sentence(report))


def _memory_section(report: dict, run: Run, name: str) -> None:
    show_for(train_memory_chart(report["train_memory_by_norm"]), "cost_memory", name)
    st.info(memory_sentence(report))


def _gradient_section(report: dict, run: Run, name: str) -> None:
    _gradients(report, name)


SECTIONS = {  # the measured part's tabs: heading (English, a key) -> what draws it
    N_("Time per operation"): _time_section,
    N_("Time against length"): _scaling_section,
    N_("Memory for training"): _memory_section,
    N_("Gradient flow at initialisation"): _gradient_section,
}


def section_labels() -> list[str]:
    """The measured part's tabs' labels, in their order and the run's language."""
    return [_(heading) for heading in SECTIONS]


# The open tab of each setup's measured part (A, and B beside it)
KEYS = tuple(Key(f"cost_section_{setup}", labels=section_labels) for setup in "AB")


def _panel(run: Run, name: str, budget_s: float) -> None:
    """The measurement's fragment (a progress bar until its numbers are ready, then them); below
    it, drawn at once, what the shapes tell."""
    batch, tokens = run.input_ids.shape
    if run.measure_cost is None:
        st.info(_("This run has no model to measure."))
    else:
        job = run.measure_cost(budget_s)
        polling = not job.finished
        st.fragment(_measured, run_every=POLL_S if polling else None)(
            job, run, name, budget_s, polling
        )
    st.header(_("What the shapes tell"))
    st.info(known_sentence(run.cfg, batch, tokens))
    rows = operations_named(flops_by_operation(run.cfg, batch, tokens), run.cfg)
    show_for(flop_chart(rows), "cost_flops", name)


def draw(runs: Runs, chosen: Selection) -> None:
    what_changed(runs)
    budget_s = BUDGET_S / len(runs.named())
    st.caption(
        _(
            "What the shapes tell is drawn at once. The time, memory and gradients are measured "
            "live on this architecture in the background, within about {budget} s per setup, "
            "once per architecture and device: coming back is instant.",
            budget=number(budget_s, 0, grouped=False),
        )
    )
    for name, run in side_by_side(runs):
        _panel(run, name, budget_s)
