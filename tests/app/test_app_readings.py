"""The Attention view's two more readings in AppTest: what a head moves, and rollout, with the
page's numbers against the library's computed here from MiniLM; compare mode with random weights."""

from __future__ import annotations

import numpy as np
import pytest

from encoder.inspect.moves import norm_weighted_attention, share_summary, sink_shares
from encoder.inspect.rollout import rollout
from tests.app.helpers import array, assert_no_exception, figure, heatmaps, open_page
from tests.shared import SENTENCE

LAYER, HEAD = 3, 4


@pytest.fixture(scope="module")
def readings(minilm):
    """MiniLM's trace of the lesson's sentence, computed here, and the page drawn on it."""
    batch = minilm.batch(SENTENCE)
    trace = minilm.trace_of(SENTENCE, names=[])
    at = open_page(
        view="Attention", source="pretrained", text=SENTENCE, layer=str(LAYER), head=str(HEAD)
    )
    return minilm.model, batch, trace, at


def test_what_a_head_moves_matches_the_library(readings):
    model, batch, trace, at = readings
    assert_no_exception(at)
    weights = array(heatmaps(figure(at, "moves_weights"))[0]["z"]).astype(float)
    moved = array(heatmaps(figure(at, "moves_norms"))[0]["z"]).astype(float)
    expected = norm_weighted_attention(trace, model)[LAYER, 0, HEAD].numpy()  # [query, key]
    np.testing.assert_allclose(moved, expected, atol=1e-4)
    np.testing.assert_allclose(weights, trace.attention[LAYER, 0, HEAD].numpy(), atol=1e-4)
    # the weights park on [CLS]; what is moved from it is small against the other keys
    assert weights[:, 0].mean() > 0.5 and moved[:, 0].mean() < moved.mean(axis=0).max()

    summary = share_summary(sink_shares(trace, model, batch.tokens))
    overall = summary[summary["layer"] == "all"].set_index("reading")["sinks"]
    raw, norm = overall["weight"], overall["norm-weighted"]
    said = " ".join(m.value for m in at.markdown)
    assert f"{raw:.0%} of the attention weight goes to [CLS], [SEP] and punctuation" in said
    assert f"that share drops to {norm:.0%}" in said
    table = next(df.value for df in at.dataframe if "sinks" in df.value.columns)
    page_all = table[table["layer"] == "all"].set_index("reading")["sinks"]
    np.testing.assert_allclose(page_all[["weight", "norm-weighted"]], [raw, norm], atol=1e-6)


def test_rollout_matches_the_formula_and_names_the_source_tokens(readings):
    model, batch, trace, at = readings
    rolled = rollout(trace.attention, trace.attention_mask)[:, 0]  # [L, T, T]
    matrix = array(heatmaps(figure(at, "rollout"))[0]["z"]).astype(float)
    np.testing.assert_allclose(matrix, rolled[-1].numpy(), atol=1e-4)
    query = batch.tokens[0].index("it")  # the lesson's pick: the last pronoun
    lines = figure(at, "rollout_lines")["data"]
    assert len(lines) == model.cfg.num_layers
    np.testing.assert_allclose(array(lines[-1]["y"]), rolled[-1, query].numpy(), atol=1e-4)
    said = " ".join(m.value for m in at.markdown)
    assert f"After the last layer, “it” (position {query}) draws most on" in said


def test_compare_trained_with_random_weights_gives_each_setup_its_numbers():
    at = open_page(
        view="Attention", source="pretrained", compare="1", b_source="random", text=SENTENCE
    )
    assert_no_exception(at)
    said = [m.value for m in at.markdown]
    a = next(s for s in said if s.startswith("**Setup A.**"))
    b = next(s for s in said if s.startswith("**Setup B.**"))
    assert "Much of the weight on these tokens moves little" in a
    assert "of the attention weight goes to [CLS]" in b and a != b
    assert len([s for s in said if s.startswith("After the last layer")]) == 2
