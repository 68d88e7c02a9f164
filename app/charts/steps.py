"""Figures of one query's attention computation: vectors as coloured strips, per-token matrices,
a weight matrix, and the scaled against the unscaled softmax.

Signed values use one diverging scale (blue negative, white zero, red positive) centred on zero.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.common import (
    FONT_SIZE,
    SERIES_COLOURS,
    base_layout,
    base_spec,
    escape,
    new_figure,
    signed_scale,
    visible_ticks,
)
from app.i18n import _, number

PAD_SHADE = "rgba(120, 120, 120, 0.55)"
HIGHLIGHT = "#111111"


def colour_limit(values: np.ndarray, robust: bool = False) -> float:
    """The end of a colour scale symmetric around zero: the largest |value|; with `robust`, the
    98th percentile, so that a few outlying dimensions (common in trained models' residual
    streams) do not wash out the rest: they saturate, and the hover keeps their value."""
    finite = np.abs(values[np.isfinite(values)])
    if not finite.size or finite.max() == 0:
        return 1.0
    limit = float(np.percentile(finite, 98)) if robust else float(finite.max())
    return limit if limit > 0 else float(finite.max())


def _signed_heatmap(z: np.ndarray, hover: str, colour_title: str, robust: bool = False) -> dict:
    """Values on a scale symmetric around zero (zero is white), as a plain trace dict."""
    limit = colour_limit(z, robust)
    return {
        "type": "heatmap",
        "z": np.round(z, 5),
        **signed_scale(z, limit, colour_title),
        "hovertemplate": hover + "<extra></extra>",
        "name": _("values"),
    }


def vector_strips(
    rows: list[tuple[str, np.ndarray]],
    *,
    title: str,
    group_size: int | None = None,
    highlight_group: int | None = None,
    robust: bool = False,
) -> go.Figure:
    """Equal-length vectors, one strip each (top to bottom as listed), x = dimension.

    robust: colours clip at the 98th percentile of |value| (see colour_limit).

    group_size: draw a boundary every group_size dimensions (the heads inside a concatenation);
    highlight_group: outline that group and name it.
    """
    labels = [escape(label) for label, _ in rows]
    z = np.stack([np.asarray(values, dtype=np.float64) for _, values in rows])  # [rows, dims]
    width = z.shape[1]
    heatmap = _signed_heatmap(z, _("%{y}<br>dimension %{x}: %{z:.4f}"), _("value"), robust)
    fig = new_figure([{**heatmap, "y": labels, "x": np.arange(width), "ygap": 3}])
    if group_size:
        for boundary in range(group_size, width, group_size):
            fig.add_vline(x=boundary - 0.5, line=dict(color="#555555", width=1))
    if group_size and highlight_group is not None:
        start = highlight_group * group_size - 0.5
        fig.add_shape(
            type="rect",
            x0=start,
            x1=start + group_size,
            y0=-0.5,
            y1=len(rows) - 0.5,
            line=dict(color=HIGHLIGHT, width=3),
        )
        fig.add_annotation(
            x=start + group_size / 2,
            y=-0.5,
            yanchor="bottom",
            text=_("head {head}", head=highlight_group),
            showarrow=False,
            font=dict(size=FONT_SIZE, color=HIGHLIGHT),
        )
    fig.update_layout(
        xaxis=dict(title_text=_("dimension"), showgrid=False, zeroline=False),
        yaxis=dict(autorange="reversed", showgrid=False, type="category"),
    )
    limit = fig.data[0].zmax
    if limit < np.abs(z).max():
        title = _(
            "{title} · colours stop at ±{limit} (the few larger values get the end colours)",
            title=title,
            limit=format(limit, ".2g"),
        )
    fig = base_layout(fig, title, height=130 + 48 * len(rows))
    return fig.update_layout(margin=dict(l=150))


def token_matrix(
    values: np.ndarray, tokens: list[str], n_valid: int, *, title: str, colour_title: str
) -> go.Figure:
    """[T, n] values, one row per token (labelled 'position token'), padding rows shaded (built
    as plain dicts: app.charts.common.new_figure)."""
    values = np.asarray(values, dtype=np.float64)  # [token, dimension]
    n_tokens, width = values.shape
    if len(tokens) != n_tokens:
        raise ValueError(f"{len(tokens)} tokens for {n_tokens} rows")
    labels = [f"{j} {token}" for j, token in enumerate(tokens)]
    heatmap = _signed_heatmap(values, _("%{customdata}<br>dimension %{x}: %{z:.4f}"), colour_title)
    heatmap["customdata"] = [[escape(label)] * width for label in labels]
    positions, ticks = visible_ticks(labels)
    layout = {
        **base_spec(title, height=int(np.clip(24 * n_tokens, 260, 900)) + 110),
        "xaxis": {"title": {"text": _("dimension")}, "showgrid": False, "zeroline": False},
        "yaxis": {
            "tickvals": positions,
            "ticktext": ticks,
            "autorange": "reversed",
            "showgrid": False,
            "zeroline": False,
        },
    }
    if n_valid < n_tokens:
        layout["shapes"] = [
            {
                "type": "rect",
                "x0": -0.5,
                "x1": width - 0.5,
                "y0": n_valid - 0.5,
                "y1": n_tokens - 0.5,
                "fillcolor": PAD_SHADE,
                "line": {"width": 0},
            }
        ]
        layout["annotations"] = [
            {
                "x": (width - 1) / 2,
                "y": (n_valid + n_tokens - 1) / 2,
                "text": _("padding (masked)"),
                "showarrow": False,
                "font": {"size": FONT_SIZE + 2, "color": "white"},
            }
        ]
    return new_figure([heatmap], layout)


def weight_matrix(weights: np.ndarray, *, title: str, row_title: str) -> go.Figure:
    """A [rows, d] weight matrix, signed colours."""
    weights = np.asarray(weights, dtype=np.float64)
    fig = new_figure([_signed_heatmap(weights, _("row %{y}, column %{x}: %{z:.4f}"), _("weight"))])
    fig.update_layout(
        xaxis=dict(title_text=_("input dimension (d_model)"), showgrid=False, zeroline=False),
        yaxis=dict(title_text=row_title, autorange="reversed", showgrid=False, zeroline=False),
    )
    return base_layout(fig, title, height=int(np.clip(6 * weights.shape[0], 180, 420)) + 120)


def softmax_comparison(
    tokens: list[str],
    scaled: np.ndarray,
    unscaled: np.ndarray,
    *,
    head_dim: int,
    entropies: tuple[float, float],
) -> go.Figure:
    """Per real key: the model's weights (softmax of scaled scores) beside softmax(q.k)."""
    labels = [f"{j} {token}" for j, token in enumerate(tokens)]
    hover = [escape(label) for label in labels]
    positions = list(range(len(tokens)))
    root = f"√{head_dim}"
    bars = [
        (_("softmax(q·k / {root}): the model's weights", root=root), scaled, SERIES_COLOURS[0],
         entropies[0]),
        (_("softmax(q·k): no scaling"), unscaled, SERIES_COLOURS[4], entropies[1]),
    ]  # fmt: skip
    fig = new_figure(
        [
            go.Bar(
                x=positions,
                y=np.round(np.asarray(values, dtype=np.float64), 6),
                name=_(
                    "{name} — entropy {entropy} nats",
                    name=name,
                    entropy=number(entropy, 4, grouped=False),
                ),
                marker_color=colour,
                customdata=hover,
                hovertemplate=_("key %{customdata}<br>weight %{y:.4f}") + "<extra></extra>",
            )
            for name, values, colour, entropy in bars
        ]
    )
    tick_positions, ticks = visible_ticks(labels)
    fig.update_layout(
        barmode="group",
        # no axis title under the keys' labels: a narrow figure's legend goes there
        xaxis=dict(tickvals=tick_positions, ticktext=ticks, tickangle=-45),
        yaxis=dict(title_text=_("weight on each key"), range=[0, 1.05]),
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
    )
    fig = base_layout(fig, "", height=460)
    return fig.update_layout(margin=dict(t=80))


WINDOW_FILL = "#E6E6E6"  # cells a local window masks: light grey under a cross (not a weight)
WINDOW_MARK = "#555555"


def _window_traces(weights: np.ndarray, outside: np.ndarray, hover: list[str]) -> list:
    """The weights (masked cells left out of the colour scale), the masked cells' grey and their
    crosses (a legend entry counting them)."""
    shown = np.where(outside, np.nan, weights)  # masked cells: no weight colour
    queries, keys = np.nonzero(outside)
    return [
        go.Heatmap(
            z=np.round(shown, 5),
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            colorbar=dict(title=dict(text=_("weight"), side="right"), thickness=14),
            customdata=[[[q, k] for k in hover] for q in hover],
            hovertemplate=_("query %{customdata[0]}<br>key %{customdata[1]}<br>weight %{z:.4f}")
            + "<extra></extra>",
            name=_("weights"),
        ),
        go.Heatmap(
            z=np.where(outside, 1.0, np.nan),
            colorscale=[[0, WINDOW_FILL], [1, WINDOW_FILL]],
            showscale=False,
            hoverinfo="skip",
            name=_("outside the window"),
        ),
        go.Scatter(
            x=keys,
            y=queries,
            mode="markers",
            marker=dict(symbol="x-thin", size=8, line=dict(width=1.5, color=WINDOW_MARK)),
            name=_("outside the window: {cells} cells masked (−∞, weight 0)", cells=len(keys)),
            showlegend=True,
            customdata=[[hover[q], hover[k]] for q, k in zip(queries, keys, strict=True)],
            hovertemplate=_(
                "query %{customdata[0]}<br>key %{customdata[1]}<br>outside the window: masked"
            )
            + "<extra></extra>",
        ),
    ]


def _shade_padding(fig: go.Figure, n_valid: int, n_tokens: int) -> None:
    """Padding's keys (columns) and queries (rows) shaded and named, where there is padding."""
    if n_valid < n_tokens:  # padding: the keys' columns and the queries' rows beyond n_valid
        for box in (
            dict(x0=n_valid - 0.5, x1=n_tokens - 0.5, y0=-0.5, y1=n_tokens - 0.5),
            dict(x0=-0.5, x1=n_valid - 0.5, y0=n_valid - 0.5, y1=n_tokens - 0.5),
        ):
            fig.add_shape(type="rect", **box, fillcolor=PAD_SHADE, line=dict(width=0))
        fig.add_annotation(
            x=(n_valid + n_tokens - 1) / 2,
            y=(n_tokens - 1) / 2,
            text=_("padding"),
            textangle=-90,
            showarrow=False,
            font=dict(size=FONT_SIZE + 2, color="white"),
        )


def window_matrix(
    weights: np.ndarray,
    tokens: list[str],
    n_valid: int,
    outside: np.ndarray,
    *,
    query: int,
    title: str,
) -> go.Figure:
    """One head's [T, T] weights (query rows, key columns) with the cells a local window masks
    drawn as masked (light grey, crossed: not a colour of the weights' scale, and not the colour
    alone), padding shaded, and the chosen query's row outlined."""
    weights = np.asarray(weights, dtype=np.float64)  # [query, key]
    n_tokens = weights.shape[0]
    labels = [f"{j} {token}" for j, token in enumerate(tokens)]
    hover = [escape(label) for label in labels]
    fig = new_figure(_window_traces(weights, outside, hover))
    _shade_padding(fig, n_valid, n_tokens)
    fig.add_shape(
        type="rect",
        x0=-0.5,
        x1=n_tokens - 0.5,
        y0=query - 0.5,
        y1=query + 0.5,
        line=dict(color=HIGHLIGHT, width=3),
    )
    positions, ticks = visible_ticks(labels)
    axis = dict(tickvals=positions, ticktext=ticks, showgrid=False, zeroline=False)
    fig.update_layout(
        xaxis=dict(axis, title_text=_("key"), tickangle=-45, constrain="domain"),
        yaxis=dict(axis, title_text=_("query"), autorange="reversed", scaleanchor="x"),
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
    )
    fig = base_layout(fig, title, height=int(np.clip(22 * n_tokens, 300, 760)) + 200)
    return fig.update_layout(margin=dict(t=110))


def rope_turns(turned: np.ndarray, formula: np.ndarray, *, position: int) -> go.Figure:
    """How far RoPE turned each pair (j, j + dk/2) of q_i's dimensions, in degrees: read from the
    vectors (bars) and position * base^(-2j/dk) brought into (-180, 180] (crosses)."""
    pairs = np.arange(len(turned))
    wrapped = np.degrees(np.angle(np.exp(1j * np.asarray(formula, np.float64))))
    fig = new_figure(
        [
            go.Bar(
                x=pairs,
                y=np.round(np.degrees(turned), 4),
                name=_("turned (read from q_i before and after)"),
                marker_color=SERIES_COLOURS[0],
                hovertemplate=_("pair %{x}: turned %{y:.3f}°") + "<extra></extra>",
            ),
            go.Scatter(
                x=pairs,
                y=np.round(wrapped, 4),
                mode="markers",
                name=_("{position} × base^(−2j/d_k), within ±180°", position=position),
                marker=dict(symbol="x", size=10, color=SERIES_COLOURS[4]),
                hovertemplate=_("pair %{x}: formula %{y:.3f}°") + "<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        xaxis=dict(title_text=_("pair j of dimensions (j, j + d_k/2)")),
        yaxis=dict(title_text=_("turn (degrees)"), range=[-185, 185]),
        legend=dict(orientation="h", x=0, y=1.02, yanchor="bottom"),
    )
    fig = base_layout(fig, "", height=380)
    return fig.update_layout(margin=dict(t=80))
