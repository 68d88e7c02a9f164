"""The value histogram's data (value_histogram.js): the values before a feed-forward's
activation in bins (those below 0 in their own colour), the activation's curve over them on a
second axis whose 0 lines up with the bars' base. Its words are `Said`s (English, with their
templates) or the caller's: a front end tells them in its reader's language.

A pure builder: numbers from encoder.inspect.activations in, plain lists out (JSON as it is).
"""

from __future__ import annotations

import numpy as np

from encoder.core.said import Said
from encoder.web import SERIES_COLOURS, plain

BELOW_ZERO = SERIES_COLOURS[4]  # vermillion: the values the activation zeroes or bends
ABOVE_ZERO = SERIES_COLOURS[0]
CURVE_COLOUR = "#111111"  # the activation function's line over a histogram


def _zero_aligned_ranges(counts_max: float, curve_min: float, curve_max: float):
    """Ranges for the counts (left) and the curve (right) axes that put both zeros on one line."""
    low = min(curve_min, 0.0)
    span = max(curve_max, 1e-9) - low
    curve_range = [low - 0.05 * span, max(curve_max, 1e-9) + 0.05 * span]
    zero_at = -curve_range[0] / (curve_range[1] - curve_range[0])  # 0..1 up the plot
    top = 1.05 * max(counts_max, 1)
    return [-zero_at / (1 - zero_at) * top, top], curve_range


def value_histogram_data(
    edges: np.ndarray,
    counts: np.ndarray,
    curve_x: np.ndarray,
    curve_y: np.ndarray,
    name: str,
    title: str,
    notes: list[str],
) -> dict:
    """value_histogram.js's data: `edges` [bins + 1] and `counts` [bins] of the values before the
    activation `name` ("GELU"), its curve (`curve_x`, `curve_y`) over them, the ranges of the
    counts' and the curve's axes (both zeros on one line), the title and the lines under it
    (`notes`, plain text) and every word the figure shows (Saids). ValueError when the counts
    are not one fewer than the edges or the curve's x and y differ in length."""
    edges, counts = np.asarray(edges, dtype=np.float64), np.asarray(counts)
    curve_x, curve_y = np.asarray(curve_x), np.asarray(curve_y)
    if edges.ndim != 1 or counts.shape != (max(len(edges) - 1, 0),) or len(edges) < 2:
        raise ValueError(
            f"a histogram needs one count fewer than its edges: {counts.size} counts, "
            f"{edges.size} edges"
        )
    if curve_x.shape != curve_y.shape or curve_x.ndim != 1 or not curve_x.size:
        raise ValueError(
            f"the curve needs as many x as y values: {curve_x.size} x, {curve_y.size} y"
        )
    counts_range, curve_range = _zero_aligned_ranges(
        float(counts.max()) if counts.size else 1.0, float(curve_y.min()), float(curve_y.max())
    )
    return {
        "title": title,
        "notes": list(notes),
        "name": name,
        "edges": plain(edges),
        "counts": [int(c) for c in counts.tolist()],
        "curve": {"x": plain(curve_x), "y": plain(curve_y)},
        "ranges": {"counts": counts_range, "curve": curve_range},
        "colours": {"below": BELOW_ZERO, "above": ABOVE_ZERO, "curve": CURVE_COLOUR},
        "labels": {
            "below": Said("values below 0"),
            "above": Said("values 0 or above"),
            "curve": Said("{name}(x) (right axis)", name=name),
            "x": Said("pre-activation value x"),
            "counts": Said("how many values"),
            "values": f"{name}(x)",
        },
    }
