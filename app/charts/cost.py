"""Figures of the Cost view: the measured numbers of encoder.measure.cost in, plotly Figure out.

The inputs are the plain rows of `CostReport.to_dict()` (or of `python -m encoder profile
--json`), so the figures also draw a saved report in a notebook:

- `flop_chart(flops_by_operation(cfg, B, T))`: each operation's share of the FLOPs, known from
  the shapes before anything is measured;
- `operation_time_chart(report["by_operation"])`: each operation's share of the operations'
  summed time beside its share of the FLOPs, slowest first;
- `scaling_chart(report["scaling"], report["crossover_tokens"])`: measured ms against tokens,
  log-log, with the attention (n^2 d) and feed-forward (n d d_ff) curves and their crossover;
- `train_memory_chart(report["train_memory_by_norm"])`: bytes kept for backward, pre vs post,
  plain vs checkpointed;
- `gradient_flow_chart(report["grad_norms_by_norm"], report["last_w2_by_depth"])`: per-layer W2
  gradient norms, pre vs post, and the last layer's against depth beside 1/sqrt(L).

Built for a projector: few colours, large text, titles that say what the chart shows.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from app.charts.common import (
    FONT_SIZE,
    MARGIN,
    SERIES_COLOURS,
    base_spec,
    escape,
    new_figure,
    subtitled,
)
from app.i18n import _, number, percent
from encoder.inspect.measures import log_log_slope

PLACEMENT_COLOURS = {"pre": SERIES_COLOURS[0], "post": SERIES_COLOURS[1]}
TIME_COLOUR, FLOP_COLOUR = SERIES_COLOURS[0], "#B0B0B0"
PLAIN_COLOUR, CHECKPOINTED_COLOUR = SERIES_COLOURS[4], SERIES_COLOURS[2]
REFERENCE_LINE = dict(color="grey", dash="dash", width=2)
LARGE_FONT = FONT_SIZE + 4  # axis titles and labels read from the back of a room
SPLIT_PATTERN = dict(fgcolor="white", solidity=0.3)  # hatching: time split by FLOPs
REFERENCE_POINTS = 40  # points per reference curve
LIGHT_KINDS = ("norm", "softmax", "activation")  # few FLOPs, but every value read and written


def light_shares(by_operation: list[dict]) -> tuple[float, float]:
    """The norms', softmax's and activation's share of the time and of the FLOPs, together."""
    light = [row for row in by_operation if row["kind"] in LIGHT_KINDS]
    return sum(row["time_share"] for row in light), sum(row["flop_share"] for row in light)


def _spec(title: str, height: int, **layout) -> dict:
    """The app's layout (base_spec) with larger text and the legend under the plot, and
    `layout`'s keys."""
    spec = base_spec(title, height)
    return {
        **spec,
        "title": {**spec["title"], "font": {"size": LARGE_FONT + 2}},
        "font": {"size": LARGE_FONT},
        "margin": {**MARGIN, "t": 90, "b": 110},
        "legend": {"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0, "xanchor": "left"},
        **layout,
    }


def cost_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    """_spec's layout on a figure built with plotly's objects."""
    return fig.update_layout(_spec(title, height))


def _time_title(rows: list[dict]) -> str:
    """The time chart's title: the slowest operation's share of the time and of the FLOPs, and
    the light operations' (rows sorted by their share of the time)."""
    slowest = rows[-1]
    light_time, light_flops = light_shares(rows)
    return subtitled(
        _(
            "Time per operation: {operation} takes {time} of the summed time for {flops} of the "
            "FLOPs",
            operation=escape(slowest["operation"]),
            time=percent(slowest["time_share"]),
            flops=percent(slowest["flop_share"]),
        ),
        _(
            "norms, softmax and activation: {time} of the time for {flops} of the FLOPs. All "
            "layers together; hatched: split by FLOPs",
            time=percent(light_time),
            flops=percent(light_flops, 1),
        ),
    )


def operation_time_chart(by_operation: list[dict]) -> go.Figure:
    """Horizontal bars, slowest operation on top: its share of the forward pass's time beside its
    share of the FLOPs (all layers together). Operations whose time was split from a fused kernel
    by FLOPs are hatched."""
    rows = sorted(by_operation, key=lambda row: row["time_share"])  # plotly draws bottom-up
    names = [escape(row["operation"]) for row in rows]
    time_share = np.round([100 * row["time_share"] for row in rows], 2)
    flop_share = np.round([100 * row["flop_share"] for row in rows], 2)
    split = "<br>" + _("time split from a fused kernel by FLOPs")
    detail = [
        [number(row["ms"], 3, grouped=False), number(row["gflops_per_s"], 1, grouped=False),
         "" if row["measured"] else split]
        for row in rows
    ]  # fmt: skip
    time_bars = {
        "type": "bar",
        "y": names,
        "x": time_share,
        "orientation": "h",
        "name": _("share of the time (measured)"),
        "marker": {
            "color": TIME_COLOUR,
            "pattern": SPLIT_PATTERN | {"shape": ["" if row["measured"] else "/" for row in rows]},
        },
        "text": [f"{share:.0f}%" for share in time_share],
        "textposition": "outside",
        "textfont": {"size": LARGE_FONT},
        "customdata": detail,
        "hovertemplate": _("%{y}<br>%{x:.1f}% of the time, %{customdata[0]} ms<br>")
        + "%{customdata[1]} GFLOP/s%{customdata[2]}<extra></extra>",
    }
    flop_bars = {
        "type": "bar",
        "y": names,
        "x": flop_share,
        "orientation": "h",
        "name": _("share of the FLOPs"),
        "marker": {"color": FLOP_COLOUR},
        "hovertemplate": _("%{y}<br>%{x:.1f}% of the FLOPs") + "<extra></extra>",
    }
    axes = {
        "barmode": "group",
        "bargap": 0.25,
        "xaxis": {
            "title": {"text": _("% of the operations' summed time, % of the FLOPs")},
            "ticksuffix": "%",
            "range": [0, 1.2 * max(time_share.max(), flop_share.max())],  # room for the labels
        },
        "yaxis": {"automargin": True},
    }
    title = _time_title(rows)
    layout = _spec(title, 180 + 46 * len(rows), **axes)
    layout["legend"]["traceorder"] = "reversed"  # the time's bar and legend entry first
    return new_figure([flop_bars, time_bars], layout)


def flop_chart(by_operation: list[dict]) -> go.Figure:
    """Horizontal bars, most FLOPs on top: each operation's share of one forward pass's FLOPs
    (all layers together), from the shapes alone (encoder.measure.op_times.flops_by_operation)."""
    rows = sorted(by_operation, key=lambda row: row["flop_share"])  # plotly draws bottom-up
    shares = np.round([100 * row["flop_share"] for row in rows], 2)
    bars = {
        "type": "bar",
        "y": [escape(row["operation"]) for row in rows],
        "x": shares,
        "orientation": "h",
        "name": _("share of the FLOPs"),
        "marker": {"color": TIME_COLOUR},
        "text": [f"{share:.1f}%" for share in shares],
        "textposition": "outside",
        "textfont": {"size": LARGE_FONT},
        "customdata": [number(row["flops"]) for row in rows],
        "hovertemplate": _("%{y}<br>%{x:.1f}% of the FLOPs, %{customdata} FLOPs")
        + "<extra></extra>",
    }
    axes = {
        "xaxis": {
            "title": {"text": _("% of the FLOPs")},
            "ticksuffix": "%",
            "range": [0, 1.2 * shares.max()],
        },
        "yaxis": {"automargin": True},
        "showlegend": False,
    }
    most = rows[-1]
    title = subtitled(
        _(
            "FLOPs per operation: {operation} does {share} of them",
            operation=escape(most["operation"]),
            share=percent(most["flop_share"]),
        ),
        _("from the shapes, before any timing; all layers together"),
    )
    return new_figure([bars], _spec(title, 180 + 30 * len(rows), **axes))


def _reference_curves(points: list[dict], crossover: int) -> tuple[np.ndarray, dict[str, list]]:
    """Token counts from the first measured length to past the crossover, and the attention and
    feed-forward FLOPs there turned into ms at the rate of the longest measured run."""
    first, last = points[0], points[-1]
    ms_per_flop = last["ms"] / last["flops"]
    top = max(last["tokens"], 2 * crossover)
    tokens = np.geomspace(first["tokens"], top, REFERENCE_POINTS)
    scale = tokens / first["tokens"]
    return tokens, {
        "attention": first["attention_flops"] * scale**2 * ms_per_flop,
        "ffn": first["ffn_flops"] * scale * ms_per_flop,
    }


def scaling_chart(points: list[dict], crossover_tokens: int) -> go.Figure:
    """Measured forward ms against tokens (log-log), with attention's n^2 d and the
    feed-forward's n d d_ff costs at the measured rate, and the length where they cross."""
    tokens, curves = _reference_curves(points, crossover_tokens)
    measured = go.Scatter(
        x=[p["tokens"] for p in points],
        y=np.round([p["ms"] for p in points], 4),
        mode="lines+markers",
        name=_("measured forward pass"),
        line=dict(color=TIME_COLOUR, width=4),
        marker=dict(size=12),
        hovertemplate=_("%{x} tokens<br>%{y:.2f} ms") + "<extra></extra>",
    )
    references = [
        go.Scatter(
            x=np.round(tokens, 2),
            y=np.round(curves[key], 6),
            mode="lines",
            name=name,
            line=dict(color=colour, dash=dash, width=3),
            hovertemplate=f"{name}<br>" + _("%{x:.0f} tokens: %{y:.3g} ms") + "<extra></extra>",
        )
        for key, name, colour, dash in (
            ("attention", _("attention n²·d (at the measured rate)"), SERIES_COLOURS[4], "dash"),
            ("ffn", _("feed-forward n·d·d_ff (at the measured rate)"), SERIES_COLOURS[2], "dot"),
        )
    ]
    fig = new_figure([measured, *references])
    fig.add_vline(x=crossover_tokens, line=REFERENCE_LINE)
    fig.add_annotation(
        x=math.log10(crossover_tokens),
        y=1,
        yref="paper",
        text=f"n = {number(crossover_tokens)}",
        showarrow=False,
        xanchor="left",
        yanchor="top",
        font=dict(size=LARGE_FONT),
    )
    ticks = sorted({p["tokens"] for p in points} | {crossover_tokens})
    fig.update_layout(
        xaxis=dict(type="log", title_text=_("tokens n (log scale)"), tickvals=ticks),
        yaxis=dict(type="log", title_text=_("ms (log scale)"), dtick=1),
    )
    exponent = log_log_slope([p["tokens"] for p in points], [p["ms"] for p in points])
    title = subtitled(
        _(
            "Cost against length: attention overtakes the feed-forward at n = {crossover}",
            crossover=number(crossover_tokens),
        ),
        _(
            "measured time grows like n^{exponent} from {first} to {last} tokens; FLOPs: n²·d "
            "for attention, n·d·d_ff for the feed-forward",
            exponent=number(exponent, 2, grouped=False),
            first=points[0]["tokens"],
            last=points[-1]["tokens"],
        ),
    )
    return cost_layout(fig, title, height=620)
