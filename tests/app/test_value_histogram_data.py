"""encoder.web.value_histogram.value_histogram_data: the histogram's bins, curve, axis ranges
(both zeros on one line) and words as value_histogram.js's data, in plain lists."""

from __future__ import annotations

import json

import numpy as np
import pytest

from encoder.web.value_histogram import _zero_aligned_ranges, value_histogram_data

EDGES = np.linspace(-3.123456, 2.0, 11)
COUNTS = np.arange(10) * 3 + 1
CURVE_X = np.linspace(-3.123456, 2.0, 21)
CURVE_Y = CURVE_X / 2 - 0.1712345  # dips below 0, as GELU does


def test_the_data_are_the_charts_bins_curve_ranges_and_words():
    data = value_histogram_data(
        EDGES, COUNTS, CURVE_X, CURVE_Y, "GELU", "Block 1 <b>x</b>", ["a note", "another"]
    )
    assert json.loads(json.dumps(data)) == data  # plain lists, as JSON carries them
    assert data["title"] == "Block 1 <b>x</b>" and data["notes"] == ["a note", "another"]
    assert data["name"] == "GELU"
    assert data["counts"] == [1, 4, 7, 10, 13, 16, 19, 22, 25, 28]
    assert all(type(c) is int for c in data["counts"])
    # four decimals, as the figure's own numbers
    assert data["edges"][0] == -3.1235 and data["edges"][-1] == 2.0
    assert data["edges"] == pytest.approx(np.round(EDGES, 4).tolist(), abs=1e-9)
    assert data["curve"]["x"] == pytest.approx(np.round(CURVE_X, 4).tolist(), abs=1e-9)
    assert data["curve"]["y"] == pytest.approx(np.round(CURVE_Y, 4).tolist(), abs=1e-9)
    assert data["curve"]["y"][0] == round(-3.123456 / 2 - 0.1712345, 4)
    counts_range, curve_range = _zero_aligned_ranges(28.0, CURVE_Y.min(), CURVE_Y.max())
    assert data["ranges"] == {"counts": counts_range, "curve": curve_range}
    low, high = data["ranges"]["counts"]
    assert low < 0 < high == pytest.approx(1.05 * 28)

    def zero_at(axis: list[float]) -> float:  # where 0 sits, as a share of the axis from below
        low, high = axis
        return -low / (high - low)

    # GELU dips below 0: its zero sits above the axis' foot, still on the bars' base
    assert zero_at(curve_range) > 0.05
    assert zero_at(counts_range) == pytest.approx(zero_at(curve_range))
    labels = data["labels"]
    assert [labels["below"], labels["above"]] == ["values below 0", "values 0 or above"]
    assert labels["curve"] == "GELU(x) (right axis)"
    assert labels["x"] == "pre-activation value x"
    assert labels["counts"] == "how many values"
    assert labels["values"] == "GELU(x)"
    assert data["colours"] == {"below": "#D55E00", "above": "#0072B2", "curve": "#111111"}


def test_a_histogram_without_counts_uses_a_unit_axis():
    data = value_histogram_data([-1.0, 0.0, 1.0], [0, 0], [-1.0, 1.0], [0.0, 1.0], "ReLU", "t", [])
    assert data["counts"] == [0, 0] and data["ranges"]["counts"][1] == pytest.approx(1.05)


@pytest.mark.parametrize(
    ("edges", "counts", "curve_x", "curve_y", "problem"),
    [
        (EDGES, COUNTS[:-1], CURVE_X, CURVE_Y, "9 counts, 11 edges"),
        (EDGES[:1], [], CURVE_X, CURVE_Y, "0 counts, 1 edges"),
        (EDGES, COUNTS, CURVE_X, CURVE_Y[:-2], "21 x, 19 y"),
        (EDGES, COUNTS, [], [], "0 x, 0 y"),
    ],
)
def test_lengths_that_do_not_match_are_a_value_error(edges, counts, curve_x, curve_y, problem):
    with pytest.raises(ValueError, match=problem):
        value_histogram_data(edges, counts, curve_x, curve_y, "GELU", "t", [])
