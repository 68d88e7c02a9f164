"""The token lines' data (token_lines.js): each norm's input and output statistics (mean and std
over d) per token, for one layer, as lines over a token axis in two panels. Its words are
`Said`s (English, with their templates): a front end tells them in its reader's language."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from encoder.core.said import Said
from encoder.web import SERIES_COLOURS

PAD_TOKEN = "[PAD]"  # a position past the sentence (encoder.io.tokenize.PAD)
NORM_ORDER = ["embed.ln", "ln1", "ln2", "final_norm"]
LINE_DIGITS = 6  # significant digits a value keeps in the data


def token_at(tokens: list[str], position: int) -> str:
    """The token at a position; positions past the sentence are padding."""
    return tokens[position] if position < len(tokens) else PAD_TOKEN


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
            Said(
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
            name = (
                Said("{norm} input", norm=norm)
                if side == "in"
                else Said("{norm} output", norm=norm)
            )
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


def _norms_title(lines: list[NormLine], layer: int) -> str:
    titles = {
        "embed.ln": Said("Norm statistics in the embeddings: input (dotted) vs output (solid)"),
        "final_norm": Said("Norm statistics in the final norm: input (dotted) vs output (solid)"),
    }
    return titles.get(lines[0].norm) or Said(
        "Norm statistics in block {layer}: input (dotted) vs output (solid)", layer=layer
    )


def _statistics() -> tuple[tuple[str, str, str], ...]:
    """Each panel's statistic: its column, its title and its short name."""
    return (
        ("mean", Said("mean over the d features"), Said("mean")),
        ("std", Said("standard deviation over the d features"), Said("std")),
    )


def layernorm_lines(stats: pd.DataFrame, tokens: list[str], layer: int) -> dict:
    """Each norm's statistics in `layer` (encoder.inspect.norms' table of one sentence, whose
    `tokens` these are) as token_lines.js's data: the title, series and panels, each value to
    LINE_DIGITS significant digits (None where a norm has no value at a position)."""
    lines = norm_lines(stats, layer)
    positions = sorted({p for line in lines for p in line.positions.tolist()})

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
        "tokens": [token_at(tokens, p) for p in positions],
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
