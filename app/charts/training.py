"""Figures of the Training view: training histories and gradient norms in, plotly Figure out.

No streamlit here, so the figures work in a notebook too. A history is the list of per-step rows
`encoder.train.trainer` records (step, loss, accuracy, lr, grad_norm, grad_norm_layer_{i}).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.common import MARGIN, SERIES_COLOURS, base_layout, escape, new_figure
from app.i18n import _, number

MAX_POINTS = 300  # points per curve sent to the browser; longer histories are thinned


def thin(history: list[dict[str, float]], max_points: int = MAX_POINTS) -> pd.DataFrame:
    """The history as a DataFrame of at most max_points rows (every k-th step, and the last)."""
    frame = pd.DataFrame(history)
    if len(frame) <= max_points:
        return frame
    stride = math.ceil(len(frame) / max_points)
    keep = sorted(set(range(0, len(frame), stride)) | {len(frame) - 1})
    return frame.iloc[keep]


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    """The app's common layout, with the legend under the plot."""
    return base_layout(fig, title, height).update_layout(
        margin={**MARGIN, "b": 100},
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0, xanchor="left"),
    )


def _run_lines(
    fig: go.Figure, histories: dict[str, list[dict[str, float]]], dashed: tuple[str, ...]
) -> None:
    """Each run's loss (left) and accuracy (right); a dashed run in the colour before it."""
    measures = {"loss": _("loss"), "accuracy": _("accuracy")}
    colour_index = -1
    for name, history in histories.items():
        if name not in dashed:
            colour_index += 1
        frame = thin(history)
        if frame.empty:
            continue
        line = dict(color=SERIES_COLOURS[colour_index % len(SERIES_COLOURS)], width=2)
        if name in dashed:
            line["dash"] = "dash"
        label = escape(name)
        for col, column in ((1, "loss"), (2, "accuracy")):
            fig.add_trace(
                go.Scatter(
                    x=frame["step"],
                    y=frame[column].round(5),
                    mode="lines",
                    name=label,
                    legendgroup=label,
                    showlegend=col == 1,
                    line=line,
                    hovertemplate=f"{label}<br>"
                    + _("step {step}", step="%{x}")
                    + f"<br>{measures[column]} %{{y:.4f}}<extra></extra>",
                ),
                row=1,
                col=col,
            )


def training_curves(
    histories: dict[str, list[dict[str, float]]],
    total_steps: int,
    *,
    chance_loss: float | None = None,
    dashed: tuple[str, ...] = (),
) -> go.Figure:
    """Loss (log scale) and accuracy of one or more runs against the step, side by side.

    histories: {run name: history}; runs named in `dashed` are drawn dashed in the colour of the
    run listed just before them (e.g. "post-norm + warmup" after "post-norm").
    chance_loss: ln(classes), drawn as a grey line: a loss stuck there means nothing is learned.
    """
    fig = make_subplots(
        figure=new_figure(),
        rows=1,
        cols=2,
        subplot_titles=(_("loss (training batch)"), _("accuracy")),
    )
    _run_lines(fig, histories, dashed)
    losses = [row["loss"] for history in histories.values() for row in history]
    if losses:  # an explicit log range: autorange stretches to decades nobody needs
        low = max(min(losses), 1e-5) / 1.5
        high = max(max(losses), chance_loss or 0) * 1.5
        fig.update_yaxes(range=[math.log10(low), math.log10(high)], row=1, col=1)
    if chance_loss is not None:
        fig.add_hline(
            y=chance_loss,
            line=dict(color="grey", dash="dot"),
            annotation_text=_(
                "chance: ln(classes) = {loss}", loss=number(chance_loss, 2, grouped=False)
            ),
            row=1,
            col=1,
        )
    fig.update_xaxes(title_text=_("step"), range=[0, max(total_steps, 1)])
    fig.update_yaxes(type="log", title_text=_("cross-entropy"), row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], title_text=_("fraction of tokens right"), row=1, col=2)
    return _layout(fig, _("Training curves"), height=440)


def layer_grad_norms_chart(norms: dict[str, list[float]], *, title: str) -> go.Figure:
    """Grouped bars: the gradient norm of each encoder block, one colour per run."""
    fig = new_figure()
    for index, (name, values) in enumerate(norms.items()):
        label = escape(name)
        fig.add_trace(
            go.Bar(
                x=[f"L{i}" for i in range(len(values))],
                y=np.round(values, 5),
                name=label,
                marker_color=SERIES_COLOURS[index % len(SERIES_COLOURS)],
                hovertemplate=f"{label}<br>"
                + _("block %{x}<br>gradient norm %{y:.4f}")
                + "<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        xaxis_title_text=_("encoder block"),
        yaxis_title_text=_("gradient norm"),
    )
    return _layout(fig, escape(title), height=360)


def held_out_bars(accuracy: dict[str, float], *, title: str) -> go.Figure:
    """One bar per run: its held-out accuracy (0 to 1), the value written on the bar."""
    names = [escape(name) for name in accuracy]
    fig = new_figure(
        go.Bar(
            x=names,
            y=np.round(list(accuracy.values()), 4),
            text=[number(value, 3, grouped=False) for value in accuracy.values()],
            textposition="outside",
            marker_color=[SERIES_COLOURS[i % len(SERIES_COLOURS)] for i in range(len(names))],
            hovertemplate=_("%{x}<br>held-out accuracy %{y:.4f}") + "<extra></extra>",
        )
    )
    fig.update_layout(yaxis=dict(range=[0, 1.1], title_text=_("held-out accuracy (per token)")))
    return _layout(fig, escape(title), height=360)


def grad_norm_heatmap(history: list[dict[str, float]]) -> go.Figure:
    """Each block's gradient norm (before clipping) at each step, on a log colour scale."""
    frame = thin(history)
    columns = sorted(
        (c for c in frame.columns if c.startswith("grad_norm_layer_")),
        key=lambda c: int(c.rsplit("_", 1)[1]),
    )
    values = frame[columns].to_numpy(dtype=np.float64).T  # [layer, step]
    fig = new_figure(
        go.Heatmap(
            z=np.round(np.log10(np.maximum(values, 1e-12)), 3),
            x=frame["step"],
            y=[f"L{i}" for i in range(len(columns))],
            customdata=np.round(values, 5),
            colorscale="Viridis",
            colorbar=dict(title=dict(text=_("log10 norm"))),
            hovertemplate=_("block %{y}<br>step %{x}<br>gradient norm %{customdata:.4f}")
            + "<extra></extra>",
        )
    )
    fig.update_layout(xaxis_title_text=_("step"), yaxis_title_text=_("encoder block"))
    return _layout(fig, _("Gradient norm of each block during training"), height=320)
