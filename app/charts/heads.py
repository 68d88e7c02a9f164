"""What heads move (Plotly builders) and heads across a corpus (head_fingerprint.js's data):
data in, figure or module data out."""

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


FINGERPRINT_DIGITS = 4  # decimals sent: a colour off by less than 0.1 of a channel's 255 steps


def fingerprint_data(
    grid: np.ndarray, layers: list[int], heads: list[int], behaviours: list[str]
) -> dict:
    """grid [heads, FINGERPRINT]: every head's behaviours over the corpus (encoder.inspect.corpus's
    fingerprint(), a row a head, layer by layer) as head_fingerprint.js's data: its title and its
    colour bar's in the run's language, each behaviour named as `behaviours` says (a row each),
    each column's head as a [layer, head] pair, and the values transposed to [behaviour][head],
    each rounded to FINGERPRINT_DIGITS decimals as a plain float (None where there is no value:
    NaN is not JSON), on a colour scale from 0 to 1 (every behaviour is a share or a spread in
    [0, 1]). ValueError when the shapes disagree."""
    values = np.asarray(grid, dtype=np.float64)
    wanted = (len(heads), len(behaviours))
    if values.shape != wanted or len(layers) != len(heads):
        raise ValueError(
            f"the fingerprint grid has shape {values.shape}, not (heads, behaviours) = "
            f"({len(heads)}, {len(behaviours)}), with {len(layers)} layer numbers"
        )
    rounded = np.round(values.T, FINGERPRINT_DIGITS)  # [behaviour, head]
    return {
        "title": _(
            "Fingerprint of every head: its mean attention over the corpus (spread: entropy / ln n)"
        ),
        "behaviours": [str(name) for name in behaviours],
        "heads": [[int(layer), int(head)] for layer, head in zip(layers, heads, strict=True)],
        "values": [[float(v) if np.isfinite(v) else None for v in row] for row in rounded],
        "zmin": 0.0,
        "zmax": 1.0,
        "scale": _("mean share"),
    }
