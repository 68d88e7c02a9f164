"""Plotly builders for what heads move and heads across a corpus (data in, figure out)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.attention import ATTENTION_COLORSCALE, token_grid_figure
from app.charts.common import base_layout, new_figure
from encoder.inspect.corpus import FINGERPRINT


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
        "query '%{y}' (%{y:d}) -> key '%{x}' (%{x:d})<br>norm-weighted %{z:.4f}",
    )
    return token_grid_figure(heatmap, tokens, n_valid, title=title)


def fingerprint_figure(grid: np.ndarray, layers: list[int], heads: list[int]) -> go.Figure:
    """grid [heads, FINGERPRINT]: every head's behaviours over the corpus, heads left to right."""
    labels = [f"L{layer} H{head}" for layer, head in zip(layers, heads, strict=True)]
    heatmap = go.Heatmap(
        z=np.asarray(grid, dtype=np.float64).T,  # [behaviour, head]
        x=labels,
        y=list(FINGERPRINT),
        zmin=0,
        zmax=1,
        colorscale=ATTENTION_COLORSCALE,
        colorbar=dict(title=dict(text="mean share", side="right"), thickness=14),
        hovertemplate="%{x}: %{y} %{z:.3f}<extra></extra>",
    )
    fig = new_figure([heatmap])
    num_heads = max(heads) + 1
    for boundary in range(num_heads, len(labels), num_heads):  # a line between layers
        fig.add_vline(x=boundary - 0.5, line_color="white", line_width=3)
    fig.update_layout(xaxis=dict(tickangle=-90), yaxis=dict(autorange="reversed"))
    title = "Fingerprint of every head: its mean attention over the corpus (spread: entropy / ln n)"
    return base_layout(fig, title, height=380)
