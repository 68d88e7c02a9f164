"""Figures of what switching heads off changed: cosine of the residual stream by depth and token,
the change of the output per token, and the attention difference of later layers."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.attention import (
    OVERVIEW_MAX_TOKENS,
    attention_mosaic,
    mosaic_figure,
    token_grid_figure,
)
from app.charts.common import (
    MARGIN,
    SERIES_COLOURS,
    SMALLEST_TEXT,
    base_layout,
    depth_labels,
    escape,
    new_figure,
    signed_scale,
    visible_ticks,
)
from app.i18n import _


def cell_text(cosine: float) -> str:
    """A cosine in few characters for a small cell: '1' when it rounds to 1, else '.991'."""
    text = f"{cosine:.3f}"
    return "1" if text == "1.000" else text.replace("0.", ".", 1)


COSINE_ROW = 24  # px: a token's row of the cosine heatmap, its labels and numbers written across
MEAN_PANEL = 120  # px: the mean's panel under it
PANEL_GAP = 40  # px between them


def _cosine_heatmap(
    cosine: np.ndarray, depths: list[str], labels: list[str], share: float
) -> go.Heatmap:
    """A row per token, a column per depth, each cell's number where they fit; its colour bar
    beside the heatmap alone (`share`: the heatmap's part of the plot's height, from the top)."""
    lowest = float(np.nanmin(cosine))
    show_text = len(labels) <= 24
    return go.Heatmap(
        z=np.round(cosine.T, 4),  # [token, depth]
        x=depths,
        y=list(range(len(labels))),
        zmin=min(lowest, 0.999),
        zmax=1,
        colorscale="Viridis",
        colorbar=dict(
            title=dict(text=_("cosine"), side="right"),
            thickness=14,
            y=1,
            yanchor="top",
            len=share,
        ),
        text=[[cell_text(c) for c in row] for row in cosine.T] if show_text else None,
        texttemplate="%{text}" if show_text else None,
        textfont=dict(size=SMALLEST_TEXT),
        customdata=[[escape(label)] * len(depths) for label in labels],
        hovertemplate=_("%{x} · token %{customdata}<br>cosine %{z:.6f}") + "<extra></extra>",
        name=_("cosine per token"),
        xaxis="x",
        yaxis="y",
    )


def residual_cosine_chart(
    cosine: np.ndarray, mean: np.ndarray, tokens: list[str], *, title: str
) -> go.Figure:
    """Cosine with / without the heads: a heatmap of a row per real token and a column per depth,
    and under it, on the same depths, their mean. Tokens down the side (their labels written
    across, however many), the depths' few long names along the bottom, the colour bar beside
    the heatmap alone; each cell's number where it fits (app/assets/page/figure_text.js)."""
    cosine = np.asarray(cosine, dtype=np.float64)  # [depth, token]
    depths = depth_labels(cosine.shape[0] - 1)
    labels = [f"{j} {token}" for j, token in enumerate(tokens)]
    positions, ticks = visible_ticks(labels)
    lowest = float(np.nanmin(cosine))
    rows = COSINE_ROW * len(tokens)
    plot = rows + PANEL_GAP + MEAN_PANEL
    split = MEAN_PANEL / plot  # the mean's share of the plot's height, from the bottom
    heatmap = _cosine_heatmap(cosine, depths, labels, rows / plot)
    line = go.Scatter(
        x=depths,
        y=np.round(np.asarray(mean, dtype=np.float64), 6),
        mode="lines+markers",
        marker=dict(color=SERIES_COLOURS[0], size=10),
        hovertemplate=_("%{x}<br>mean cosine %{y:.6f}") + "<extra></extra>",
        name=_("mean over tokens"),
        xaxis="x",
        yaxis="y2",
    )
    fig = new_figure([heatmap, line])
    span = max(1 - min(float(np.min(mean)), lowest), 1e-4)
    fig.update_layout(
        xaxis=dict(type="category", anchor="y2", tickangle=-45, showgrid=False),
        yaxis=dict(
            domain=[1 - rows / plot, 1],
            tickvals=positions,
            ticktext=ticks,
            autorange="reversed",
            title_text=_("token"),
            showgrid=False,
            automargin=True,
        ),
        yaxis2=dict(
            domain=[0, split],
            range=[1 - 1.2 * span, 1 + 0.1 * span],
            title_text=_("mean cosine"),
            automargin=True,
        ),
        showlegend=False,
    )
    fig = base_layout(fig, title, height=plot + MARGIN["t"] + 120)
    return fig.update_layout(margin=dict(b=120))


def output_change_chart(change: np.ndarray, cosine: np.ndarray, tokens: list[str]) -> go.Figure:
    """Per real token: ||out_ablated - out|| / ||out||, with the cosine in the hover."""
    labels = [f"{j} {token}" for j, token in enumerate(tokens)]
    positions, ticks = visible_ticks(labels)
    fig = new_figure(
        go.Bar(
            x=list(range(len(tokens))),
            y=np.round(np.asarray(change, dtype=np.float64), 6),
            marker_color=SERIES_COLOURS[4],
            customdata=np.stack(
                [[escape(label) for label in labels], [f"{c:.6f}" for c in cosine]], axis=-1
            ),
            hovertemplate=_("token %{customdata[0]}<br>relative change %{y:.4f}<br>")
            + _("cosine %{customdata[1]}")
            + "<extra></extra>",
        )
    )
    fig.update_layout(
        xaxis=dict(tickvals=positions, ticktext=ticks, tickangle=-45, title_text=_("token")),
        yaxis=dict(title_text="‖out without − out‖ / ‖out‖", rangemode="tozero"),
    )
    return base_layout(fig, _("Change of the final output, per token"), height=400)


ABLATION_DIFFERENCE = "weight: without − with"


def _difference_heatmap(z: np.ndarray, real: np.ndarray, colour_title: str) -> go.Heatmap:
    """Attention differences on a scale symmetric around zero (white), set by the real cells."""
    limit = float(np.nanmax(np.abs(real))) if real.size else 0.0
    limit = limit if limit > 0 else 1e-6
    return go.Heatmap(
        z=np.round(z, 5),
        **signed_scale(z, limit, colour_title),
        hoverongaps=False,
        hovertemplate="%{y}<br>%{x}<br>" + _("change %{z:+.4f}") + "<extra></extra>",
        name=_("difference"),
    )


def attention_difference(
    difference: np.ndarray,
    n_valid: int,
    *,
    layers: list[int],
    max_tokens: int = OVERVIEW_MAX_TOKENS,
    title: str | None = None,
    colour_title: str = ABLATION_DIFFERENCE,
) -> go.Figure:
    """Attention differences of these layers, [L', H, T, T], as a mosaic; zero is white. The
    default title is the ablation's (later layers, without minus with)."""
    mosaic = attention_mosaic(difference, n_valid, max_tokens=max_tokens, layers=layers)
    n_heads = difference.shape[1]
    title = title or _(
        "Attention change in the later {layers} x {heads}: red = more weight than before, "
        "blue = less",
        layers=_("1 layer") if len(layers) == 1 else _("{count} layers", count=len(layers)),
        heads=_("1 head") if n_heads == 1 else _("{count} heads", count=n_heads),
    )
    heatmap = _difference_heatmap(mosaic.z, mosaic.real, colour_title)
    return mosaic_figure(mosaic, heatmap, title)


def difference_head(
    difference: np.ndarray,
    tokens: list[str],
    n_valid: int,
    *,
    title: str,
    colour_title: str = ABLATION_DIFFERENCE,
) -> go.Figure:
    """One head's [T, T] attention change (query rows, key columns) with token labels."""
    difference = np.asarray(difference, dtype=np.float64)  # [query, key]
    heatmap = _difference_heatmap(difference, difference[:n_valid, :n_valid], colour_title)
    heatmap.update(
        hovertemplate=_("query '%{y}' (%{y:d}) -> key '%{x}' (%{x:d})<br>change %{z:+.4f}")
        + "<extra></extra>"
    )
    return token_grid_figure(heatmap, tokens, n_valid, title=title)


def divergence_chart(moved: np.ndarray, *, title: str) -> go.Figure:
    """How much each head's attention differs, [layer, head] shares of attention moved (0..1):
    white = the same, dark = all of it elsewhere."""
    moved = np.asarray(moved, dtype=np.float64)  # [layer, head]
    L, H = moved.shape
    heatmap = go.Heatmap(
        z=np.round(moved, 4),
        x=[f"H{h}" for h in range(H)],
        y=[f"L{layer}" for layer in range(L)],
        zmin=0,
        zmax=max(float(moved.max()), 1e-6),
        colorscale="Reds",
        colorbar=dict(title=dict(text=_("moved"), side="right"), thickness=14, tickformat=".0%"),
        text=[[f"{v:.0%}" for v in row] for row in moved] if L * H <= 144 else None,
        texttemplate="%{text}" if L * H <= 144 else None,
        hovertemplate=_("layer %{y}, head %{x}<br>%{z:.1%} of the attention moved")
        + "<extra></extra>",
    )
    fig = new_figure([heatmap])
    fig.update_layout(
        yaxis=dict(autorange="reversed", title_text=_("layer")), xaxis_title=_("head")
    )
    return base_layout(fig, title, height=max(260, 46 * L + 120))
