"""Norm figures: each norm's input and output statistics; the residual stream's size by depth."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.common import (
    MARGIN,
    OKABE_ITO,
    PAD_TOKEN,
    base_layout,
    depth_name,
    escape,
    new_figure,
    visible_ticks,
)


def _token_at(tokens: list[str], position: int) -> str:
    """The token at a position; positions past the sentence are padding."""
    return tokens[position] if position < len(tokens) else PAD_TOKEN


def _token_axis(positions: list[int], tokens: list[str]) -> dict:
    """Numeric positions labelled with (escaped) tokens; duplicates stay apart."""
    ticks, text = visible_ticks([_token_at(tokens, p) for p in positions])
    return dict(tickvals=[positions[i] for i in ticks], ticktext=text, tickangle=-45)


NORM_ORDER = ["embed.ln", "ln1", "ln2", "final_norm"]


def layernorm_chart(stats: pd.DataFrame, tokens: list[str], layer: int) -> go.Figure:
    """Mean and std over d of each norm's input and output, per token, for one layer."""
    rows = stats[stats["layer"] == layer]
    if rows.empty:
        raise ValueError(
            f"no LayerNorm statistics for layer={layer}; layers present: "
            f"{sorted(stats['layer'].unique().tolist())}"
        )
    fig = make_subplots(
        figure=new_figure(),
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=("mean over the d features", "standard deviation over the d features"),
    )
    norms = [n for n in NORM_ORDER if n in set(rows["norm"])]
    for colour, norm in zip(OKABE_ITO, norms, strict=False):
        part = rows[rows["norm"] == norm].sort_values("position")
        labels = [escape(_token_at(tokens, p)) for p in part["position"].tolist()]
        for side, dash, symbol in (("in", "dot", "circle-open"), ("out", "solid", "circle")):
            name = f"{norm} {side}put"
            for row, stat in ((1, "mean"), (2, "std")):
                fig.add_scatter(
                    x=part["position"],
                    y=part[f"{side}_{stat}"],
                    customdata=labels,
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=row == 1,
                    line=dict(color=colour, dash=dash, width=2),
                    marker=dict(symbol=symbol, size=8, color=colour),
                    hovertemplate=f"'%{{customdata}}' (%{{x}})<br>{name} {stat} %{{y:.4f}}"
                    "<extra></extra>",
                    row=row,
                    col=1,
                )
    fig.update_xaxes(_token_axis(sorted(rows["position"].unique().tolist()), tokens), row=2, col=1)
    place = {"embed.ln": "the embeddings", "final_norm": "the final norm"}.get(norms[0])
    title = f"Norm statistics in {place or f'block {layer}'}: input (dotted) vs output (solid)"
    fig.update_layout(legend=dict(orientation="h", x=0, y=1.06, yanchor="bottom"))
    base_layout(fig, title, height=640)
    return fig.update_layout(margin=dict(MARGIN, t=110))


def residual_norm_chart(resid: pd.DataFrame, tokens: list[str]) -> go.Figure:
    """L2 norm of the residual stream across depth: a thin line per token, the mean thick."""
    depths = sorted(resid["depth"].unique().tolist())
    xs, ys, labels = [], [], []
    for position, part in resid.sort_values("depth").groupby("position", sort=True):
        label = escape(_token_at(tokens, position))
        xs += part["depth"].tolist() + [None]  # None breaks the line between tokens
        ys += part["l2_norm"].tolist() + [None]
        labels += [f"'{label}' ({position})"] * len(part) + [None]
    mean = resid.groupby("depth")["l2_norm"].mean()
    fig = new_figure(
        [
            go.Scatter(
                x=xs,
                y=ys,
                customdata=labels,
                mode="lines",
                name="each token",
                line=dict(color="rgba(0, 114, 178, 0.35)", width=1),
                hovertemplate="%{customdata} after %{x}: %{y:.3f}<extra></extra>",
            ),
            go.Scatter(
                x=mean.index,
                y=mean.values,
                mode="lines+markers",
                name="mean over tokens",
                line=dict(color="#D55E00", width=5),
                marker=dict(size=10),
                hovertemplate="mean after %{x}: %{y:.3f}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        xaxis=dict(
            title_text="residual stream after",
            tickvals=depths,
            ticktext=[depth_name(d) for d in depths],
        ),
        yaxis=dict(title_text="L2 norm", rangemode="tozero"),
        legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"),
    )
    return base_layout(fig, "Size of each token's residual stream vector across depth", 460)
