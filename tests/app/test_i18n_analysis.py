"""The analysis views (Activations, Shapes, Cost, Heads across a corpus, Exercises, Export,
Training) in the page's languages: each opens without an exception in one of Spanish, Chinese
and Arabic (they take turns) and in the pseudo-language; in the pseudo-language every text they
draw is a marked message (wrapped in ⟦ ⟧), except numbers, file names and what other parts of
the page draw; a number in a Spanish sentence is the English one written the Spanish way."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from app import i18n
from app.components.module_figures import FINGERPRINT, HISTOGRAM, TOP_UNITS
from app.i18n.catalogue import PSEUDO, translations
from encoder.io.tokenize import load_tokenizer
from encoder.train.config import TrainConfig
from encoder.train.findings import race_sizes
from encoder.train.jobs import race_configs
from tests.app.helpers import (
    TINY,
    assert_no_exception,
    assert_numbers_written_in,
    module_data,
    open_page,
    table_words,
)
from tests.shared import SENTENCE

VIEWS = (
    "Activations",
    "Shapes",
    "Cost",
    "Heads across a corpus",
    "Exercises",
    "Export",
    "Training",
)
TEXTS = ("header", "subheader", "caption", "markdown", "info", "warning", "error", "success")
LABELLED = ("button", "download_button", "radio", "selectbox", "number_input", "text_input",
            "text_area", "toggle", "select_slider", "expander", "tab")  # fmt: skip
# drawn by other parts of the page (the status line, the title): not this domain's to mark
OTHERS = re.compile(r"^(Device |Encoder Explorer$)")
# charts drawn by other parts of the page (app.page.figures, the views domain)
OTHER_CHARTS = ("act_histogram",)
NUMBERS_OR_FILES = re.compile(r"^[\d\s.,()×x%+−-]*[A-Za-z]{0,3}$|\.(html|csv|npz|json)$")


@pytest.fixture
def speaking():
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def texts(at: AppTest) -> list[str]:
    """Every text and widget label in the page's main area."""
    said = [el.value for kind in TEXTS for el in at.main.get(kind) if isinstance(el.value, str)]
    for kind in LABELLED:
        said += [el.proto.label for el in at.main.get(kind) if getattr(el.proto, "label", "")]
    return said


def unmarked(at: AppTest) -> list[str]:
    return [
        text
        for text in texts(at)
        if "⟦" not in text and not OTHERS.match(text) and not NUMBERS_OR_FILES.search(text)
    ]


def chart_titles(at: AppTest) -> dict[str, str]:
    """{chart key: its title} of this domain's charts on the page (Plotly's, and the figures
    our ES modules draw: app.components.module_figures)."""
    titles = {}
    for chart in at.get("plotly_chart"):
        if any(other in chart.proto.id for other in OTHER_CHARTS):
            continue
        layout = json.loads(chart.proto.spec)["layout"]
        titles[chart.proto.id] = (layout.get("title") or {}).get("text", "")
    for drawn in at.get("bidi_component"):
        if drawn.proto.component_name not in (HISTOGRAM, TOP_UNITS, FINGERPRINT):
            continue
        if not any(other in drawn.proto.id for other in OTHER_CHARTS):
            titles[drawn.proto.id] = json.loads(drawn.proto.json).get("title", "")
    return titles


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_draws_only_marked_text_in_the_pseudo_language(view) -> None:
    at = open_page(view=view, lang=PSEUDO, text=SENTENCE, **TINY)
    assert_no_exception(at)
    if view == "Shapes":  # its parameters by component, drawn once opened
        at.session_state["shape_params"] = True
        at.run()
    assert texts(at), "nothing drawn"
    assert unmarked(at) == []
    tokens = {"[PAD]", *load_tokenizer().encode(SENTENCE).tokens}
    assert [word for word in table_words(at, tokens) if "⟦" not in word] == []
    titles = chart_titles(at)
    assert {key: title for key, title in titles.items() if "⟦" not in title} == {}


# each view in one real language, the three taking turns (the catalogue check covers the rest)
@pytest.mark.parametrize(
    ("view", "language"), tuple(zip(VIEWS, ("es", "zh", "ar", "es", "zh", "ar", "es"), strict=True))
)
def test_each_view_opens_in_a_language(view, language) -> None:
    at = open_page(view=view, lang=language, **TINY)
    assert_no_exception(at)
    if view == "Shapes":  # its parameters by component, drawn once opened
        at.session_state["shape_params"] = True
        at.run()
    assert texts(at), "nothing drawn"
    headers = [header.value for header in at.main.header]
    assert not any(header in ENGLISH_HEADERS for header in headers), headers
    assert_numbers_written_in(at, i18n.NUMBER_LOCALES[language])  # the tables' numbers too


def test_the_corpus_view_names_each_behaviour_in_the_language() -> None:
    at = open_page(view="Heads across a corpus", lang="es", **TINY)
    assert_no_exception(at)
    counts = at.main.dataframe[0].value
    assert list(counts.columns)[:3] == ["anterior", "siguiente", "sí misma"]
    assert list(counts.index) == [translations("es").gettext("heads")]
    fingerprint = module_data(at, "corpus_fingerprint")  # head_fingerprint.js's rows
    assert fingerprint["behaviours"][:2] == ["anterior", "siguiente"]
    assert fingerprint["scale"] == "proporción media"


def test_the_operations_are_named_in_the_language() -> None:
    at = open_page(view="Shapes", lang="es", **TINY)
    assert_no_exception(at)
    ledger = next(t.value for t in at.main.table if "operación" in t.value.columns)
    assert {"suma residual", "proyección Q, dividida en cabezas"} <= set(ledger["operación"])
    assert {"puntuaciones QK^T / sqrt(dk)", "pesos x V"} <= set(ledger["operación"])
    assert "proyección" in set(ledger["tipo"])
    at.session_state["shape_params"] = True  # the parameters by component, once opened
    at.run()
    counts = next(t.value for t in at.main.table if "componente" in t.value.columns)
    assert {"embedding de token", "atención (todas las capas)"} <= set(counts["componente"])
    assert "por capa" in counts.columns
    at = open_page(view="Cost", lang="es", **TINY)
    (flops,) = [c for c in at.get("plotly_chart") if "cost_flops" in c.proto.id]
    operations = json.loads(flops.proto.spec)["data"][0]["y"]
    assert "concatenar cabezas + proyección de salida" in operations


ENGLISH_HEADERS = {"Data", "Training lab", "What the shapes tell", "Exercises: attention by hand"}


def test_a_spanish_sentence_writes_the_english_number_the_spanish_way() -> None:
    said = {}
    for language in ("en", "es"):
        at = open_page(view="Shapes", lang=language, **TINY)
        caption = next(c.value for c in at.main.caption if "MFLOPs" in c.value)
        said[language] = re.findall(r"([\d.,]+) MFLOPs", caption)
    english, spanish = said["en"], said["es"]
    assert len(english) == len(spanish) == 2
    for en, es in zip(english, spanish, strict=True):
        assert "," in es and "." in en  # 0,72 against 0.72
        assert float(es.replace(".", "").replace(",", ".")) == float(en.replace(",", ""))


def test_a_translated_sentence_keeps_its_numbers(speaking) -> None:
    speaking("es")
    sentence = i18n.told(race_sizes(race_configs(TrainConfig(seq_len=16).with_model(num_layers=6))))
    assert "parámetros de codificador" in sentence and re.search(r"\d{3}\.\d{3}", sentence)


def test_what_the_cost_view_measures_is_said_in_the_page_s_language() -> None:
    """The Cost view's progress line names what the background measurement measures now (the
    library's MEASURE_NAMES, or the job's start): each a message every language translates, so
    that a Spanish line does not read "Midiendo the memory kept for training"."""
    from app.jobs import CostJob
    from encoder.measure.cost import MEASURE_NAMES

    for language in ("es", "zh", "ar"):
        for what in (*MEASURE_NAMES.values(), CostJob.what):
            assert translations(language).gettext(what) != what, (language, what)
