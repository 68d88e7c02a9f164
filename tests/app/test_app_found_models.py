"""Encoders found on this machine as model sources (AppTest): ENCODER_EXPLORER_MODELS pointing at
tiny BERT checkpoints built here (and an empty Hugging Face cache), offered in the Weights control
with their family and size, run with their own architecture (said, not a control), named by a
link; one that cannot be loaded is a message, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import load_file
from streamlit.testing.v1 import AppTest

from app import sources
from app.controls.setup_keys import DEFAULTS
from app.memory import CACHE, size_text
from app.user_text import literal
from encoder.inspect.limits import MAX_PARAMETERS
from encoder.io.checkpoints import load_checkpoint
from encoder.io.finder import find_model, load_peak_bytes, too_large
from encoder.io.tokenize import tokenize
from tests.app.helpers import architecture_said, assert_no_exception, explorer, open_page, shown
from tests.encoder.family_checkpoints import FFN, HEADS, HIDDEN, LAYERS, build_checkpoint

SENTENCE = "The cat sat on the mat."
FOUND = "disk:tiny-bert"
TINY_BERT = (  # its architecture, as the sidebar says it
    f"post-norm, d_model {HIDDEN}, {HEADS} heads, {LAYERS} layers, d_ff {FFN}, GELU, LayerNorm, "
    "learned positions"
)


@pytest.fixture
def models(tmp_path: Path, monkeypatch) -> tuple[Path, int]:
    """A folder of checkpoints: tiny-bert, tiny-modernbert, and broken-bert (its config does not
    fit its weights), mpnet-base (not read); the machine's Hugging Face cache is an empty folder.
    (tiny-bert's path, its parameters)"""
    pytest.importorskip("transformers")
    folder = tmp_path / "models"
    build_checkpoint("bert", folder / "tiny-bert", head=False)
    build_checkpoint("modernbert", folder / "tiny-modernbert", head=False)
    build_checkpoint("bert", folder / "broken-bert", head=False)
    parameters = sum(
        tensor.numel() for tensor in load_file(folder / "tiny-bert" / "model.safetensors").values()
    )
    config_path = folder / "broken-bert" / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "intermediate_size": FFN + 16}))
    (folder / "mpnet-base").mkdir()
    (folder / "mpnet-base" / "config.json").write_text(json.dumps({"model_type": "mpnet"}))
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", str(folder))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    sources.found_models.clear()
    yield folder / "tiny-bert", parameters
    sources.found_models.clear()


def choose(at: AppTest, source: str) -> AppTest:
    return at.radio(key="source").set_value(source).run()


def test_found_models_are_offered_with_family_and_size(models) -> None:
    path, parameters = models
    at = open_page(text=SENTENCE)
    assert_no_exception(at)
    weights = (path / "model.safetensors").stat().st_size
    label = f"tiny-bert (BERT, {parameters:,} parameters, {size_text(weights)})"  # under 1M
    assert label in at.radio(key="source").options
    assert any(option.startswith("broken-bert (BERT") for option in at.radio(key="source").options)
    assert not any(option.startswith("mpnet-base") for option in at.radio(key="source").options)
    (listing,) = [c.value for c in at.caption if "mpnet" in c.value]
    assert shown(listing).startswith(
        "- mpnet-base (mpnet): config.json: model_type 'mpnet' is not read: MPNet's attention"
    )


def test_choosing_one_runs_it_with_its_architecture_locked(models) -> None:
    path, _ = models
    at = choose(open_page(text=SENTENCE), FOUND)
    assert_no_exception(at)
    assert at.session_state["source"] == FOUND
    assert architecture_said(at) == TINY_BERT  # in place of the controls
    assert not at.sidebar.select_slider and not at.sidebar.slider
    assert at.query_params["source"] == FOUND
    # the page's attention is the checkpoint's own, read with its own tokenizer
    checkpoint = load_checkpoint(path)
    batch = tokenize([SENTENCE], checkpoint.tokenizer, 512)
    expected = checkpoint.encoder.trace(batch.input_ids, batch.attention_mask).attention[:, 0]
    entry, weights = explorer(at)
    assert entry["tokens"] == batch.tokens[0]
    np.testing.assert_allclose(weights, expected.numpy(), atol=2e-3)
    # back to random weights: the user's own architecture again
    at = choose(at, "random")
    assert at.select_slider(key="d_model").value == DEFAULTS["d_model"]
    assert architecture_said(at) is None


def test_a_found_modernbert_says_its_other_architecture_choices(models) -> None:
    at = choose(open_page(text=SENTENCE), "disk:tiny-modernbert")
    assert_no_exception(at)
    assert at.session_state["source"] == "disk:tiny-modernbert"
    assert architecture_said(at) == (  # RoPE's base: the global layers'
        f"pre-norm, d_model {HIDDEN}, {HEADS} heads, {LAYERS} layers, d_ff {FFN}, GeGLU, "
        "LayerNorm, rotary (RoPE) positions, RoPE base 160000, linear biases off, norm biases "
        "off, window 4, global every 3 layers"
    )
    # the link names the source, which brings its own architecture: no architecture key in it
    assert "window" not in at.query_params and "global_every" not in at.query_params
    entry, _ = explorer(at)
    assert (entry["layers"], entry["heads"]) == (LAYERS, HEADS)


def test_a_link_names_a_found_model(models) -> None:
    at = open_page(source=FOUND, text=SENTENCE)
    assert_no_exception(at)
    assert at.radio(key="source").value == FOUND
    assert architecture_said(at) == TINY_BERT


def test_one_that_cannot_be_loaded_is_a_message(models) -> None:
    at = choose(open_page(text=SENTENCE), "disk:broken-bert")
    assert_no_exception(at)
    assert at.session_state["source"] == "random"
    (error,) = at.error
    folder = models[0].parent
    try:
        load_checkpoint(folder / "broken-bert")
    except ValueError as refusal:
        expected = f"{literal(str(refusal).rstrip('.'))}. The weights are random again."
    assert error.value == expected


def test_a_link_to_a_model_this_machine_lacks_falls_back_with_a_message(models) -> None:
    at = open_page(source="disk:someone/elsewhere")
    assert_no_exception(at)
    assert at.session_state["source"] == "random"
    assert shown(at.error[0].value).startswith(
        "'someone/elsewhere' is not among the models found on this machine"
    )


def test_more_architecture_choices_are_controls_and_url_keys() -> None:
    at = open_page(positional="rope", rope_base="1000", window="8", bias="off", shared="shared")
    assert_no_exception(at)
    assert at.select_slider(key="rope_base").value == 1000
    assert not at.select_slider(key="rope_base").disabled
    assert at.select_slider(key="window").value == 8 and at.radio(key="bias").value == "off"
    assert at.radio(key="shared").value == "shared"
    assert not at.select_slider(key="global_every").disabled  # a window: global layers act
    at = at.select_slider(key="window").set_value(0).run()
    assert at.select_slider(key="global_every").disabled
    # a key back at its default leaves the link; the others stay in it
    assert "window" not in at.query_params and at.query_params["rope_base"] == "1000"
    at.session_state["more_architecture_changed"] = False  # closed: its choices not drawn...
    at = at.run()
    assert_no_exception(at)
    assert not [s for s in at.select_slider if s.key in ("window", "rope_base")]
    # ...and keep their values, in the link and in the model that runs
    # a key back at its default leaves the link; the others stay in it
    assert "window" not in at.query_params and at.query_params["rope_base"] == "1000"
    assert at.query_params["bias"] == "off" and at.query_params["shared"] == "shared"
    at = at.text_area(key="text").set_value("Another sentence here.").run()
    assert at.query_params["rope_base"] == "1000" and at.query_params["shared"] == "shared"


def test_more_architecture_choices_are_not_drawn_while_closed() -> None:
    at = open_page(source="random")  # every choice at its default: closed
    assert_no_exception(at)
    assert not [s for s in at.select_slider if s.key == "rope_base"]
    at.session_state["more_architecture"] = True  # opened
    at = at.run()
    assert at.select_slider(key="rope_base").value == DEFAULTS["rope_base"]


def test_setup_b_can_be_a_found_model(models) -> None:
    path, _ = models
    at = open_page(compare="1", b_source=FOUND, text=SENTENCE)
    assert_no_exception(at)
    assert at.radio(key="b_source").value == FOUND
    assert architecture_said(at) == TINY_BERT  # B's, in place of B's controls
    assert not [w for w in at.sidebar.select_slider if w.key.startswith("b_")]
    a, b = explorer(at, 0)[0], explorer(at, 1)[0]
    assert (a["layers"], a["heads"]) == (DEFAULTS["num_layers"], DEFAULTS["num_heads"])
    assert (b["layers"], b["heads"]) == (LAYERS, HEADS)
    assert b["tokens"] == tokenize([SENTENCE], load_checkpoint(path).tokenizer, 512).tokens[0]


def test_a_found_model_is_loaded_once_for_every_session(models, monkeypatch) -> None:
    loads = []

    def counted(path):
        loads.append(path)
        return load_checkpoint(path)

    monkeypatch.setattr(sources, "load_checkpoint", counted)
    first = open_page(source=FOUND, text=SENTENCE)
    second = choose(open_page(text="Another sentence."), FOUND)
    assert_no_exception(first)
    assert_no_exception(second)
    assert loads == [models[0]]


def test_one_over_the_memory_budget_is_refused_with_a_sentence(models, monkeypatch) -> None:
    budget = load_peak_bytes(find_model(str(models[0]))) - 1
    monkeypatch.setattr(CACHE, "budget", budget)
    at = open_page(text=SENTENCE)
    (label,) = [o for o in at.radio(key="source").options if o.startswith("tiny-bert")]
    assert label.endswith(", too large here)")
    at = choose(at, FOUND)
    assert at.session_state["source"] == "random"
    model = sources.found_models()[FOUND]
    why = too_large(model, MAX_PARAMETERS, budget)
    assert why.startswith("loading it takes about")
    expected = f"tiny-bert cannot be used here: {why}. The weights are random again."
    assert expected in [shown(error.value) for error in at.error]  # (random weights: too large too)
