"""What training costs, measured on the live model: the bytes autograd keeps for the backward pass
(pre- and post-norm, plain and with every block checkpointed) and the gradients at
initialisation, layer by layer and against depth (app.views.cost)."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.common import new_figure, subtitled
from app.charts.cost import (
    CHECKPOINTED_COLOUR,
    LARGE_FONT,
    PLACEMENT_COLOURS,
    PLAIN_COLOUR,
    REFERENCE_LINE,
    cost_layout,
)
from app.i18n import _, localised, number
from encoder.inspect.measures import log_log_slope


def _byte_unit(largest: float) -> tuple[float, str]:
    for size, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if largest >= size:
            return size, unit
    return 1.0, _("bytes")


def train_memory_chart(memory: dict[str, dict]) -> go.Figure:
    """Bytes autograd keeps for backward after one forward pass, pre- and post-norm, plain and
    with every block checkpointed; the time checkpointing costs in the title and hover."""
    placements = list(memory)
    size, unit = _byte_unit(max(m["saved_bytes"] for m in memory.values()))
    bars = []
    for key, name, colour, ms_key, peak_key in (
        ("saved_bytes", _("plain"), PLAIN_COLOUR, "ms", "cuda_peak_bytes"),
        ("saved_bytes_checkpointed", _("every block checkpointed"), CHECKPOINTED_COLOUR,
         "ms_checkpointed", "cuda_peak_bytes_checkpointed"),
    ):  # fmt: skip
        values = [memory[p][key] / size for p in placements]
        peaks = [memory[p].get(peak_key) for p in placements]
        hover = [
            _("forward + backward {ms} ms", ms=number(memory[p][ms_key], 1, grouped=False))
            + (
                ""
                if peak is None
                else "<br>"
                + _("CUDA peak {peak} {unit}", peak=localised(f"{peak / size:.3g}"), unit=unit)
            )
            for p, peak in zip(placements, peaks, strict=True)
        ]
        bars.append(
            go.Bar(
                x=[_("pre-norm") if p == "pre" else _("post-norm") for p in placements],
                y=np.round(values, 4),
                name=name,
                marker_color=colour,
                text=[f"{localised(f'{v:.3g}')} {unit}" for v in values],
                textposition="outside",
                textfont_size=LARGE_FONT,
                customdata=hover,
                hovertemplate=f"%{{x}}, {name}<br>"
                + _("{value} {unit} saved", value="%{y:.3g}", unit=unit)
                + "<br>%{customdata}<extra></extra>",
            )
        )
    fig = new_figure(bars)
    fig.update_layout(
        barmode="group",
        yaxis=dict(title_text=_("{unit} kept for backward", unit=unit), rangemode="tozero"),
    )
    less = [m["saved_bytes"] / m["saved_bytes_checkpointed"] for m in memory.values()]
    slower = [m["ms_checkpointed"] / m["ms"] for m in memory.values()]
    title = subtitled(
        _(
            "Training memory: checkpointing keeps {low}-{high}x less for backward",
            low=number(min(less), 1, grouped=False),
            high=number(max(less), 1, grouped=False),
        ),
        _(
            "for {low}-{high}x the time of forward + backward (each block runs twice)",
            low=number(min(slower), 2, grouped=False),
            high=number(max(slower), 2, grouped=False),
        ),
    )
    return cost_layout(fig, title, height=480)


def _placement_line(x: list, y: list, placement: str, name: str, hover: str) -> go.Scatter:
    """One norm placement's line with markers, in its colour; `hover` names the point."""
    return go.Scatter(
        x=x,
        y=np.round(y, 6),
        mode="lines+markers",
        name=name,
        legendgroup=placement,
        line=dict(color=PLACEMENT_COLOURS[placement], width=4),
        marker=dict(size=11),
        hovertemplate=hover + "<br>%{y:.4f}<extra></extra>",
    )


def _gradient_axes(fig: go.Figure, depths: list[int]) -> None:
    """Left: gradient norm per layer from zero. Right: log-log against depth, ticks at `depths`."""
    fig.update_xaxes(title_text=_("layer"), dtick=1, row=1, col=1)
    fig.update_yaxes(title_text=_("gradient norm"), rangemode="tozero", row=1, col=1)
    fig.update_xaxes(type="log", title_text=_("layers L (log)"), tickvals=depths, row=1, col=2)
    fig.update_yaxes(type="log", title_text=_("gradient norm (log)"), nticks=6, tickformat=".2f",
                     row=1, col=2)  # fmt: skip
    fig.update_annotations(font_size=LARGE_FONT)


def gradient_flow_chart(
    per_layer: dict[str, list[dict]], by_depth: list[dict], weight: str = "w2"
) -> go.Figure:
    """Left: each layer's `weight` gradient norm at initialisation, pre vs post. Right: the last
    layer's W2 gradient against depth (log-log), pre vs post, with 1/sqrt(L) through pre-norm's
    first point (Xiong et al. 2020's claim for pre-norm; post-norm's is a flat line)."""
    depth = len(next(iter(per_layer.values())))
    fig = make_subplots(
        figure=new_figure(),
        rows=1,
        cols=2,
        horizontal_spacing=0.12,
        subplot_titles=(_("{weight} gradient per layer (L = {depth})", weight=weight.upper(),
                          depth=depth),
                        _("last layer's W2 gradient against depth")),
    )  # fmt: skip
    names = {"pre": _("pre-norm"), "post": _("post-norm")}
    names = {placement: names.get(placement, f"{placement}-norm") for placement in per_layer}
    for placement, rows in per_layer.items():
        name = names[placement]
        hover = _("{name}, layer {layer}", name=name, layer="%{x}")
        layers, values = [row["layer"] for row in rows], [row[weight] for row in rows]
        fig.add_trace(_placement_line(layers, values, placement, name, hover), row=1, col=1)
    depths = [row["layers"] for row in by_depth]
    slopes = {}
    for placement, name in names.items():
        values = [row[placement] for row in by_depth]
        slopes[placement] = log_log_slope(depths, values)
        line = _placement_line(depths, values, placement, name, f"{name}, L = %{{x}}")
        fig.add_trace(line.update(showlegend=False), row=1, col=2)
    if by_depth and "pre" in per_layer:
        anchor = by_depth[0]
        fig.add_trace(
            go.Scatter(
                x=depths,
                y=np.round([anchor["pre"] * math.sqrt(anchor["layers"] / L) for L in depths], 6),
                mode="lines",
                name=_("1/sqrt(L): the paper's pre-norm"),
                line=REFERENCE_LINE,
                hovertemplate="1/sqrt(L), L = %{x}<br>%{y:.4f}<extra></extra>",
            ),
            row=1,
            col=2,
        )
    _gradient_axes(fig, depths)
    trend = ", ".join(
        f"{names[placement]} L^{slope:+.2f}"
        for placement, slope in slopes.items()
        if not math.isnan(slope)
    )
    title = _("Gradients at initialisation, against Xiong et al. 2020")
    if trend:
        title = subtitled(
            title,
            _("last layer's W2 against depth: {trend} (paper: pre -0.5, post 0)", trend=trend),
        )
    cost_layout(fig, title, height=580)
    return fig.update_layout(margin_t=120)  # room for the panel titles under the subtitle
