"""app.charts.activations: what each figure draws, escaped labels, rounded numbers."""

from __future__ import annotations

import numpy as np
import pytest

from app.charts.activations import (
    MAX_FLAGGED,
    cosine_chart,
    mean_cosine_chart,
    pca_paths_chart,
    residual_stream_chart,
)

EVIL = ["[CLS]", "<b>x</b>", "<img src=x onerror=alert(1)>", "[SEP]"]
ESCAPED = ["[CLS]", "&lt;b&gt;x&lt;/b&gt;", "&lt;img src=x onerror=alert(1)&gt;", "[SEP]"]


def values(trace) -> np.ndarray:
    return np.asarray(trace, dtype=float)


def test_residual_chart_flags_at_most_a_few_outliers_by_dimension():
    rng = np.random.default_rng(0)
    stream = rng.normal(size=(4, 6)).astype(np.float32)
    dims = np.array([0, 3, 7, 8, 20, 31])
    outliers = [(7, 30.0), (20, 12.5)] + [(d, 7.0) for d in (0, 3, 8, 31)]
    fig = residual_stream_chart(stream, dims, np.ones(4), EVIL, outliers, "title")
    heatmap, norms = fig.data
    assert list(heatmap.x) == ["0", "3", "7", "8", "20", "31"]
    assert heatmap.zmin == -heatmap.zmax == -np.abs(np.round(stream, 4)).max()
    flagged = [a for a in fig.layout.annotations if a.text.startswith("dim ")]
    assert len(flagged) == MAX_FLAGGED
    assert [a.text for a in flagged[:2]] == ["dim 7: 30x", "dim 20: 12x"]
    assert [a.x for a in flagged[:2]] == [2, 4]  # the columns of dimensions 7 and 20
    hidden = residual_stream_chart(stream, dims, np.ones(4), EVIL, [(5, 9.0)], "title")
    assert not [a for a in hidden.layout.annotations if a.text.startswith("dim ")]  # not drawn
    assert list(norms.y) == list(heatmap.y)


def test_cosine_chart_is_fixed_to_minus_one_one_and_escapes_tokens():
    matrix = np.array([[1.0, 0.123456], [0.123456, 1.0]])
    fig = cosine_chart(matrix, EVIL[1:3], "title")
    (heatmap,) = fig.data
    assert (heatmap.zmin, heatmap.zmax) == (-1, 1)
    assert values(heatmap.z)[0, 1] == pytest.approx(0.1235, abs=1e-6)
    assert all("<" not in label for label in heatmap.x)


def test_mean_cosine_chart_rings_the_chosen_depth():
    fig = mean_cosine_chart(np.arange(4), np.array([0.1, 0.2, 0.3, 0.4]), chosen=2)
    line, ring = fig.data
    assert list(fig.layout.xaxis.ticktext) == ["embeddings", "block 0", "block 1", "block 2"]
    assert (ring.x[0], ring.y[0]) == (2, pytest.approx(0.3))


def test_pca_chart_draws_one_path_per_token_and_names_the_variance():
    coords = np.arange(3 * 4 * 2, dtype=float).reshape(3, 4, 2)  # [depth, token, 2]
    fig = pca_paths_chart(coords, np.array([0.6123, 0.25]), EVIL)
    paths, points, labels = fig.data
    assert list(paths.x).count(None) == 4  # four tokens, each path ended by a break
    assert len(points.x) == 12
    np.testing.assert_array_equal(values(labels.x), coords[-1, :, 0])
    assert all("<" not in text for text in labels.text)
    assert "61.2%" in fig.layout.xaxis.title.text and "25.0%" in fig.layout.yaxis.title.text
    assert "'&lt;b&gt;x&lt;/b&gt;' (1) after block 1" in points.customdata
