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
    base_spec,
    depth_name,
    escape,
    new_figure,
    short,
    visible_ticks,
)
from app.charts.cost import percent
from app.i18n import _, n_

DIGITS = 4  # decimals sent to the browser
TOKEN_LABEL_CHARS = 14
MAX_FLAGGED = 5  # outlier dimensions named on the heatmap (the table lists them all)
BELOW_ZERO = SERIES_COLOURS[4]  # vermillion: the values the activation zeroes or bends
ABOVE_ZERO = SERIES_COLOURS[0]
CURVE_COLOUR = "#111111"  # the activation function's line over a histogram
# A gated activation's own function, the one its input half goes through before the gate
# multiplies it: GeGLU = GELU(x W_in) * (x W_gate), SwiGLU = SiLU(x W_in) * (x W_gate).
GATED_INNER = {"geglu": "GELU", "swiglu": "SiLU"}


def rounded(values) -> np.ndarray:
    return np.round(np.asarray(values, dtype=np.float32), DIGITS)


def plain(values) -> list:
    """`rounded` values as plain Python floats (nested lists, as the array's shape), each its
    shortest decimal: 0.1234, not float32's 0.12340000271797180 (an ES module's data)."""
    return np.round(rounded(values).astype(np.float64), DIGITS).tolist()


def token_labels(tokens: list[str]) -> list[str]:
    """Unique category labels for a token axis: 'position token', escaped and cut."""
    return [f"{i} {short(token, TOKEN_LABEL_CHARS)}" for i, token in enumerate(tokens)]


def _zero_aligned_ranges(counts_max: float, curve_min: float, curve_max: float):
    """Ranges for the counts (left) and the curve (right) axes that put both zeros on one line."""
    low = min(curve_min, 0.0)
    span = max(curve_max, 1e-9) - low
    curve_range = [low - 0.05 * span, max(curve_max, 1e-9) + 0.05 * span]
    zero_at = -curve_range[0] / (curve_range[1] - curve_range[0])  # 0..1 up the plot
    top = 1.05 * max(counts_max, 1)
    return [-zero_at / (1 - zero_at) * top, top], curve_range


def histogram_ranges(counts: np.ndarray, curve_y: np.ndarray):
    """The counts' (left) and the curve's (right) axis ranges of a histogram with `counts` and a
    curve through `curve_y`, their zeros on one line (_zero_aligned_ranges)."""
    counts = np.asarray(counts)
    return _zero_aligned_ranges(
        float(counts.max()) if counts.size else 1.0, float(np.min(curve_y)), float(np.max(curve_y))
    )


def _bars(centres, counts, widths, edges, keep: np.ndarray, name: str, colour: str) -> dict:
    """The histogram's bins where `keep` holds."""
    return {
        "type": "bar",
        "x": rounded(centres[keep]),
        "y": counts[keep],
        "width": rounded(widths[keep]),
        "marker": {"color": colour},
        "opacity": 0.75,
        "name": name,
        # each bin's edges, and its count with its noun in the language's plural (n_)
        "customdata": [
            [float(low), float(high), n_("{count} value", "{count} values", int(count))]
            for low, high, count in zip(
                rounded(edges[:-1][keep]), rounded(edges[1:][keep]), counts[keep], strict=True
            )
        ],
        "hovertemplate": _("x from %{customdata[0]} to %{customdata[1]}: %{customdata[2]}")
        + "<extra></extra>",
    }


def pre_activation_chart(
    edges: np.ndarray,
    counts: np.ndarray,
    curve_x: np.ndarray,
    curve_y: np.ndarray,
    name: str,
    title: str,
) -> go.Figure:
    """Histogram of pre-activation values (bins below 0 in their own colour) with the activation
    function `name`(x) drawn over it on a second y axis whose 0 lines up with the bars' base
    (built as plain dicts: app.charts.common.new_figure)."""
    edges = np.asarray(edges, dtype=np.float64)
    counts = np.asarray(counts)
    centres, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    below = centres < 0
    traces = [
        _bars(centres, counts, widths, edges, below, _("values below 0"), BELOW_ZERO),
        _bars(centres, counts, widths, edges, ~below, _("values 0 or above"), ABOVE_ZERO),
        {
            "type": "scatter",
            "x": rounded(curve_x),
            "y": rounded(curve_y),
            "yaxis": "y2",
            "mode": "lines",
            "name": _("{name}(x) (right axis)", name=name),
            "line": {"color": CURVE_COLOUR, "width": 3},
            "hovertemplate": f"{name}(%{{x:.3f}}) = %{{y:.4f}}<extra></extra>",
        },
    ]
    counts_range, curve_range = histogram_ranges(counts, curve_y)
    layout = {
        **base_spec(title, height=500),
        "shapes": [  # x = 0, the full height
            {
                "type": "line",
                "x0": 0,
                "x1": 0,
                "y0": 0,
                "y1": 1,
                "yref": "y domain",
                "line": {"color": "#777777", "width": 1, "dash": "dot"},
            }
        ],
        "bargap": 0,
        "barmode": "overlay",
        "xaxis": {"title": {"text": _("pre-activation value x")}, "zeroline": False},
        "yaxis": {"title": {"text": _("how many values")}, "range": counts_range, "zeroline": True},
        "yaxis2": {
            "title": {"text": f"{name}(x)"},
            "overlaying": "y",
            "side": "right",
            "range": curve_range,
            "tickmode": "auto",
            "nticks": 6,
            "showgrid": False,
            "zeroline": False,
        },
        "legend": {"orientation": "h", "x": 0, "y": -0.22, "yanchor": "top"},
        "margin": {"l": 70, "r": 70, "t": 100, "b": 110},
    }
    return new_figure(traces, layout)


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


def pca_paths_chart(coords: np.ndarray, explained: np.ndarray, tokens: list[str]) -> go.Figure:
    """One path per token through a 2-D PCA of its states, embedding to last layer: grey lines,
    markers coloured by depth, the token named at its last point."""
    coords = rounded(coords)  # [depth, token, 2]
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
    fig = new_figure(
        [
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
    )
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
