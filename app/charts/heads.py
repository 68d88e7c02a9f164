"""What heads move (Plotly builders; heads across a corpus: encoder/web/head_fingerprint.py):
data in, figure out."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.attention import ATTENTION_COLORSCALE, token_grid_figure
from app.i18n import _


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
