"""The analysis views (Activations, Shapes, Cost, Heads across a corpus, Exercises, Export,
Training) in every language: each opens without an exception in Spanish, Chinese, Arabic and the
pseudo-language; in the pseudo-language every text they draw is a marked message (wrapped in
⟦ ⟧), except numbers, file names and what other parts of the page draw; a number in a Spanish
sentence is the English one written the Spanish way; the texts rebuilt from the library
(exercises, the race's sentences, durations) are, in English, the library's own."""

from __future__ import annotations

import json
import math
import re
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from app import i18n
from app.charts.cost import percent
from app.components.module_figures import FINGERPRINT, HISTOGRAM, TOP_UNITS
from app.i18n.catalogue import PSEUDO, translations
from app.views import exercises, training, training_results
from encoder import EncoderConfig
from encoder.exercises import by_hand
from encoder.io.tokenize import load_tokenizer
from encoder.train.config import TrainConfig
from encoder.train.duration import duration_text
from encoder.train.jobs import (
    placement_findings,
    race_configs,
    race_findings,
    race_sizes,
    window_sentence,
)
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


@pytest.mark.parametrize("language", ["es", "zh", "ar"])
@pytest.mark.parametrize("view", VIEWS)
def test_each_view_opens_in_each_language(view, language) -> None:
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


@pytest.mark.parametrize("norm_type", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "geglu", "swiglu"])
def test_the_exercises_ask_in_english_what_the_library_asks(norm_type, activation) -> None:
    for seed in range(3):
        numbers = by_hand.draw(seed, norm_type, activation)
        for question in numbers.questions:
            assert exercises.ask(question, numbers) == question.ask


@pytest.mark.parametrize(
    "changes",
    [{"positional": "rope"}, {"num_layers": 4, "attention_window": 4, "global_every": 3},
     {"num_layers": 2, "attention_window": 4, "global_every": 2},
     {"num_layers": 3, "attention_window": 4, "global_every": 0}],
)  # fmt: skip
def test_the_exercises_notes_in_english_are_the_librarys(changes) -> None:
    cfg = EncoderConfig(**{**dict(vocab_size=10, d_model=8, num_heads=2, d_ff=16), **changes})
    assert exercises.attention_notes(cfg) == list(by_hand.attention_notes(cfg))


@pytest.mark.parametrize("seconds", [0.2, 40, 89.6, 95, 3000, 5399, 5400, 9000])
def test_durations_in_english_are_the_librarys(seconds) -> None:
    assert training.duration_words(seconds) == duration_text(seconds)


@pytest.mark.parametrize("seq_len", [4, 8, 16, 32])
def test_the_race_sentences_in_english_are_the_librarys(seq_len) -> None:
    runs = race_configs(TrainConfig(seq_len=seq_len).with_model(num_layers=4))
    assert training.race_sizes(runs) == race_sizes(runs)
    modern = runs["ModernBERT-style"]
    assert training.window_sentence(modern) == window_sentence(modern)


def test_a_spanish_percentage_is_written_the_spanish_way(speaking) -> None:
    assert percent(0.5333, 1) == "53.3%" and percent(0.125) == f"{0.125:.0%}"
    speaking("es")
    assert percent(0.5333, 1) == "53,3\u00a0%"


def test_a_translated_sentence_keeps_its_numbers(speaking) -> None:
    speaking("es")
    sentence = training.race_sizes(race_configs(TrainConfig(seq_len=16).with_model(num_layers=6)))
    assert "parámetros de codificador" in sentence and re.search(r"\d{3}\.\d{3}", sentence)


def result(loss: float, accuracy: float, losses: list[float]) -> SimpleNamespace:
    """What the findings read of a TrainResult."""
    return SimpleNamespace(
        final_loss=loss,
        held_out_accuracy=accuracy,
        history=[{"step": i + 1, "loss": value} for i, value in enumerate(losses)],
        seconds=1.25 * len(losses),
        elapsed=[0.5 * (i + 1) for i in range(len(losses))],
    )


@pytest.mark.parametrize(
    "results",
    [{"BERT-style": result(0.107, 0.991, [2.0, 0.5, 0.107]),
      "ModernBERT-style": result(0.152, 0.969, [2.1, 0.6, 0.152])},
     {"BERT-style": result(0.2, math.nan, [0.3, 0.2]), "ModernBERT-style": result(0.2, 0.5, [0.2])},
     {"BERT-style": result(0.5, 0.4, [0.6, 0.5]),
      "ModernBERT-style": result(0.4, 0.5, [0.45, 0.4])}],
)  # fmt: skip
def test_the_race_findings_in_english_are_the_librarys(results) -> None:
    assert training_results.race_said(results) == race_findings(results)


@pytest.mark.parametrize(
    "accuracies",
    [(0.9, 0.9, 0.9, 0.9), (0.95, 0.9, 0.8, 0.7), (0.95, 0.95, 0.8, 0.7), (0.9, 0.95, 0.95, 0.95)],
)
def test_the_placement_findings_in_english_are_the_librarys(accuracies) -> None:
    names = ("none", "attention weights", "sublayer outputs", "everywhere")
    results = {
        name: result(0.1 * (i + 1), accuracy, [1.0, 0.1 * (i + 1)])
        for i, (name, accuracy) in enumerate(zip(names, accuracies, strict=True))
    }
    assert training_results.placement_said(results) == placement_findings(results)
