"""The benchmark's pure helpers and its two pages: the bare page (two heatmaps and a table from
precomputed numbers) and the reference page (the Attention view drawn with the Plotly figures of
before the explorer, from the app's own run)."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.bench.page_speed import (
    DRAWN,
    EXPLORER_KEY,
    MAIN_FIGURE,
    REFERENCE_DRAWN,
    VISIT_VIEWS,
    Looks,
    Session,
    checks_for,
    ratio_spread,
    spread_ms,
)
from tests.e2e.harness import BY_TITLE, expected_tokens

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The cat <b>sat</b> & the dog."


def test_spread_is_the_median_and_the_range():
    assert spread_ms([30.2, 9.6, 12.4, 11.0]) == "12 ms (10-30)"


def test_a_look_passes_only_in_time_and_with_nothing_sent():
    ms = {"hover": [10.0, 20.0, 90.0], "pin": [60.0, 61.0, 5.0]}
    verdicts = [line.split(" | ")[5] for line in Looks(ms, sent=0).rows("x", goal_ms=50)]
    assert verdicts == ["pass", "FAIL"]
    sent = Looks({"hover": [1.0]}, sent=1).rows("x", goal_ms=50)
    assert sent[0].split(" | ")[1:6] == ["1 ms (1-1), 1 sent", "-", "-", "<= 50 ms, 0 sent", "FAIL"]


def test_the_explorer_is_drawn_once_its_query_tokens_are_the_texts_own():
    tokens = expected_tokens(TEXT)[0]
    compare = checks_for(Session(None, "Attention", TEXT, compare=True), TEXT)
    assert compare == [[EXPLORER_KEY, json.dumps(tokens, separators=(",", ":"))]]
    reference = Session(None, "Attention", TEXT, compare=True, drawn=REFERENCE_DRAWN)
    keys = [key for key, _ in checks_for(reference, TEXT)]
    assert keys == ["overview", "head_detail", "overview_b", "head_detail_b"]
    assert DRAWN["LayerNorm"] == REFERENCE_DRAWN["LayerNorm"]


def test_the_reference_page_draws_the_attention_with_plotly_from_the_apps_run():
    at = AppTest.from_file(str(ROOT / "tests/bench/plotly_attention_page.py"), default_timeout=120)
    at.query_params.update(view="Attention", text=TEXT, d_model="64", num_heads="4", num_layers="2")
    at.query_params.update(timing="1")  # the status line, off by default, read below
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    charts = [node.proto.id.split("-")[-1] for node in at.main if node.type == "plotly_chart"]
    assert charts[:2] == ["overview", "head_detail"]
    assert [s.label for s in at.slider if s.key in ("layer", "head")] == ["Layer", "Head"]
    status = [c.value for c in at.main.caption if c.value.startswith("Device ")]
    assert "forward pass" in status[0] and "forward pass 0 ms" not in status[0]


def test_a_ratio_spread_is_each_value_over_the_base():
    assert ratio_spread([1.0, 3.0, 2.0], base=2.0) == "1.00x (0.50-1.50)"


def test_every_view_is_visited_and_its_main_figure_named_where_it_is_no_chart():
    assert set(VISIT_VIEWS) == set(BY_TITLE)
    assert set(MAIN_FIGURE) <= set(VISIT_VIEWS)


def test_the_bare_page_draws_two_heatmaps_and_a_table_labelled_with_the_text():
    at = AppTest.from_file(str(ROOT / "tests/bench/bare_page.py"), default_timeout=60)
    at.query_params["text"] = "one two three"
    at.run()
    assert not at.exception
    charts = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert [chart["data"][0]["type"] for chart in charts] == ["heatmap", "heatmap"]
    assert charts[1]["layout"]["xaxis"]["ticktext"][:4] == ["0 one", "1 two", "2 three", "3 one"]
    [table] = at.dataframe
    assert len(table.value) == 32 and table.value["token"][2] == "2 three"
    at.sidebar.text_area(key="text").set_value("four").run()
    assert json.loads(at.get("plotly_chart")[1].proto.spec)["layout"]["xaxis"]["ticktext"][0] == (
        "0 four"
    )
