"""encoder.web.top_units: top_units.js's data holds the units' values rounded as plain lists, the
tokens as typed (the module draws them as text), and its words, told in the page's
language (app.page.figures.told_all)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from app import i18n
from app.page.figures import told_all
from encoder.web.top_units import top_units_data

EVIL = ["[CLS]", "<b>x</b>", "<img src=x onerror=alert(1)>", "[SEP]"]
UNITS = np.array([5, 9, 2])
ACROSS = (np.arange(12, dtype=np.float32).reshape(3, 4) - 3.3) / 7  # [units, tokens], some < 0


def data_of(token: int = 2, units=UNITS, across=ACROSS) -> dict:
    """The data of `units` on `token` (block 1), their values on it taken from `across`."""
    return top_units_data(units, across[:, token], across, EVIL, token, 1)


@pytest.fixture
def speaking():
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def test_the_data_holds_the_units_numbers_as_plain_lists():
    data = data_of()
    assert json.loads(json.dumps(data)) == data  # plain JSON: lists, floats, ints, strings
    assert data["units"] == ["unit 5", "unit 9", "unit 2"]
    assert data["tokens"] == EVIL and data["token"] == 2
    # the bars' and the cells' values, rounded to 4 decimals, as Python floats
    expected = [[round(float(v), 4) for v in row] for row in ACROSS.tolist()]
    assert data["across"] == expected
    assert data["values"] == [row[2] for row in expected]
    assert all(type(v) is float for row in data["across"] for v in row)
    # the colour scale: from the least value (below 0 here) to the largest
    assert data["zmin"] == round(float(ACROSS.min()), 4) < 0
    assert data["zmax"] == round(float(ACROSS.max()), 4) == max(map(max, expected))
    assert data["colour"] == "#0072B2" and data["scale"] == "value"


def test_the_title_names_the_token_as_typed_and_the_notes_no_side():
    data = data_of()
    assert data["title"] == f"The 3 most active units of '{EVIL[2]}' (2) in block 1"
    assert data["notes"] == [
        "the bars: its values after the activation;",
        "the heatmap: the same units on every token (its column outlined)",
    ]  # not "left" and "right": a right-to-left page draws them the other way round
    markup = data_of(token=1)
    assert markup["title"] == "The 3 most active units of '<b>x</b>' (1) in block 1"
    assert "&lt;" not in json.dumps(markup)


def test_one_unit_has_the_singular_title_and_a_zero_floor():
    positive = np.abs(ACROSS[:1]) + 0.5  # every value above 0: the scale still starts at 0
    data = data_of(token=0, units=UNITS[:1], across=positive)
    assert data["title"] == "The 1 most active unit of '[CLS]' (0) in block 1"
    assert data["zmin"] == 0.0
    assert data["zmax"] == round(float(positive.max()), 4)


def test_in_another_language_the_words_are_translated(speaking):
    speaking("es")
    data = told_all(data_of())
    assert data["units"][0] == "unidad 5" and data["scale"] == "valor"
    assert data["notes"][0] == "las barras: sus valores después de la activación;"
    assert EVIL[2] in data["title"] and "most active" not in data["title"]
