"""The pre-activation histogram as value_histogram.js's data (encoder/web/value_histogram.js):
pre_activation_chart's bins, curve, axis ranges, colours and words, drawn in the browser as SVG
instead of by plotly.

A pure builder: numbers from encoder.inspect.activations in, plain lists out (JSON as it is).
"""

from __future__ import annotations

import numpy as np

from app.charts.activations import (
    ABOVE_ZERO,
    BELOW_ZERO,
    CURVE_COLOUR,
    histogram_ranges,
    plain,
)
from app.i18n import _


def value_histogram_data(
    edges: np.ndarray,
    counts: np.ndarray,
    curve_x: np.ndarray,
    curve_y: np.ndarray,
    name: str,
    title: str,
    notes: list[str],
) -> dict:
    """pre_activation_chart's figure as value_histogram.js's data: `edges` [bins + 1] and `counts`
    [bins] of the values before the activation `name` ("GELU"), its curve (`curve_x`, `curve_y`)
    over them, the ranges of the counts' and the curve's axes (both zeros on one line), the title
    and the lines under it (`notes`, plain text) and every word the figure shows, in the run's
    language. ValueError when the counts are not one fewer than the edges or the curve's x and y
    differ in length."""
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
    counts_range, curve_range = histogram_ranges(counts, curve_y)
    return {
        "title": title,
        "notes": list(notes),
        "name": name,
        "edges": plain(edges),
        "counts": [int(c) for c in counts.tolist()],
        "curve": {"x": plain(curve_x), "y": plain(curve_y)},
        "ranges": {"counts": counts_range, "curve": curve_range},
        "colours": {"below": BELOW_ZERO, "above": ABOVE_ZERO, "curve": CURVE_COLOUR},
        "labels": {  # pre_activation_chart's own words
            "below": _("values below 0"),
            "above": _("values 0 or above"),
            "curve": _("{name}(x) (right axis)", name=name),
            "x": _("pre-activation value x"),
            "counts": _("how many values"),
            "values": f"{name}(x)",
        },
    }
