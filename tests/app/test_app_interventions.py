"""Interventions (AppTest): on MiniLM the grids and the cone on the page equal the library's
patch() and cone() for the same sentences; bad input is a message naming what is wrong; compare
mode draws A, B and B − A; the lesson's step asks where the model decides first, its truth read
from the live model's residual grid."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from app import sources
from app.i18n import told_sentence
from app.i18n.catalogue import PSEUDO, translations
from app.lesson.steps import STEPS
from app.lesson.steps.interventions import DECIDING
from app.views.interventions import pair_keys
from encoder import load_pretrained
from encoder.inspect.patching import cone, deciding_token, metric_named, patch
from tests.app.helpers import array, assert_no_exception, figure, open_page, open_tab, shown
from tests.encoder.family_checkpoints import build_checkpoint

VIEW = "Interventions"
CLEAN = "The animal didn't cross the street because it was too tired."
CORRUPTED = "The animal didn't cross the street because it was too wide."


def ready(at, timeout_s: float = 120):
    """Rerun (as the fragment's polling would) until the grids are computed."""
    deadline = time.monotonic() + timeout_s
    while at.get("progress"):
        assert time.monotonic() < deadline, "the grids were not computed"
        time.sleep(0.3)
        at.run()
    assert_no_exception(at)
    return at


def messages(at, kind: str) -> list[str]:
    return [shown(element.value) for element in at.get(kind)]


def grid_on_page(at, key: str) -> np.ndarray:
    """A grid's heatmap as [layer, row] (the chart draws rows down the side)."""
    (heatmap,) = figure(at, key)["data"]
    return array(heatmap["z"]).T


@pytest.fixture(scope="module")
def minilm():
    model, tokenizer = load_pretrained()
    return model, tokenizer


def reference(minilm, clean: str = CLEAN, corrupted: str = CORRUPTED):
    model, tokenizer = minilm
    a, b = tokenizer.encode(clean), tokenizer.encode(corrupted)
    found = patch(model, torch.tensor(a.ids), torch.tensor(b.ids), metric_named("cosine"), a.tokens)
    return found, a, b


def test_minilm_grids_and_cone_on_the_page_equal_the_library(minilm) -> None:
    at = ready(open_page(view=VIEW, source="pretrained", text=CLEAN))
    clean_key, corrupted_key = pair_keys(CLEAN)
    assert at.text_input(key=corrupted_key).value == CORRUPTED  # the lesson's one-word change
    assert any("“tired” changed to “wide”" in m for m in messages(at, "caption"))
    expected, a, b = reference(minilm)
    np.testing.assert_allclose(grid_on_page(at, "patch_residual_a"), expected.residual, atol=1e-4)
    assert messages(at, "info")[0] == shown(told_sentence(expected.said["residual"]))
    at = open_tab(at, "patch_tab", "Attention and feed-forward")
    np.testing.assert_allclose(grid_on_page(at, "patch_attention_a"), expected.attention, atol=1e-4)
    np.testing.assert_allclose(grid_on_page(at, "patch_mlp_a"), expected.mlp, atol=1e-4)
    at = open_tab(at, "patch_tab", "Heads")
    np.testing.assert_allclose(grid_on_page(at, "patch_heads_a"), expected.heads, atol=1e-4)
    at = open_tab(at, "patch_tab", "The cone")
    assert_no_exception(at)
    changed = a.tokens.index("tired")
    seen = cone(minilm[0], torch.tensor(a.ids), torch.tensor(b.ids), 0, changed, a.tokens)
    np.testing.assert_allclose(grid_on_page(at, "patch_cone_encoder"), seen.encoder, atol=1e-4)
    np.testing.assert_allclose(grid_on_page(at, "patch_cone_causal"), seen.causal, atol=1e-4)
    assert shown(told_sentence(seen.said)) in messages(at, "info")
    # another sentence typed in the corrupted box: its own grids
    at.text_input(key=corrupted_key).set_value(CLEAN.replace("animal", "person")).run()
    ready(at)
    at = open_tab(at, "patch_tab", "Residual stream")
    other, _a, _b = reference(minilm, corrupted=CLEAN.replace("animal", "person"))
    np.testing.assert_allclose(grid_on_page(at, "patch_residual_a"), other.residual, atol=1e-4)


def test_bad_input_is_a_message_naming_what_is_wrong() -> None:
    at = ready(open_page(view=VIEW, source="pretrained", text=CLEAN))
    clean_key, corrupted_key = pair_keys(CLEAN)
    at.text_input(key=corrupted_key).set_value("The animal was tired.").run()
    (said,) = messages(at, "warning")
    assert "has 16 tokens and the corrupted one 7" in said, said
    assert not at.get("plotly_chart")
    at.text_input(key=corrupted_key).set_value(CLEAN).run()
    (said,) = messages(at, "warning")
    assert "nothing to restore" in said
    at.text_input(key=corrupted_key).set_value("  ").run()
    (said,) = messages(at, "warning")
    assert "an empty one has no token to patch" in said
    at = ready(open_page(view=VIEW, source="pretrained", text=CLEAN, patch_metric="mask"))
    warnings = messages(at, "warning")
    assert warnings and "head" in warnings[0], warnings  # MiniLM has no masked-LM head
    assert not at.get("plotly_chart")


@pytest.fixture
def tiny_bert(tmp_path: Path, monkeypatch) -> Path:
    """A tiny random BERT with its masked-LM head, the only model found on this machine."""
    pytest.importorskip("transformers")
    folder = tmp_path / "models"
    path = build_checkpoint("bert", folder / "tiny-bert", head=True)
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", str(folder))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    sources.found_models.clear()
    yield path
    sources.found_models.clear()


def test_the_mask_metric_needs_a_mask_in_the_clean_sentence(tiny_bert: Path) -> None:
    at = ready(open_page(view=VIEW, source="disk:tiny-bert", text="the cat sat on the mat."))
    assert at.radio(key="patch_metric").options == ["cosine of the sentence embeddings",
                                                    "the mask's logit difference"]  # fmt: skip
    at.radio(key="patch_metric").set_value("mask").run()
    warnings = messages(at, "warning")
    assert warnings and "[MASK]" in warnings[0], warnings


def test_compare_mode_draws_a_b_and_b_minus_a() -> None:
    at = ready(open_page(view=VIEW, text=CLEAN, compare="1", b_seed="7"))
    a, b = grid_on_page(at, "patch_residual_a"), grid_on_page(at, "patch_residual_b")
    np.testing.assert_allclose(grid_on_page(at, "patch_residual_difference"), b - a, atol=1e-4)
    assert not np.allclose(a, b)
    assert len(messages(at, "info")) >= 2  # each setup's sentence


def test_the_lesson_asks_where_the_model_decides_before_it_shows_the_grid(minilm) -> None:
    number = STEPS.index(DECIDING) + 1
    at = open_page(lesson=str(number))  # the lesson opens on MiniLM and its sentence
    assert_no_exception(at)
    asked = " ".join(shown(h.value) for h in at.subheader)
    assert "Where does the model decide what “it” refers to?" in asked, asked
    assert not at.get("plotly_chart")  # nothing of the step before the answer
    expected, a, _b = reference(minilm)
    truth = deciding_token(expected.residual, a.tokens)
    layer = (expected.residual.shape[0] - 1) // 2
    best = int(expected.residual[layer].argmax())
    assert truth.truth == f"{best}: {a.tokens[best]}" and f"At layer {layer}," in asked
    at.button(key="predict_skip").click().run()
    assert_no_exception(at)
    (said,) = [m for m in messages(at, "success") if "You skipped" in m]
    assert f"The answer: {truth.truth}." in said, said
    assert f"restoring the stream of “{a.tokens[best]}” (position {best}) at layer {layer}" in said
    np.testing.assert_allclose(grid_on_page(at, "lesson_patching"), expected.residual, atol=1e-4)


NOT_WORDS = re.compile(r"^[\d\s.,:·x×−\-+%()\[\]]*$")  # numbers, nothing to translate


def marked(text: str) -> bool:
    """A pseudo-language text is or holds a marked message, or has no words of its own."""
    return "⟦" in text or bool(NOT_WORDS.match(text))


def texts_of(at) -> list[str]:
    """The main area's texts and labels (but the status line), and each chart's titles."""
    said = [shown(str(e.value)) for kind in ("header", "subheader", "caption", "markdown",
            "info", "warning") for e in at.main.get(kind)]  # fmt: skip
    said += [shown(str(e.label)) for kind in ("text_input", "radio", "select_slider", "selectbox",
             "tabs") for e in at.main.get(kind)]  # fmt: skip
    for chart in at.get("plotly_chart"):
        layout = json.loads(chart.proto.spec)["layout"]
        parts = [part for name, part in layout.items() if name == "title" or name[1:5] == "axis"]
        said += [part.get("title", {}).get("text", "") for part in parts]
        said.append(layout.get("title", {}).get("text", ""))
    return [text for text in said if text and "traced forward pass" not in text]


@pytest.mark.parametrize("language", [PSEUDO, "ar"])
def test_every_text_the_view_draws_is_a_marked_message(language: str) -> None:
    at = ready(open_page(view=VIEW, lang=language, text="The cat sat on the mat."))
    for label in ("Residual stream", "Attention and feed-forward", "Heads", "The cone"):
        at = open_tab(at, "patch_tab", translations(language).gettext(label))
        if language == PSEUDO:
            assert not [text for text in texts_of(at) if not marked(text)], label
    assert at.get("plotly_chart") and not messages(at, "warning")
