"""The Tokens, Attention, Attention steps and LayerNorm views in the languages the page speaks
(the "views" catalogue): each opens without an exception, with every section and step open, one
setup or two, in one real language (Spanish, Chinese and Arabic take turns: the catalogue check
covers completeness) and in the pseudo-language, where every text these views draw (headers,
captions, sentences, labels, chart titles and axes) is a marked message, wrapped in ⟦ ⟧; in
Spanish a sentence's numbers are written as Spanish writes them and are the run's numbers."""

from __future__ import annotations

import json
import re

import pytest
from babel.numbers import parse_decimal
from streamlit.testing.v1 import AppTest

from app.components.module_figures import LINES
from app.i18n import NUMBER_LOCALES
from app.i18n.catalogue import PSEUDO, translations
from app.views.attention import DIVERGENCE, METRICS, READINGS
from encoder.inspect.corpus import bundled_corpus
from encoder.io.tokenize import load_tokenizer
from tests.app.helpers import (
    EVERY_STEP_OPEN,
    STREAM_TAB,
    TINY,
    assert_no_exception,
    assert_numbers_written_in,
    measured_page,
    open_page,
    shown,
    table_words,
)

# each view, and LayerNorm's second tab as a view of its own (one tab is open at a time)
VIEWS = (
    "Tokens",
    "Attention",
    "Attention steps",
    "LayerNorm",
    "LayerNorm, stream",
    "What it is for",
)
# each view in one real language, alone and compared, the three taking turns (Arabic's right to
# left among them); the pseudo-language's test below opens every view in both modes
ALONE_IN = tuple(zip(VIEWS, ("es", "zh", "ar", "es", "zh", "ar"), strict=True))
COMPARED_IN = tuple(zip(VIEWS, ("ar", "es", "zh", "ar", "es", "zh"), strict=True))
TWO = "The cat sat on the mat.\nA much longer second sentence pads the first."
TOKENS = {
    "[PAD]",
    *(token for line in TWO.splitlines() for token in load_tokenizer().encode(line).tokens),
}
CORPUS = {  # the bundled corpus' lines and their tokens, as the search shows them
    *bundled_corpus(),
    *(token for line in bundled_corpus() for token in load_tokenizer().encode(line).tokens),
}
SMALL = {"d_model": "64", "num_heads": "4", "num_layers": "3", "d_ff": "128"}
COMPARE = {"compare": "1", "b_norm": "post", **SMALL}
LABELLED = ("expander", "toggle", "slider", "selectbox", "text_input", "button", "metric", "tabs")
TEXTS = ("header", "subheader", "caption", "markdown", "info", "warning", "error", "text")


def open_view(view: str, language: str, **query: str) -> AppTest:
    """`view` in `language` with every section below it open (each opening reruns the page)."""
    at = open_page(view=view.split(",")[0], lang=language, text=TWO, **query)
    assert_no_exception(at)
    if view == "Attention":
        for key, _label in (METRICS, DIVERGENCE, READINGS):
            at.session_state[key] = True
    if view == "Attention steps":
        for key, opened in EVERY_STEP_OPEN.items():
            at.session_state[key] = opened
    if view.startswith("LayerNorm"):
        at.session_state["ln_gains"] = True
    if view == "What it is for":  # the token shares and the search (the bundled corpus)
        at.session_state["meaning_shares"] = at.session_state["meaning_search"] = True
    at.run()
    if view == "LayerNorm, stream":  # its second tab (the first is open at first), by its label
        at.session_state[STREAM_TAB[0]] = at.tabs[1].label
        at.run()
    assert_no_exception(at)
    return at


def drawn(at: AppTest) -> list[str]:
    """Every text of the main area but the frame's own (the page's title, its status line)."""
    said = []
    for kind in TEXTS:
        said += [shown(str(element.value)) for element in at.main.get(kind)]
    for kind in LABELLED:
        said += [shown(str(element.label)) for element in at.main.get(kind)]
    return [text for text in said if "traced forward pass" not in text]


# charts of app/charts/ablation.py (the "analysis" catalogue's): these views give some their
# title, and draw others whole
TITLED_HERE = ("divergence", "divergence_cosine", "ablation_cosine", "ablation_head_difference")
DRAWN_ELSEWHERE = ("ablation_output", "ablation_difference")


def title_of(part: dict) -> str:
    title = part.get("title", "")
    return title.get("text", "") if isinstance(title, dict) else title


def chart_texts(at: AppTest) -> list[str]:
    """Each chart's title and axis titles (the words of a figure, not its ticks: tokens), of the
    charts these views' own builders draw; and the token lines' title, series and plots."""
    said = []
    for chart in at.get("plotly_chart"):
        key = chart.proto.id.split("-")[-1]
        if key.removesuffix("_b") in DRAWN_ELSEWHERE:
            continue
        layout = json.loads(chart.proto.spec)["layout"]
        said.append(title_of(layout))
        if key.removesuffix("_b") in TITLED_HERE:
            continue
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
                said.append(title_of(axis))
    for lines in at.get("bidi_component"):  # token_lines.js's data: its words come translated
        if lines.proto.component_name == LINES:
            data = json.loads(lines.proto.json)
            said += [data["title"], *(series["name"] for series in data["series"])]
            for panel in data["panels"]:
                said += [panel["title"], panel["short"]]
    return [text for text in said if text]


NOT_WORDS = re.compile(r"^[\d\s.,:·x×−\-+%()\[\]]*$")  # numbers, a shape, nothing to translate


def marked(text: str) -> bool:
    """A pseudo-language text is a marked message, or holds one (a setup's bold title before
    it, a token after it), or has no words of its own."""
    return "⟦" in text or bool(NOT_WORDS.match(text))


@pytest.mark.parametrize(("view", "language"), ALONE_IN)
def test_each_view_opens_in_a_language(view: str, language: str) -> None:
    at = open_view(view, language)
    assert drawn(at)
    assert_numbers_written_in(at, NUMBER_LOCALES[language])  # the tables' numbers too


@pytest.mark.parametrize(("view", "language"), COMPARED_IN)
def test_each_view_compares_two_setups_in_a_language(view: str, language: str) -> None:
    """Compare mode's tables (both setups stacked, B − A) write their numbers as the language
    does: "0,132" in Spanish, not "0.132"."""
    at = open_view(view, language, **COMPARE)
    assert any("B" in text for text in drawn(at))  # setup B, named
    assert_numbers_written_in(at, NUMBER_LOCALES[language])


@pytest.mark.parametrize("query", [{}, COMPARE], ids=["one setup", "compare"])
@pytest.mark.parametrize("view", VIEWS)
def test_every_text_these_views_draw_is_a_marked_message(view: str, query: dict) -> None:
    at = open_view(view, PSEUDO, **query)
    texts = drawn(at) + chart_texts(at)
    unmarked = [text for text in texts if not marked(text)]
    assert not unmarked, unmarked
    data = TOKENS | CORPUS if view == "What it is for" else TOKENS  # the search's hits: text
    unmarked = [word for word in table_words(at, data) if not marked(word)]
    assert not unmarked, unmarked  # the tables' headers and word cells too


def test_switching_heads_off_is_said_in_the_pseudo_language() -> None:
    at = open_page(view="Attention", lang=PSEUDO, ablate="0.1")
    assert_no_exception(at)
    texts = drawn(at) + chart_texts(at)
    assert any("⟦Without" in text for text in texts)
    assert not [text for text in texts if not marked(text)]


def test_a_spanish_sentence_writes_the_runs_numbers_as_spanish_does() -> None:
    at = open_page(view="Attention steps", lang="es", step_layer="2", step_head="1", step_query="4")
    assert_no_exception(at)
    weights = at.dataframe[0].value["weight"]  # the step table: the run's own numbers
    said = shown(at.markdown[0].value)
    (written,) = re.findall(r"Da su mayor peso, \*\*([\d.,]+)\*\*", said)
    assert "," in written and "." not in written  # "0,715", not "0.715"
    assert float(parse_decimal(written, locale="es")) == pytest.approx(weights.max(), abs=5e-4)
    total = re.search(r"suman ([\d.,]+);", shown(at.info[0].value)).group(1)
    assert float(parse_decimal(total, locale="es")) == pytest.approx(weights.sum(), abs=5e-6)


def test_a_chinese_title_wraps_between_characters_in_a_narrow_place() -> None:
    from app.charts.common import new_figure
    from app.charts.fitting import _width, wrap_title

    title = "第 2 层，第 1 个头：每一行是一个查询词元在各个键上的注意力"  # no space to break at
    lines = wrap_title(new_figure(layout={"title": {"text": title}}), 24).layout.title.text
    lines = lines.split("<br>")
    assert len(lines) >= 3 and all(_width(line) <= 24 for line in lines)
    assert "".join(lines) == title  # nothing lost, nothing added
    assert not any(line.startswith(("，", "：")) for line in lines)  # punctuation ends a line


@pytest.mark.parametrize(
    ("view", "key", "label"),
    [
        ("LayerNorm", "ln_section", "Stream by depth"),
        ("Activations", "act_section", "Token geometry across depth"),
        ("Cost", "cost_section_A", "Memory for training"),
    ],
)
def test_the_open_tab_is_named_again_in_the_new_language(view, key, label):
    # a set of tabs keeps the open tab's label: in the old language it is no tab of the new one
    at = measured_page(open_page(view=view, **TINY))  # Cost's tabs: once it has measured
    at.session_state[key] = label
    at.run()
    assert label in [tab.label for tab in at.tabs]
    for language in ("es", "ar", "en"):
        at.selectbox(key="_language").set_value(language).run()
        assert_no_exception(at)
        assert at.session_state[key] == translations(language).gettext(label), language


def test_a_heads_metrics_are_named_in_spanish() -> None:
    """The metrics table keeps its columns (the code reads them) under Spanish headers, the words
    its caption says them in."""
    at = open_view("Attention", "es")
    table = next(t for t in at.main.dataframe if "max_weight" in t.value.columns)
    labels = {name: shown.get("label") for name, shown in json.loads(table.proto.columns).items()}
    assert labels["max_weight"] == "peso máximo"
    assert (labels["to_previous"], labels["to_next"], labels["to_self"]) == (
        "al anterior",
        "al siguiente",
        "a sí mismo",
    )
    assert labels["mean_distance"] == "distancia media"


def test_a_norms_gain_and_bias_are_named_in_arabic() -> None:
    at = open_view("LayerNorm", "ar")
    table = next(t for t in at.main.dataframe if "gain_mean" in t.value.columns)
    labels = {name: shown.get("label") for name, shown in json.loads(table.proto.columns).items()}
    assert (labels["gain_mean"], labels["bias_std"]) == (
        "الكسب: المتوسط",
        "الانحياز: الانحراف المعياري",
    )
