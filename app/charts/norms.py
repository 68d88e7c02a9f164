"""Norm figures: each norm's input and output statistics; the residual stream's size by depth."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.common import (
    MARGIN,
    PAD_TOKEN,
    SERIES_COLOURS,
    base_spec,
    depth_name,
    escape,
    new_figure,
    visible_ticks,
)
from app.i18n import _


def _token_at(tokens: list[str], position: int) -> str:
    """The token at a position; positions past the sentence are padding."""
    return tokens[position] if position < len(tokens) else PAD_TOKEN


def _token_axis(positions: list[int], tokens: list[str]) -> dict:
    """Numeric positions labelled with (escaped) tokens; duplicates stay apart."""
    ticks, text = visible_ticks([_token_at(tokens, p) for p in positions])
    return dict(tickvals=[positions[i] for i in ticks], ticktext=text, tickangle=-45)


NORM_ORDER = ["embed.ln", "ln1", "ln2", "final_norm"]


SUBPLOT_GAP = 0.1  # the space between the mean's and the std's plots, a share of the height
SUBPLOT_TITLE = {"showarrow": False, "font": {"size": 16}, "x": 0.5, "xanchor": "center",
                 "xref": "paper", "yanchor": "bottom", "yref": "paper"}  # fmt: skip


@dataclass(frozen=True)
class NormLine:
    """One norm's input or output in one layer: the norm ("ln1", ...), the line's name, colour
    and side ("in" or "out"), and its mean and std over d per position."""

    norm: str
    name: str
    colour: str
    side: str
    positions: np.ndarray  # [tokens]
    mean: np.ndarray  # [tokens]
    std: np.ndarray  # [tokens]


def norm_lines(stats: pd.DataFrame, layer: int) -> list[NormLine]:
    """Each norm's input and output lines in `layer` (its ln1 and ln2; the embeddings' norm at
    -1, the final norm after the last block), in NORM_ORDER."""
    rows = stats[stats["layer"] == layer]
    if rows.empty:
        raise ValueError(
            _(
                "no LayerNorm statistics for layer={layer}; layers present: {present}",
                layer=layer,
                present=sorted(stats["layer"].unique().tolist()),
            )
        )
    lines = []
    norms = [n for n in NORM_ORDER if n in set(rows["norm"])]
    for colour, norm in zip(SERIES_COLOURS, norms, strict=False):
        part = rows[rows["norm"] == norm].sort_values("position")
        for side in ("in", "out"):
            name = _("{norm} input", norm=norm) if side == "in" else _("{norm} output", norm=norm)
            lines.append(
                NormLine(
                    norm,
                    name,
                    colour,
                    side,
                    part["position"].to_numpy(),
                    part[f"{side}_mean"].to_numpy(),
                    part[f"{side}_std"].to_numpy(),
                )
            )
    return lines


def _positions(lines: list[NormLine]) -> list[int]:
    """Every position a line has a value at, in order."""
    return sorted({p for line in lines for p in line.positions.tolist()})


def _norms_title(lines: list[NormLine], layer: int) -> str:
    titles = {
        "embed.ln": _("Norm statistics in the embeddings: input (dotted) vs output (solid)"),
        "final_norm": _("Norm statistics in the final norm: input (dotted) vs output (solid)"),
    }
    return titles.get(lines[0].norm) or _(
        "Norm statistics in block {layer}: input (dotted) vs output (solid)", layer=layer
    )


def _statistics() -> tuple[tuple[str, str, str], ...]:
    """Each plot's statistic: its column, its title and its short name, in the run's language."""
    return (
        ("mean", _("mean over the d features"), _("mean")),
        ("std", _("standard deviation over the d features"), _("std")),
    )


def layernorm_chart(stats: pd.DataFrame, tokens: list[str], layer: int) -> go.Figure:
    """Mean and std over d of each norm's input and output, per token, for one layer: two plots
    one above the other on one token axis (built as plain dicts: app.charts.common.new_figure)."""
    lines = norm_lines(stats, layer)
    traces = []
    for line in lines:
        labels = [escape(_token_at(tokens, p)) for p in line.positions.tolist()]
        dash, symbol = ("dot", "circle-open") if line.side == "in" else ("solid", "circle")
        said = {"mean": _("{name} mean", name=line.name), "std": _("{name} std", name=line.name)}
        for axis, stat in (("", "mean"), ("2", "std")):
            traces.append({
                "type": "scatter",
                "x": line.positions,
                "y": getattr(line, stat),
                "customdata": labels,
                "mode": "lines+markers",
                "name": line.name,
                "legendgroup": line.name,
                "showlegend": axis == "",
                "line": {"color": line.colour, "dash": dash, "width": 2},
                "marker": {"symbol": symbol, "size": 8, "color": line.colour},
                "hovertemplate": f"'%{{customdata}}' (%{{x}})<br>{said[stat]} %{{y:.4f}}"
                "<extra></extra>",
                "xaxis": f"x{axis}",
                "yaxis": f"y{axis}",
            })  # fmt: skip
    (__, mean_title, __), (__, std_title, __) = _statistics()
    middle = (1 - SUBPLOT_GAP) / 2  # each plot's share of the height
    positions = _positions(lines)
    layout = {
        **base_spec(_norms_title(lines, layer), height=640),
        "xaxis": {"anchor": "y", "domain": [0.0, 1.0], "matches": "x2", "showticklabels": False},
        "yaxis": {"anchor": "x", "domain": [1 - middle, 1.0]},
        "xaxis2": {"anchor": "y2", "domain": [0.0, 1.0], **_token_axis(positions, tokens)},
        "yaxis2": {"anchor": "x2", "domain": [0.0, middle]},
        "annotations": [
            {**SUBPLOT_TITLE, "text": mean_title, "y": 1.0},
            {**SUBPLOT_TITLE, "text": std_title, "y": middle},
        ],
        "legend": {"orientation": "h", "x": 0, "y": 1.06, "yanchor": "bottom"},
        "margin": {**MARGIN, "t": 110},  # room for the legend above the plots
    }
    return new_figure(traces, layout)


LINE_DIGITS = 6  # significant digits a value keeps in token_lines.js's data


def layernorm_lines(stats: pd.DataFrame, tokens: list[str], layer: int) -> dict:
    """layernorm_chart's lines as token_lines.js's data (encoder/web/token_lines.js): the same
    title, series and plots, every word in the run's language, each value to LINE_DIGITS
    significant digits (None where a norm has no value at a position)."""
    lines = norm_lines(stats, layer)
    positions = _positions(lines)

    def values(line: NormLine, column: str) -> list[float | None]:
        said = getattr(line, column).tolist()
        by_position = dict(zip(line.positions.tolist(), said, strict=True))
        return [
            float(f"{by_position[p]:.{LINE_DIGITS}g}")
            if p in by_position and math.isfinite(by_position[p])
            else None
            for p in positions
        ]

    return {
        "title": _norms_title(lines, layer),
        "tokens": [_token_at(tokens, p) for p in positions],
        "series": [
            {
                "name": line.name,
                "colour": line.colour,
                "dashed": line.side == "in",
                "open": line.side == "in",
            }
            for line in lines
        ],  # fmt: skip
        "panels": [
            {"title": title, "short": short, "values": [values(line, column) for line in lines]}
            for column, title, short in _statistics()
        ],
    }


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
    traces = [
        {
            "type": "scatter",
            "x": xs,
            "y": ys,
            "customdata": labels,
            "mode": "lines",
            "name": _("each token"),
            "line": {"color": "rgba(0, 114, 178, 0.35)", "width": 1},
            "hovertemplate": _("%{customdata} after %{x}: %{y:.3f}") + "<extra></extra>",
        },
        {
            "type": "scatter",
            "x": mean.index.to_numpy(),
            "y": mean.to_numpy(),
            "mode": "lines+markers",
            "name": _("mean over tokens"),
            "line": {"color": "#D55E00", "width": 5},
            "marker": {"size": 10},
            "hovertemplate": _("mean after %{x}: %{y:.3f}") + "<extra></extra>",
        },
    ]
    layout = {
        **base_spec(_("Size of each token's residual stream vector across depth"), 460),
        "xaxis": {
            "title": {"text": _("residual stream after")},
            "tickvals": depths,
            "ticktext": [depth_name(d) for d in depths],
            # half a step either side and the names turned: the first one ("embeddings") clear
            # of the y axis' "0" in a half-page figure
            "range": [min(depths) - 0.5, max(depths) + 0.5],
            "tickangle": -45,
        },
        "yaxis": {"title": {"text": _("L2 norm")}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
    }
    return new_figure(traces, layout)
