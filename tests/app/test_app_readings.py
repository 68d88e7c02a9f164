"""The Attention view's two more readings in AppTest: what a head moves and rollout are modes of
the explorer, their numbers in its payload equal to the library's computed here from MiniLM (the
library's own are checked against independent references in tests/encoder); their sentences and
share tables are drawn only once their section is opened; compare mode with random weights; at 502
tokens, the chosen head's and the last layer's within the page's byte budget."""

from __future__ import annotations

import numpy as np
import pytest

from app.views.attention import READINGS
from encoder.inspect.moves import norm_weighted_attention, share_summary, sink_shares
from encoder.inspect.rollout import rollout
from encoder.web.payload import decode_readings
from tests.app.helpers import assert_no_exception, open_page
from tests.shared import SENTENCE

LAYER, HEAD = 3, 4


def opened(at):
    """The page again with the readings' section open (as a click on its expander)."""
    at.session_state[READINGS[0]] = True
    return at.run()


@pytest.fixture(scope="module")
def readings(minilm):
    """MiniLM's trace of the lesson's sentence, computed here, and the page drawn on it."""
    batch = minilm.batch(SENTENCE)
    trace = minilm.trace_of(SENTENCE, names=[])
    at = open_page(
        view="Attention", source="pretrained", text=SENTENCE, layer=str(LAYER), head=str(HEAD)
    )
    return minilm.model, batch, trace, at


def test_the_explorer_carries_what_each_head_moves_and_the_rollout_as_the_library(readings):
    model, batch, trace, at = readings
    assert_no_exception(at)
    assert not at.get("plotly_chart")  # the readings' matrices are the explorer's modes now
    moved, rolled = decode_readings(at.get("bidi_component")[0].proto.bytes)
    expected = norm_weighted_attention(trace, model)[:, 0].numpy()  # [L, H, query, key]
    assert set(moved) == {(layer, head) for layer in range(6) for head in range(12)}
    for (layer, head), matrix in moved.items():
        scale = max(1.0, float(np.abs(expected[layer, head]).max()))
        np.testing.assert_allclose(matrix, expected[layer, head], atol=1e-4 * scale)
    # the weights park on [CLS]; what is moved from it is small against the other keys
    weights = trace.attention[LAYER, 0, HEAD].numpy()
    assert weights[:, 0].mean() > 0.5
    assert moved[LAYER, HEAD][:, 0].mean() < moved[LAYER, HEAD].mean(axis=0).max()
    composed = rollout(trace.attention, trace.attention_mask)[:, 0].numpy()  # [L, T, T]
    assert sorted(rolled) == list(range(6))
    for layer, matrix in rolled.items():
        np.testing.assert_allclose(matrix, composed[layer], atol=1e-4)


def test_the_readings_numbers_are_drawn_only_once_their_section_is_open(readings):
    model, batch, trace, at = readings
    said = " ".join(m.value for m in at.markdown)
    assert "of the attention weight goes to [CLS]" not in said and not at.dataframe
    at = opened(at)
    assert_no_exception(at)
    summary = share_summary(sink_shares(trace, model, batch.tokens))
    overall = summary[summary["layer"] == "all"].set_index("reading")["sinks"]
    raw, norm = overall["weight"], overall["norm-weighted"]
    said = " ".join(m.value for m in at.markdown)
    assert f"{raw:.0%} of the attention weight goes to [CLS], [SEP] and punctuation" in said
    assert f"that share drops to {norm:.0%}" in said
    table = next(df.value for df in at.dataframe if "sinks" in df.value.columns)
    page_all = table[table["layer"] == "all"].set_index("reading")["sinks"]
    np.testing.assert_allclose(page_all[["weight", "norm-weighted"]], [raw, norm], atol=1e-6)
    query = batch.tokens[0].index("it")  # the lesson's pick: the last pronoun
    assert f"After the last layer, “it” (position {query}) draws most on" in said


def test_compare_trained_with_random_weights_gives_each_setup_its_numbers():
    at = open_page(
        view="Attention", source="pretrained", compare="1", b_source="random", text=SENTENCE
    )
    at = opened(at)
    assert_no_exception(at)
    said = [m.value for m in at.markdown]
    a = next(s for s in said if s.startswith("**Setup A.** ") and "weight" in s)
    b = next(s for s in said if s.startswith("**Setup B.** ") and "weight" in s)
    assert "Much of the weight on these tokens moves little" in a
    assert "of the attention weight goes to [CLS]" in b and a != b
    assert len([s for s in said if "After the last layer" in s]) == 2
    payload = at.get("bidi_component")[0].proto.bytes
    assert all(decode_readings(payload, setup)[0] for setup in (0, 1))


def test_502_tokens_send_the_chosen_heads_moves_and_the_last_rollout_within_the_budget(minilm):
    text = " ".join(["word"] * 500)
    at = open_page(view="Attention", source="pretrained", text=text, layer="2", head="7")
    assert_no_exception(at)
    assert not at.get("plotly_chart")
    payload = at.get("bidi_component")[0].proto.bytes
    assert len(payload) <= 1_400_000  # the page's goal: 1.5 MB received per rerun in all
    moved, rolled = decode_readings(payload)
    trace = minilm.trace_of(text, names=[])
    assert sorted(moved) == [(2, 7)] and sorted(rolled) == [5]  # the chosen head; the last layer
    expected = norm_weighted_attention(trace, minilm.model)[2, 0, 7].numpy()
    np.testing.assert_allclose(moved[2, 7], expected, atol=1e-4 * max(1.0, expected.max()))
    composed = rollout(trace.attention, trace.attention_mask)[-1, 0].numpy()
    np.testing.assert_allclose(rolled[5], composed, atol=1e-4)
