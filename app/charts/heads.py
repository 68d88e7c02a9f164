"""Plotly builders for what heads move and heads across a corpus (data in, figure out)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.attention import ATTENTION_COLORSCALE, token_grid_figure
from app.charts.common import base_spec, colour_scale, new_figure
from app.i18n import _

FINGERPRINT_SCALE = colour_scale(ATTENTION_COLORSCALE)  # shares of attention, as the heatmaps'


def _share_heatmap(z: np.ndarray, colour_title: str, hover: str) -> go.Heatmap:
    """A [T, T] heatmap on 0..its largest real value."""
    return go.Heatmap(
        z=z,
        zmin=0,
        zmax=float(np.nanmax(z)) or 1.0,
        colorscale=ATTENTION_COLORSCALE,
        colorbar=dict(title=dict(text=colour_title, side="right"), thickness=14),
        hoverongaps=False,
        hovertemplate=hover + "<extra></extra>",
    )


def norm_weighted_figure(
    moved: np.ndarray, tokens: list[str], n_valid: int, title: str
) -> go.Figure:
    """One head's norm-weighted attention ||alpha_ij f(x_j)||, [query, key]."""
    heatmap = _share_heatmap(
        np.asarray(moved, dtype=np.float32),
        "||α f(x)||",
        _("query '%{y}' (%{y:d}) -> key '%{x}' (%{x:d})<br>norm-weighted %{z:.4f}"),
    )
    return token_grid_figure(heatmap, tokens, n_valid, title=title)


def fingerprint_figure(
    grid: np.ndarray, layers: list[int], heads: list[int], behaviours: list[str]
) -> go.Figure:
    """grid [heads, FINGERPRINT]: every head's behaviours over the corpus, heads left to right,
    each behaviour named as `behaviours` says (built as plain dicts: common.new_figure)."""
    labels = [f"L{layer} H{head}" for layer, head in zip(layers, heads, strict=True)]
    heatmap = {
        "type": "heatmap",
        "z": np.asarray(grid, dtype=np.float64).T,  # [behaviour, head]
        "x": labels,
        "y": behaviours,
        "zmin": 0,
        "zmax": 1,
        "colorscale": FINGERPRINT_SCALE,
        "colorbar": {"title": {"text": _("mean share"), "side": "right"}, "thickness": 14},
        "hovertemplate": "%{x}: %{y} %{z:.3f}<extra></extra>",
    }
    num_heads = max(heads) + 1
    between_layers = [  # a white line between layers
        {
            "type": "line",
            "x0": boundary - 0.5,
            "x1": boundary - 0.5,
            "y0": 0,
            "y1": 1,
            "xref": "x",
            "yref": "y domain",
            "line": {"color": "white", "width": 3},
        }
        for boundary in range(num_heads, len(labels), num_heads)
    ]
    title = _(
        "Fingerprint of every head: its mean attention over the corpus (spread: entropy / ln n)"
    )
    layout = {
        **base_spec(title, height=380),
        "shapes": between_layers,
        "xaxis": {"tickangle": -90},
        "yaxis": {"autorange": "reversed"},
    }
    return new_figure([heatmap], layout)
