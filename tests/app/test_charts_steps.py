"""Figure builders of the Attention steps view and of head ablation."""

from __future__ import annotations

import numpy as np

from app.charts.ablation import attention_difference, cell_text, residual_cosine_chart
from app.charts.steps import colour_limit, softmax_comparison, token_matrix, vector_strips

EVIL = "<img src=x onerror=alert(1)>"


def test_vector_strips_centre_zero_and_clip_outliers_only_when_asked():
    values = np.linspace(-1, 1, 400)
    values[7] = -40.0  # one outlying dimension, as trained residual streams have
    plain = vector_strips([("x", values)], title="t").data[0]
    assert (plain.zmin, plain.zmid, plain.zmax) == (-40.0, 0, 40.0)
    fig = vector_strips([("x", values)], title="t", robust=True)
    robust = fig.data[0]
    assert robust.zmax == colour_limit(values, robust=True) < 1.0
    assert robust.zmin == -robust.zmax
    assert f"colours stop at ±{robust.zmax:.2g}" in fig.layout.title.text
    assert robust.z[0][7] == -40.0  # the data keeps the value; only the colours saturate


def test_vector_strips_outline_the_chosen_head():
    concat = np.arange(12.0)
    fig = vector_strips([("concat", concat)], title="t", group_size=4, highlight_group=1)
    (outline,) = [s for s in fig.layout.shapes if s.type == "rect"]
    assert (outline.x0, outline.x1) == (3.5, 7.5)
    assert [a.text for a in fig.layout.annotations] == ["head 1"]
    boundaries = sorted(s.x0 for s in fig.layout.shapes if s.type == "line")
    assert boundaries == [3.5, 7.5]


def test_token_matrix_labels_rows_literally_and_shades_padding():
    tokens = ["[CLS]", EVIL, "[SEP]", "[PAD]", "[PAD]"]
    fig = token_matrix(np.ones((5, 4)), tokens, 3, title="K", colour_title="k")
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks[0] == "0 [CLS]" and ticks[2:] == ["2 [SEP]", "3 [PAD]", "4 [PAD]"]
    assert ticks[1].startswith("1 &lt;img src=x") and "<img" not in ticks[1]  # cut, escaped
    hover = fig.data[0].customdata
    assert hover[1][0] == "1 &lt;img src=x onerror=alert(1)&gt;"  # the hover has it whole
    (shade,) = fig.layout.shapes
    assert (shade.y0, shade.y1) == (2.5, 4.5)  # exactly the two padding rows
    assert fig.layout.annotations[0].text == "padding (masked)"
    no_padding = token_matrix(np.ones((3, 4)), tokens[:3], 3, title="K", colour_title="k")
    assert not no_padding.layout.shapes


def test_softmax_comparison_draws_both_weight_rows_with_their_entropies():
    scaled, unscaled = np.array([0.5, 0.3, 0.2]), np.array([0.9, 0.08, 0.02])
    fig = softmax_comparison(["a", "b", "c"], scaled, unscaled, head_dim=16, entropies=(1.0, 0.3))
    assert [list(bar.y) for bar in fig.data] == [scaled.tolist(), unscaled.tolist()]
    assert "√16" in fig.data[0].name and "entropy 1.0000 nats" in fig.data[0].name
    assert "entropy 0.3000 nats" in fig.data[1].name


def test_attention_difference_is_diverging_around_zero_with_real_layer_numbers():
    difference = np.zeros((2, 3, 4, 4))
    difference[1, 2, 0, 1] = -0.25
    difference[0, 0, 3, 3] = 0.7  # a padded cell (n_valid 3) does not set the scale
    fig = attention_difference(difference, 3, layers=[4, 5])
    values = fig.data[0]
    assert (values.zmin, values.zmid, values.zmax) == (-0.25, 0, 0.25)
    assert list(fig.layout.yaxis2.ticktext) == ["L4", "L5"]
    assert "layer 5 · query 0" in fig.layout.yaxis.ticktext


def test_a_difference_carries_its_sign_in_more_than_colour():
    difference = np.zeros((1, 2, 4, 4))
    difference[0, 1, 2, 0] = -0.3
    difference[0, 0, 1, 3] = 0.02  # under a tenth of the scale's end: no mark
    difference[0, 0, 0, 1] = 0.2
    values = attention_difference(difference, 4, layers=[0]).data[0]
    assert values.colorbar.tickformat.startswith("+")  # the legend's numbers are signed
    z = np.array(values.z, dtype=float)
    marks = np.array(values.text)
    assert marks.shape == z.shape and values.texttemplate == "%{text}"
    assert sorted(marks[marks != ""]) == ["+", "\u2212"]
    assert marks[np.isclose(z, -0.3)].tolist() == ["\u2212"]
    assert marks[np.isclose(z, 0.2)].tolist() == ["+"]
    many = attention_difference(np.full((1, 2, 30, 30), 0.5), 30, layers=[0]).data[0]
    assert many.text is None  # cells too small to hold a mark: the hover and the table say it


def test_cosine_cells_are_short():
    assert [cell_text(c) for c in (0.99996, 0.9912, -0.5)] == ["1", ".991", "-.500"]
    fig = residual_cosine_chart(
        np.array([[1.0, 1.0], [0.99, 0.95]]), np.array([1.0, 0.97]), ["a", EVIL], title="t"
    )
    assert [row[1] for row in fig.data[0].text] == [".990", ".950"]  # a row per token
    assert "<img" not in str(fig.data[0].customdata)
