"""The Interventions view's grids (encoder.inspect.patching): one Plotly heatmap builder for the
patching grids (tokens or heads down the side, layers along the bottom), their B − A and the
cone, each cell's number written in it (colour is never the only carrier)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.common import (
    MARGIN,
    SMALLEST_TEXT,
    VIRIDIS,
    base_layout,
    escape,
    new_figure,
    signed_scale,
)
from app.i18n import number

ROW = 26  # px a row of the grid: its label and its cells' numbers written across
TEXT_CELLS = 900  # at most this many cells have their number written in them


def grid_figure(
    z: np.ndarray,
    rows: list[str],
    columns: list[str],
    *,
    title: str,
    colour_title: str,
    axes: tuple[str, str],
    signed: bool = True,
    digits: int = 2,
    top: float | None = None,
) -> go.Figure:
    """z [row, column] (a row a token or head, a column a layer) as a heatmap: signed values on
    a scale symmetric around 0 (white), at least -1..1 (patching effects: 0 the corrupted run, 1
    the clean one); unsigned ones (the cone's norms) on Viridis from 0. `axes`: (rows' title,
    columns' title); `top`: an unsigned scale's end (two figures on one scale), else z's largest."""
    z = np.asarray(z, dtype=np.float64)
    largest = float(np.nanmax(np.abs(z))) if z.size else 0.0
    scale = (
        signed_scale(z, max(largest, 1.0), colour_title)
        if signed
        else {"zmin": 0.0, "zmax": max(top or largest, 1e-9), "colorscale": VIRIDIS,
              "colorbar": {"title": {"text": colour_title, "side": "right"}, "thickness": 14}}
    )  # fmt: skip
    tiny = 0.5 * 10.0**-digits  # written as 0, never "-0.00"
    if z.size <= TEXT_CELLS:
        text = [[number(v if abs(v) >= tiny else 0.0, digits) for v in row] for row in z]
        scale |= {"text": text, "texttemplate": "%{text}", "textfont": {"size": SMALLEST_TEXT}}
    labels = [escape(label) for label in rows]
    heatmap = go.Heatmap(
        z=np.round(z, 5),
        x=columns,
        y=labels,  # each label unique: its position or head number first
        hovertemplate="%{y} · %{x}<br>%{z:.4f}<extra></extra>",
        xgap=1,
        ygap=1,
        **scale,
    )
    fig = new_figure([heatmap])
    fig.update_layout(
        xaxis=dict(type="category", title_text=axes[1], showgrid=False, side="bottom"),
        yaxis=dict(
            type="category",
            autorange="reversed",
            title_text=axes[0],
            showgrid=False,
            automargin=True,
        ),
        plot_bgcolor="white",
    )
    height = ROW * len(rows) + MARGIN["t"] + MARGIN["b"] + 60
    return base_layout(fig, title, height=max(height, 260))
