"""encoder.web.head_fingerprint.fingerprint_data: head_fingerprint.js's data holds the corpus
grid transposed to [behaviour][head], rounded to FINGERPRINT_DIGITS decimals as plain floats (None
for a missing value), each column's (layer, head), the behaviours as named, and its words (told in
the page's language); and the Heads across a corpus view draws it with the module, not Plotly."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from app import i18n
from app.page.figures import told_all
from encoder import EncoderConfig, TransformerEncoder
from encoder.inspect.corpus import (
    FINGERPRINT,
    bundled_corpus,
    corpus_of,
    corpus_statistics,
    fingerprint,
)
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web.head_fingerprint import FINGERPRINT_DIGITS, fingerprint_data
from tests.app.helpers import assert_no_exception, module_data, open_page

LAYERS = [0, 0, 0, 1, 1, 1]  # 2 layers x 3 heads, layer by layer
HEADS = [0, 1, 2, 0, 1, 2]
# [head, behaviour]: every value distinct (head j, behaviour b: j / 10 + b / 100 + 0.000049),
# so a grid read the wrong way round, or a column out of order, reads other numbers
GRID = np.arange(6)[:, None] / 10 + np.arange(7)[None, :] / 100 + 0.000049
VIEW = "Heads across a corpus"
SMALL = {"d_model": "32", "num_heads": "2", "num_layers": "2"}


@pytest.fixture
def speaking():
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def test_the_values_are_the_grid_transposed_and_rounded_to_four_decimals():
    data = fingerprint_data(GRID, LAYERS, HEADS, list(FINGERPRINT))
    assert json.loads(json.dumps(data, allow_nan=False)) == data  # plain JSON, no NaN
    assert data["behaviours"] == list(FINGERPRINT)
    assert data["heads"] == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    values = data["values"]
    assert len(values) == 7 and all(len(row) == 6 for row in values)  # [behaviour][head]
    assert FINGERPRINT_DIGITS == 4
    for b in range(7):
        for j in range(6):
            # 0.000049 is rounded away: 4 decimals
            assert values[b][j] == pytest.approx(j / 10 + b / 100, abs=1e-12), (b, j)
            assert type(values[b][j]) is float
    assert values[6][4] == 0.46 and values[1][0] == 0.01  # spread of L1 H1; next of L0 H0
    assert (data["zmin"], data["zmax"]) == (0.0, 1.0)
    assert data["scale"] == "mean share"
    assert data["title"] == (
        "Fingerprint of every head: its mean attention over the corpus (spread: entropy / ln n)"
    )


def test_a_missing_value_is_none_and_a_grid_of_the_wrong_shape_is_refused():
    grid = GRID.copy()
    grid[2, 5] = np.nan  # punctuation of L0 H2: a corpus without any, say
    data = fingerprint_data(grid, LAYERS, HEADS, list(FINGERPRINT))
    assert data["values"][5][2] is None
    assert json.dumps(data, allow_nan=False)
    with pytest.raises(ValueError, match=r"shape \(6, 7\), not .* \(5, 7\)"):
        fingerprint_data(GRID, LAYERS[:5], HEADS[:5], list(FINGERPRINT))
    with pytest.raises(ValueError, match=r"shape \(7, 6\)"):
        fingerprint_data(GRID.T, LAYERS, HEADS, list(FINGERPRINT))
    with pytest.raises(ValueError, match="5 layer numbers"):
        fingerprint_data(GRID, LAYERS[:5], HEADS, list(FINGERPRINT))


def test_the_words_are_in_the_runs_language_and_the_behaviours_as_given(speaking):
    speaking("es")
    names = ["anterior", "siguiente", "sí misma", "[CLS]", "[SEP]", "puntuación", "dispersión"]
    data = told_all(fingerprint_data(GRID, LAYERS, HEADS, names))
    assert data["behaviours"] == names
    assert data["scale"] == "proporción media"
    assert "Fingerprint" not in data["title"]


def test_a_models_corpus_statistics_become_its_heads_columns():
    """The library's table through fingerprint() and fingerprint_data(): each column is the
    table's head, each row one of its FINGERPRINT columns."""
    torch.manual_seed(0)
    model = TransformerEncoder(EncoderConfig(d_model=32, num_heads=4, num_layers=3, d_ff=64))
    corpus = corpus_of(tokenize(bundled_corpus()[:24], load_tokenizer(), 64))
    table = corpus_statistics(model.eval(), corpus).table
    grid = fingerprint(table)
    data = fingerprint_data(grid, table["layer"].tolist(), table["head"].tolist(), FINGERPRINT)
    assert data["heads"] == [[layer, head] for layer in range(3) for head in range(4)]
    for b, name in enumerate(FINGERPRINT):
        np.testing.assert_allclose(data["values"][b], table[name], atol=0.5e-4, rtol=0)


def test_the_view_draws_the_module_and_no_plotly_chart():
    at = open_page(view=VIEW, **SMALL)
    assert_no_exception(at)
    assert at.get("plotly_chart") == []
    data = module_data(at, "corpus_fingerprint")
    table = at.dataframe[-1].value  # every head's numbers, as the page shows them
    assert data["heads"] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert data["behaviours"] == list(FINGERPRINT)
    for b, name in enumerate(FINGERPRINT):
        np.testing.assert_allclose(data["values"][b], table[name], atol=0.5e-4, rtol=0)


def test_compare_mode_draws_each_setups_fingerprint_under_its_own_key():
    at = open_page(view=VIEW, compare="1", b_num_heads="4", **SMALL)
    assert_no_exception(at)
    assert at.get("plotly_chart") == []
    a, b = module_data(at, "corpus_fingerprint"), module_data(at, "corpus_fingerprint_b")
    assert len(a["heads"]) == 4 and len(b["heads"]) == 8
    assert b["heads"][4] == [1, 0]
