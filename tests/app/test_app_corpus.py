"""The Heads across a corpus view in AppTest: a pasted corpus, its bounds as messages, and trained
against random weights in compare mode."""

from __future__ import annotations

import json

import numpy as np

from app import corpus_stats
from app.page.corpus_choice import BUNDLED, PASTED
from encoder.inspect.corpus import (
    MAX_CHARS,
    MAX_SENTENCES,
    bundled_corpus,
    corpus_of,
    corpus_statistics,
)
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web.scatter import scatter_data
from tests.app.helpers import assert_no_exception, open_page, page_model, shown

VIEW = "Heads across a corpus"
SMALL = {"d_model": "32", "num_heads": "2", "num_layers": "2"}


def scatter_bytes(at) -> bytes:
    """The head scatter's data as the page sends it (JSON bytes: app.corpus_stats.scatter_for)."""
    (drawn,) = [c for c in at.get("bidi_component") if c.proto.id.endswith("head_scatter_A")]
    return drawn.proto.bytes


def infos(at) -> list[str]:
    return [shown(message.value) for message in at.info]


def test_the_bundled_corpus_is_the_default_and_a_pasted_one_is_bounded():
    at = open_page(view=VIEW, **SMALL)
    assert_no_exception(at)
    assert at.radio(key="corpus_source").value == BUNDLED
    assert any(f"{len(bundled_corpus())} sentences" in c.value for c in at.caption)
    assert any("of 4 heads have a clear role" in m.value for m in at.markdown)

    at.radio(key="corpus_source").set_value(PASTED).run()
    assert_no_exception(at)
    assert any(i.startswith("The corpus is empty") for i in infos(at))
    at.text_area(key="corpus_text").set_value("Only one.").run()
    assert any(i.startswith("One sentence is not a corpus") for i in infos(at))
    at.text_area(key="corpus_text").set_value("x\n" * (MAX_SENTENCES + 1)).run()
    assert any(f"the limit is {MAX_SENTENCES:,}" in i for i in infos(at))
    at.text_area(key="corpus_text").set_value("A word.\n" * (MAX_CHARS // 8 + 1)).run()
    assert any(f"characters; the limit is {MAX_CHARS:,}" in i for i in infos(at))
    at.text_area(key="corpus_text").set_value("[CLS]\n[SEP]").run()
    assert_no_exception(at)
    assert any("only special tokens" in w.value for w in at.warning)
    at.text_area(key="corpus_text").set_value("The cat sat.\nA dog ran, and it barked.").run()
    assert_no_exception(at)
    table = at.dataframe[-1].value
    assert len(table) == 4 and {"previous", "[CLS]", "spread", "group"} <= set(table.columns)
    # the library's numbers for the model the page built, computed here
    model = page_model(d_model=32, num_heads=2, num_layers=2)
    sentences = ["The cat sat.", "A dog ran, and it barked."]
    expected = corpus_statistics(model, corpus_of(tokenize(sentences, load_tokenizer(), 64)))
    numbers = [c for c in expected.table.columns if c not in ("layer", "head", "group")]
    np.testing.assert_allclose(table[numbers], expected.table[numbers], atol=1e-6)
    assert list(table["group"]) == list(expected.table["group"])


def test_trained_against_random_weights_says_random_heads_have_no_roles():
    at = open_page(view=VIEW, source="pretrained", compare="1", b_source="random")
    at.radio(key="corpus_source").set_value(PASTED).run()
    sentences = "\n".join(bundled_corpus()[:40])
    at.text_area(key="corpus_text").set_value(sentences).run()
    assert_no_exception(at)
    said = " ".join(m.value for m in at.markdown)
    assert "in setup B." in said and "Random weights give heads no roles" in said
    assert "Heads with a clear role: 0 in setup A" not in said


def test_the_scatter_is_sent_as_json_bytes_kept_for_the_next_run(monkeypatch):
    built = []
    monkeypatch.setattr(
        corpus_stats, "scatter_data", lambda *args: built.append(args[2:]) or scatter_data(*args)
    )
    corpus_stats.CACHE.clear()  # built here, not by a test before
    at = open_page(view=VIEW, **SMALL)
    assert_no_exception(at)
    sent = scatter_bytes(at)
    # the library's scatter of layer 0, head 0 for the model the page built, computed here
    model = page_model(d_model=32, num_heads=2, num_layers=2)
    corpus = corpus_of(tokenize(bundled_corpus(), load_tokenizer(), 64))
    stats = corpus_statistics(model, corpus)
    expected = scatter_data(stats, corpus.sentences, 0, 0)
    drawn = json.loads(sent)
    assert drawn["tokens"] == expected["tokens"] and drawn["role"] == expected["role"]
    np.testing.assert_allclose(drawn["x"], expected["x"], atol=2e-4)
    np.testing.assert_allclose(drawn["y"], expected["y"], atol=2e-4)
    assert built == [(0, 0)]
    at.text_area(key="text").set_value("Another sentence for the page.").run()
    assert scatter_bytes(at) == sent and built == [(0, 0)]  # nothing here changed: kept
    at.selectbox(key="_language").set_value("es").run()
    assert_no_exception(at)
    # no words of its own: the scatter speaks the page's, so Spanish sends the same bytes again
    assert "words" not in drawn and "lang" not in drawn
    assert scatter_bytes(at) == sent and built == [(0, 0)]
