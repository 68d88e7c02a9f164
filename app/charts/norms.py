"""The residual stream's size by depth (each norm's statistics per token: encoder.web.token_lines
draws them)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.charts.common import base_spec, depth_name, escape, new_figure
from app.i18n import _
from encoder.web.token_lines import token_at


def residual_norm_chart(resid: pd.DataFrame, tokens: list[str]) -> go.Figure:
    """L2 norm of the residual stream across depth: a thin line per token, the mean thick."""
    depths = sorted(resid["depth"].unique().tolist())
    xs, ys, labels = [], [], []
    for position, part in resid.sort_values("depth").groupby("position", sort=True):
        label = escape(token_at(tokens, position))
        xs += part["depth"].tolist() + [None]  # None breaks the line between tokens
        ys += part["l2_norm"].tolist() + [None]
        labels += [f"'{label}' ({position})"] * len(part) + [None]
    mean = resid.groupby("depth")["l2_norm"].mean()
    traces = [
        {
            "type": "scatter",
            "x": xs,
            "y": ys,
            "customdata": labels,
            "mode": "lines",
            "name": _("each token"),
            "line": {"color": "rgba(0, 114, 178, 0.35)", "width": 1},
            "hovertemplate": _("%{customdata} after %{x}: %{y:.3f}") + "<extra></extra>",
        },
        {
            "type": "scatter",
            "x": mean.index.to_numpy(),
            "y": mean.to_numpy(),
            "mode": "lines+markers",
            "name": _("mean over tokens"),
            "line": {"color": "#D55E00", "width": 5},
            "marker": {"size": 10},
            "hovertemplate": _("mean after %{x}: %{y:.3f}") + "<extra></extra>",
        },
    ]
    layout = {
        **base_spec(_("Size of each token's residual stream vector across depth"), 460),
        "xaxis": {
            "title": {"text": _("residual stream after")},
            "tickvals": depths,
            "ticktext": [depth_name(d) for d in depths],
            # half a step either side and the names turned: the first one ("embeddings") clear
            # of the y axis' "0" in a half-page figure
            "range": [min(depths) - 0.5, max(depths) + 0.5],
            "tickangle": -45,
        },
        "yaxis": {"title": {"text": _("L2 norm")}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
    }
    return new_figure(traces, layout)
