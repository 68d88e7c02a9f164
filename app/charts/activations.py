"""Activation figures: feed-forward units, the residual stream, token geometry across depth.

Pure builders: numbers from encoder.inspect.activations in, a plotly figure out. Values are
rounded and stored as float32 before they reach the figure, so the browser gets only what is drawn.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.common import (
    DIVERGING,
    SERIES_COLOURS,
    SMALLEST_TEXT,
    base_layout,
    depth_name,
    escape,
    new_figure,
    short,
    visible_ticks,
)
from app.charts.cost import percent
from app.i18n import _
from encoder.web import rounded
from encoder.web.value_histogram import BELOW_ZERO

TOKEN_LABEL_CHARS = 14
MAX_FLAGGED = 5  # outlier dimensions named on the heatmap (the table lists them all)


def token_labels(tokens: list[str]) -> list[str]:
    """Unique category labels for a token axis: 'position token', escaped and cut."""
    return [f"{i} {short(token, TOKEN_LABEL_CHARS)}" for i, token in enumerate(tokens)]


def residual_stream_chart(
    values: np.ndarray,
    dims: np.ndarray,
    l2_norms: np.ndarray,
    tokens: list[str],
    outliers: list[tuple[int, float]],
    title: str,
) -> go.Figure:
    """Left: the stream, tokens x the shown dimensions (diverging colours around 0); outlier
    dimensions (dimension, times the median size) named above their column. Right: each token's
    L2 norm over all dimensions."""
    values = rounded(values)  # [tokens, dims]
    columns = [str(d) for d in np.asarray(dims).tolist()]
    rows = token_labels(tokens)
    limit = float(np.abs(values).max()) or 1.0
    fig = make_subplots(
        figure=new_figure(),
        rows=1,
        cols=2,
        shared_yaxes=True,
        column_widths=[0.84, 0.16],
        horizontal_spacing=0.02,
        subplot_titles=("", _("L2 norm")),
    )
    fig.add_heatmap(
        z=values,
        x=columns,
        y=rows,
        zmin=-limit,
        zmax=limit,
        colorscale=DIVERGING,
        colorbar=dict(title=dict(text=_("value"), side="right"), thickness=14, x=1.02),
        hovertemplate=_("token %{y}<br>dimension %{x}: %{z:.4f}") + "<extra></extra>",
        row=1,
        col=1,
    )
    fig.add_bar(
        x=rounded(l2_norms),
        y=rows,
        orientation="h",
        marker_color=SERIES_COLOURS[2],
        hovertemplate=_("token %{y}: L2 norm %{x:.3f}") + "<extra></extra>",
        showlegend=False,
        row=1,
        col=2,
    )
    _flag_outliers(fig, dims, outliers)
    y_ticks, _labels = visible_ticks(tokens)
    fig.update_yaxes(
        autorange="reversed", type="category", tickvals=[rows[i] for i in y_ticks], row=1, col=1
    )
    fig.update_xaxes(
        title_text=_("dimension of the residual stream"), type="category", row=1, col=1
    )
    fig.update_xaxes(rangemode="tozero", row=1, col=2)
    base_layout(fig, title, height=int(np.clip(200 + 22 * len(rows), 360, 900)))
    return fig.update_layout(margin=dict(l=60, r=20, t=130, b=60))


def _flag_outliers(fig: go.Figure, dims: np.ndarray, outliers: list[tuple[int, float]]) -> None:
    """The first MAX_FLAGGED outlier dimensions that are shown, each named above its column."""
    column_of = {dimension: i for i, dimension in enumerate(np.asarray(dims).tolist())}
    shown = [(d, times) for d, times in outliers if d in column_of]
    for dimension, times in shown[:MAX_FLAGGED]:
        fig.add_annotation(  # x by column index: plotly reads a digit string as an index too
            x=column_of[dimension],
            y=1,
            xref="x",
            yref="paper",
            yanchor="bottom",
            text=_("dim {dimension}: {times}x", dimension=dimension, times=f"{times:.0f}"),
            showarrow=True,
            arrowhead=2,
            ax=0,
            ay=-22,
            font=dict(color=BELOW_ZERO),
        )


def cosine_chart(matrix: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """Token x token cosine similarity on a fixed -1..1 scale."""
    labels = token_labels(tokens)
    fig = new_figure(
        go.Heatmap(
            z=rounded(matrix),
            x=labels,
            y=labels,
            zmin=-1,
            zmax=1,
            colorscale=DIVERGING,
            colorbar=dict(title=dict(text=_("cosine"), side="right"), thickness=14),
            hovertemplate=_("%{y} · %{x}<br>cosine %{z:.3f}") + "<extra></extra>",
        )
    )
    ticks, _labels = visible_ticks(tokens)
    shown = [labels[i] for i in ticks]
    fig.update_layout(
        xaxis=dict(type="category", tickangle=-45, tickvals=shown, constrain="domain"),
        yaxis=dict(
            type="category",
            autorange="reversed",
            tickvals=shown,
            scaleanchor="x",
            constrain="domain",
        ),
        plot_bgcolor="white",
    )
    return base_layout(fig, title, height=int(np.clip(220 + 18 * len(tokens), 420, 760)))


def mean_cosine_chart(depths: np.ndarray, mean_cosine: np.ndarray, chosen: int) -> go.Figure:
    """The mean cosine between different tokens at each depth; the chosen depth ringed."""
    depths = np.asarray(depths).tolist()
    means = rounded(mean_cosine)
    names = [depth_name(d) for d in depths]
    after = [_("after {depth}", depth=name) for name in names]
    fig = new_figure(
        [
            go.Scatter(
                x=depths,
                y=means,
                customdata=after,
                mode="lines+markers",
                line=dict(color=SERIES_COLOURS[0], width=3),
                marker=dict(size=9),
                name=_("mean cosine"),
                hovertemplate="%{customdata}: %{y:.3f}<extra></extra>",
            ),
            go.Scatter(
                x=[depths[chosen]],
                y=[means[chosen]],
                mode="markers",
                marker=dict(
                    size=20, color="rgba(0,0,0,0)", line=dict(color=SERIES_COLOURS[1], width=3)
                ),
                name=_("chosen layer"),
                hoverinfo="skip",
            ),
        ]
    )
    fig.update_layout(
        xaxis=dict(title_text=_("residual stream after"), tickvals=depths, ticktext=names),
        yaxis=dict(
            title_text=_("mean cosine between different tokens"),
            range=[min(-0.05, float(np.nanmin(means, initial=0.0)) - 0.05), 1.05],
        ),
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
    )
    return base_layout(fig, _("Do the tokens become alike with depth?"), height=420)


def _pca_traces(coords: np.ndarray, tokens: list[str]) -> list[go.Scatter]:
    """The paths (grey lines), the points coloured by depth and the tokens named at the end."""
    depths, n, _pair = coords.shape
    path_x, path_y = [], []
    for t in range(n):  # None breaks the line between tokens
        path_x += coords[:, t, 0].tolist() + [None]
        path_y += coords[:, t, 1].tolist() + [None]
    escaped = [escape(token) for token in tokens]
    point_text = [
        _("'{token}' ({position}) after {depth}", token=escaped[t], position=t, depth=depth_name(d))
        for d in range(depths)
        for t in range(n)
    ]
    path_text = [f"'{token}' ({t})" for t, token in enumerate(escaped)]
    return [
        go.Scatter(
            x=path_x,
            y=path_y,
            mode="lines",
            line=dict(color="rgba(120, 120, 120, 0.45)", width=1.5),
            hoverinfo="skip",
            showlegend=False,
        ),
        go.Scatter(
            x=coords[:, :, 0].flatten(),
            y=coords[:, :, 1].flatten(),
            mode="markers",
            marker=dict(
                size=8,
                color=np.repeat(np.arange(depths), n),
                colorscale="Viridis",
                cmin=0,
                cmax=depths - 1,
                colorbar=dict(
                    title=dict(text=_("depth"), side="right"),
                    thickness=14,
                    tickvals=list(range(depths)),
                    ticktext=[depth_name(d) for d in range(depths)],
                ),
            ),
            customdata=point_text,
            hovertemplate="%{customdata}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
            showlegend=False,
        ),
        go.Scatter(
            x=coords[-1, :, 0],
            y=coords[-1, :, 1],
            mode="text",
            text=[short(token, TOKEN_LABEL_CHARS) for token in tokens],
            customdata=path_text,
            textposition="top center",
            textfont=dict(size=SMALLEST_TEXT, color="#222222"),
            hovertemplate=_("%{customdata} after the last block") + "<extra></extra>",
            showlegend=False,
        ),
    ]


def pca_paths_chart(coords: np.ndarray, explained: np.ndarray, tokens: list[str]) -> go.Figure:
    """One path per token through a 2-D PCA of its states, embedding to last layer: grey lines,
    markers coloured by depth, the token named at its last point."""
    coords = rounded(coords)  # [depth, token, 2]
    depths, n, _pair = coords.shape
    fig = new_figure(_pca_traces(coords, tokens))
    ratio = np.asarray(explained, dtype=float)
    fig.update_layout(
        xaxis=dict(
            title_text=_("PC1 ({share} of the variance)", share=percent(ratio[0], 1)),
            zeroline=False,
        ),
        yaxis=dict(
            title_text=_("PC2 ({share} of the variance)", share=percent(ratio[1], 1)),
            zeroline=False,
        ),
    )
    title = _(
        "Each token's path from the embeddings to the last block ({tokens}, {depths})",
        tokens=_("1 token") if n == 1 else _("{count} tokens", count=n),
        depths=_("1 depth") if depths == 1 else _("{count} depths", count=depths),
    )
    return base_layout(fig, title, height=600)
