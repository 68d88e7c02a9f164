"""What it is for (AppTest): the cosines and a search hit on the page equal sentence-transformers'
on MiniLM; a tiny random BERT with its masked-LM head (built here, found through
ENCODER_EXPLORER_MODELS) predicts on the page what transformers' BertForPreTraining predicts;
MiniLM says it has no head and why; bad input is a message, never a traceback."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from app import sources
from app.page.training import MASKED_PRESET
from encoder.inspect.corpus import bundled_corpus
from encoder.inspect.masked import fill
from encoder.io.checkpoints import load_checkpoint
from encoder.io.tokenize import bundled_model_dir
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import train
from tests.app.helpers import assert_no_exception, module_data, open_page, shown
from tests.encoder.family_checkpoints import build_checkpoint

VIEW = "What it is for"
SENTENCES = ["The cat sat on the mat.", "A kitten rested on the rug.", "Stock prices fell today."]
FOUND = "disk:tiny-bert"


def messages(at, kind: str) -> list[str]:
    return [shown(element.value) for element in at.get(kind)]


def table_of(at, column: str):
    """The first table on the page with `column`."""
    tables = [frame.value for frame in at.dataframe]
    return next(table for table in tables if column in table.columns)


def page(**query: str):
    at = open_page(view=VIEW, **query)
    assert_no_exception(at)
    return at


@pytest.fixture(scope="module")
def minilm():
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(bundled_model_dir()), device="cpu")


def test_minilm_cosines_on_the_page_equal_sentence_transformers(minilm) -> None:
    at = page(source="pretrained", text="\n".join(SENTENCES))
    embeddings = minilm.encode(SENTENCES, convert_to_tensor=True, normalize_embeddings=True)
    cosines = (embeddings @ embeddings.T).numpy()
    data = module_data(at, "meaning_matrix")
    assert data["depths"][-1] == "output" and len(data["depths"]) == 7  # MiniLM's 6 blocks
    np.testing.assert_allclose(np.array(data["values"][-1]), cosines, atol=1e-4)
    off = cosines - 2 * np.eye(3)
    a, b = sorted(np.unravel_index(off.argmax(), off.shape))
    (said,) = [m for m in messages(at, "info") if "at the output" in m]
    assert said.startswith(f"“{SENTENCES[a]}” and “{SENTENCES[b]}”")
    assert f"{cosines[a, b]:.2f} at the output" in said
    assert "then normalised" in said  # MiniLM's own pooling, from its sentence-transformers files


def test_minilm_search_hit_cosine_equals_sentence_transformers(minilm) -> None:
    at = page(source="pretrained", text="\n".join(SENTENCES))
    at.session_state["meaning_search"] = True  # the section computes once opened
    at.run()
    assert_no_exception(at)
    corpus = bundled_corpus()
    query = minilm.encode([SENTENCES[0]], convert_to_tensor=True, normalize_embeddings=True)
    lines = minilm.encode(corpus, convert_to_tensor=True, normalize_embeddings=True)
    cosines = (lines @ query[0]).numpy()
    best = int(cosines.argmax())
    hits = table_of(at, "cosine")
    assert hits["sentence"].iloc[0] == corpus[best]
    assert hits["cosine"].iloc[0] == pytest.approx(cosines[best], abs=1e-5)


def test_minilm_says_it_has_no_masked_lm_head() -> None:
    at = page(source="pretrained", text="Paris is the [MASK] of France.")
    (said,) = [m for m in messages(at, "info") if "masked-LM head" in m]
    assert said.startswith("all-MiniLM-L6-v2 was trained for sentence embeddings")


def test_random_weights_say_they_were_never_trained_to_predict_words() -> None:
    at = page(source="random", text="Paris is the [MASK] of France.")
    assert any(m.startswith("Random weights have never been trained") for m in messages(at, "info"))


@pytest.fixture
def tiny_bert(tmp_path: Path, monkeypatch) -> Path:
    """A tiny random BERT saved with its masked-LM head (BertForPreTraining) and a WordPiece
    tokenizer, the only model found on this machine."""
    pytest.importorskip("transformers")
    folder = tmp_path / "models"
    path = build_checkpoint("bert", folder / "tiny-bert", head=True)
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", str(folder))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    sources.found_models.clear()
    yield path
    sources.found_models.clear()


def test_masked_words_on_the_page_equal_transformers(tiny_bert: Path) -> None:
    import transformers
    from tokenizers import Tokenizer

    text = "the cat [MASK] on the mat."
    at = page(source=FOUND, text=text)
    tokenizer = Tokenizer.from_file(str(tiny_bert / "tokenizer.json"))
    encoding = tokenizer.encode(text)
    mask = encoding.tokens.index("[MASK]")
    reference = transformers.BertForPreTraining.from_pretrained(
        tiny_bert, attn_implementation="eager", dtype=torch.float32
    ).eval()
    with torch.no_grad():
        logits = reference(torch.tensor([encoding.ids])).prediction_logits[0, mask]
    probabilities = logits.softmax(-1)
    top = probabilities.topk(5)
    words = table_of(at, "probability")
    assert list(words["token"]) == [tokenizer.id_to_token(i) for i in top.indices.tolist()]
    np.testing.assert_allclose(words["probability"], top.values.numpy(), atol=1e-5)
    assert (words["position"] == mask).all()
    assert any(f"the mask at position {mask}" in m for m in messages(at, "markdown"))


def test_bad_masked_input_is_a_message(tiny_bert: Path) -> None:
    at = page(source=FOUND, text="the cat sat on the mat.")
    hint = [m for m in messages(at, "info") if m.startswith("Type [MASK] in a sentence")]
    assert hint, messages(at, "info")
    example = at.button(key="meaning_example")
    example.click().run()
    assert_no_exception(at)
    assert "[MASK]" in at.session_state["text"]
    assert not any(m.startswith("Type [MASK]") for m in messages(at, "info"))

    at = page(source=FOUND, text="[MASK] " * 20)
    assert any("20 masks in the sentence; at most 8" in m for m in messages(at, "warning"))

    at = page(source=FOUND, text="the cat <mask> on the mat.")
    (said,) = messages(at, "warning")
    assert not any(m.startswith("Type [MASK]") for m in messages(at, "info"))
    assert "is the mask token of RoBERTa" in said and "this model's is “[MASK]”" in said


def test_an_empty_corpus_is_a_message() -> None:
    at = page(source="pretrained", text="\n".join(SENTENCES))
    at.session_state["meaning_search"] = True
    at.session_state["corpus_source"] = "my own sentences"
    at.session_state["corpus_text"] = "\n  \n"
    at.run()
    assert_no_exception(at)
    assert any("The corpus is empty" in m for m in messages(at, "info"))


def test_random_weights_offer_training_a_masked_word_model() -> None:
    at = page(source="random", text="Paris is the [MASK] of France.")
    at.button(key="meaning_train").click().run()
    assert_no_exception(at)
    assert at.session_state["train_task"] == "masked"
    assert at.session_state["train_preset"] == MASKED_PRESET


@pytest.mark.slow  # a short training of the masked-word task (about 15 s)
def test_a_masked_word_model_trained_here_predicts_as_its_head_does(tmp_path, monkeypatch) -> None:
    trained = train(replace(TRAINING_PRESETS[MASKED_PRESET], steps=10)).task_model()
    trained.save(tmp_path / "models" / "masked-model")
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", str(tmp_path / "models"))
    sources.found_models.clear()
    checkpoint = load_checkpoint(tmp_path / "models" / "masked-model")
    text = trained.example  # a held-out sentence with [MASK]
    at = page(source="disk:masked-model", text=text)
    (found,) = fill(checkpoint.encoder, checkpoint.mlm_head, checkpoint.tokenizer, text)
    words = table_of(at, "probability")
    assert list(words["token"]) == [word.token for word in found.top]
    np.testing.assert_allclose(words["probability"], [w.probability for w in found.top], atol=1e-6)
    sources.found_models.clear()
