"""The relabelling benchmark's page (every kind drawn in both languages, only the tag differing)
and its arithmetic (a kind's cost per element, a page's floor)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.bench.relabel_floor import floor_ms, per_element_ms
from tests.bench.relabel_page import KINDS, NAVIGATION, TABLE_ROWS

PAGE = str(Path(__file__).with_name("relabel_page.py"))


def texts(at: AppTest) -> list[str]:
    """Every element the run drew in the main area (labels, bodies, table cells), as its proto
    says it, but the title."""
    drawn = [str(node.proto) for node in at.main if node.proto is not None]
    return [text for text in drawn if "Relabel page" not in text]


def tagged(text: str, tag: str) -> bool:
    return re.search(rf"\b{tag}\b", text) is not None


@pytest.mark.parametrize("kind", [*KINDS, TABLE_ROWS])
def test_a_switch_changes_every_elements_text_and_a_rerun_one_line(kind):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params.update(kind=kind, count="3")
    at.run()
    assert not at.exception
    english = texts(at)
    assert len(english) == (2 if kind == TABLE_ROWS else 4)  # each element, and the last line
    at.text_area(key="text").set_value("new words").run()
    changed = [b for a, b in zip(english, texts(at), strict=True) if a != b]
    assert len(changed) == 1 and "The text: new words · EN" in changed[0]
    at.radio(key="language").set_value("ES").run()
    spanish = texts(at)
    assert all(tagged(text, "ES") and not tagged(text, "EN") for text in spanish)
    assert all(tagged(text, "EN") for text in english)


def test_the_navigation_kind_draws_a_page_a_title():
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.query_params.update(kind=NAVIGATION, count="3")
    at.run()
    assert not at.exception
    assert at.markdown[-1].value == "The text: a b c · EN"


def test_a_kinds_cost_per_element_is_its_extra_less_the_pages_own():
    bare = ([30.0, 32.0, 28.0], [40.0, 41.0, 39.0])  # choosing a language alone: +10 ms
    reruns, switches = [50.0, 52.0, 48.0], [100.0, 110.0, 90.0]  # +50 ms for 20 elements
    assert per_element_ms(reruns, switches, bare, 20) == pytest.approx(2.0)


def test_a_pages_floor_counts_its_measured_kinds_and_names_the_others():
    costs = {"selectbox": 3.0, "markdown": 0.5, NAVIGATION: 1.0, TABLE_ROWS: 0.25, "alert": -0.3}
    counts = {"stSelectbox": 2, "stMarkdown": 4, NAVIGATION: 12, TABLE_ROWS: 8, "stAlert": 1}
    assert floor_ms({**counts, "component": 3}, costs) == (6.0 + 2.0 + 12.0 + 2.0, ["3 component"])
