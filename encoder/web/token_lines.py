"""The token lines' data (token_lines.js): each norm's input and output statistics (mean and std
over d) per token, for one layer, as lines over a token axis in two panels. Its words are
`Said`s (English, with their templates): a front end tells them in its reader's language."""

from __future__ import annotations

import math

import pandas as pd

from encoder.core.said import Said
from encoder.web import SERIES_COLOURS

PAD_TOKEN = "[PAD]"  # a position past the sentence (encoder.io.tokenize.PAD)
NORM_ORDER = ["embed.ln", "ln1", "ln2", "final_norm"]
LINE_DIGITS = 6  # significant digits a value keeps in the data


def token_at(tokens: list[str], position: int) -> str:
    """The token at a position; positions past the sentence are padding."""
    return tokens[position] if position < len(tokens) else PAD_TOKEN


def _norms_title(norm: str, layer: int) -> str:
    titles = {
        "embed.ln": Said("Norm statistics in the embeddings: input (dotted) vs output (solid)"),
        "final_norm": Said("Norm statistics in the final norm: input (dotted) vs output (solid)"),
    }
    return titles.get(norm) or Said(
        "Norm statistics in block {layer}: input (dotted) vs output (solid)", layer=layer
    )


def _statistics() -> tuple[tuple[str, str, str], ...]:
    """Each panel's statistic: its column, its title and its short name."""
    return (
        ("mean", Said("mean over the d features"), Said("mean")),
        ("std", Said("standard deviation over the d features"), Said("std")),
    )


def _values(column, at: list[int], positions: list[int]) -> list[float | None]:
    """A norm's `column` (its values at positions `at`) at every one of `positions`, to
    LINE_DIGITS significant digits (None where it has none)."""
    by_position = dict(zip(at, column.tolist(), strict=True))
    return [
        float(f"{by_position[p]:.{LINE_DIGITS}g}")
        if p in by_position and math.isfinite(by_position[p])
        else None
        for p in positions
    ]


def layernorm_lines(stats: pd.DataFrame, tokens: list[str], layer: int) -> dict:
    """Each norm's statistics in `layer` (encoder.inspect.norms' table of one sentence, whose
    `tokens` these are: its ln1 and ln2; the embeddings' norm at -1, the final norm after the
    last block) as token_lines.js's data: the title, a series for each norm's input and output
    (in NORM_ORDER) and a panel for each statistic, each value to LINE_DIGITS significant
    digits (None where a norm has no value at a position)."""
    rows = stats[stats["layer"] == layer]
    if rows.empty:
        raise ValueError(
            Said(
                "no LayerNorm statistics for layer={layer}; layers present: {present}",
                layer=layer,
                present=sorted(stats["layer"].unique().tolist()),
            )
        )
    norms = [n for n in NORM_ORDER if n in set(rows["norm"])][: len(SERIES_COLOURS)]
    positions = sorted(set(rows.loc[rows["norm"].isin(norms), "position"].tolist()))
    series, panels = [], {column: [] for column, __, __ in _statistics()}
    for colour, norm in zip(SERIES_COLOURS, norms, strict=False):
        part = rows[rows["norm"] == norm].sort_values("position")
        at = part["position"].tolist()
        said = {"in": Said("{norm} input", norm=norm), "out": Said("{norm} output", norm=norm)}
        for side in ("in", "out"):
            dashed = side == "in"
            series.append({"name": said[side], "colour": colour, "dashed": dashed, "open": dashed})
            for column, values in panels.items():
                values.append(_values(part[f"{side}_{column}"], at, positions))
    return {
        "title": _norms_title(norms[0], layer),
        "tokens": [token_at(tokens, p) for p in positions],
        "series": series,
        "panels": [
            {"title": title, "short": short, "values": panels[column]}
            for column, title, short in _statistics()
        ],
    }
