"""The Attention steps view and head ablation, driven through AppTest, checked against numbers
computed here from the model itself."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import torch

from app import downloads, run_cache
from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.run_cache import run_for
from app.sources import built_in
from encoder import TransformerEncoder, hooks
from encoder.inspect.attention_steps import step_table
from encoder.inspect.neuron import neuron_cell
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web.payload import decode_header
from tests.app.helpers import (
    EVERY_STEP_OPEN,
    array,
    assert_no_exception,
    figure,
    go,
    open_page,
    shown,
    tokens_of,
)
from tests.shared import SENTENCE

STEP_HEADINGS = [f"{n} · " for n in range(1, 9)]
TWO = "The cat sat on the mat.\nA much longer second sentence pads the first."


def default_model(**controls) -> TransformerEncoder:
    """The model the page builds with its default controls (and these)."""
    return TransformerEncoder(random_config(dict(DEFAULTS, **controls))).eval()


def traced(model: TransformerEncoder, text: str, ablate=()):
    batch = tokenize(text.splitlines(), load_tokenizer(), 512)
    return model.trace(batch.input_ids, batch.attention_mask, ablate_heads=ablate)


def step_frame(at) -> pd.DataFrame:
    return at.dataframe[0].value


def open_every_step(at):
    """Open each step's expander, as a reader's clicks would (each opening reruns the page)."""
    for key, opened in EVERY_STEP_OPEN.items():
        at.session_state[key] = opened
    return at.run()


def test_steps_view_shows_the_chosen_querys_computation_with_the_models_numbers():
    # query 4 is the token "'": a straight quote, shown literally
    at = open_page(view="Attention steps", step_layer="2", step_head="1", step_query="4")
    assert_no_exception(at)
    # at first, the scores and weights only (the view's answer); each other step is a closed
    # expander, its charts neither computed nor sent
    # every step's expander, the neuron view's ("4b · ", no heading of its own) after the table
    assert [e.label[:4] for e in at.main.expander] == [
        *STEP_HEADINGS[:4],
        "4b ·",
        *STEP_HEADINGS[4:],
    ]
    assert [h.value[:4] for h in at.subheader] == ["4 · "]
    assert at.get("plotly_chart") == []
    assert at.dataframe[0].value["key"].tolist() == tokens_of(SENTENCE)
    open_every_step(at)
    assert_no_exception(at)
    assert shown(at.header[0].value) == "Layer 2, head 1: how query 4 “'” attends"
    assert [h.value[:4] for h in at.subheader] == STEP_HEADINGS  # the data-flow order
    trace = traced(default_model(), SENTENCE)
    tokens = tokens_of(SENTENCE)
    table = step_frame(at)
    assert table["key"].tolist() == tokens
    np.testing.assert_allclose(table["weight"], trace.attention[2, 0, 1, 4], rtol=1e-6)
    scores = trace[hooks.block(2).attn.scores][0, 1, 4]
    np.testing.assert_allclose(table["scaled"], scores, rtol=1e-5)
    keys = figure(at, "step_keys")
    assert keys["layout"]["yaxis"]["ticktext"] == [f"{j} {t}" for j, t in enumerate(tokens)]
    info = shown(at.info[0].value)
    assert "equals the head's attention row for this query: row 4 of layer 2, head 1" in info
    top = int(trace.attention[2, 0, 1, 4].argmax())
    assert f"key {top} “{tokens[top]}”" in info


def test_padding_rows_are_marked_and_masked_post_norm():
    at = open_every_step(open_page(text=TWO, norm="post", view="Attention steps", step_query="2"))
    assert_no_exception(at)
    short, long = (len(tokens_of(line)) for line in TWO.splitlines())
    table = step_frame(at)
    assert len(table) == long
    assert table["padding"].tolist() == [""] * short + ["PADDING"] * (long - short)
    assert np.isneginf(table["masked"][short:]).all() and (table["weight"][short:] == 0).all()
    assert np.isfinite(table["scaled"]).all()  # the scaled score is shown before masking
    assert at.subheader[-1].value.startswith("8 · Residual add, then the norm")
    assert any(f"The {long - short} padding rows (grey)" in c.value for c in at.caption)


ROPE_WINDOW = dict(positional="rope", window=4, global_every=3, num_layers=4)


def test_rope_shows_q_and_k_turned_by_their_position_as_the_model_turned_them():
    at = open_page(
        view="Attention steps", step_layer="2", step_head="1", step_query="6",
        **{key: str(value) for key, value in ROPE_WINDOW.items()},
    )  # fmt: skip
    assert_no_exception(at)
    assert at.main.expander[3].label.startswith("3b · RoPE")
    at.session_state["step_open_rope"] = True  # a reader's click
    at.run()
    rope = hooks.block(2).attn
    trace = traced(default_model(**ROPE_WINDOW), SENTENCE)
    strips = array(figure(at, "step_rope_q")["data"][0]["z"])
    np.testing.assert_allclose(strips[0], trace[rope.q][0, 1, 6], atol=1e-5)
    np.testing.assert_allclose(strips[1], trace[rope.rot_q][0, 1, 6], atol=1e-5)
    rotated = array(figure(at, "step_rope_rotated_keys")["data"][0]["z"])
    np.testing.assert_allclose(rotated, trace[rope.rot_k][0, 1], atol=1e-5)
    # the turns read from the vectors against RoPE's formula, written here: 6 * base^(-2j/dk)
    turns = figure(at, "step_rope_turns")["data"]
    dk = 256 // DEFAULTS["num_heads"]
    formula = 6 * 10000.0 ** (-2 * np.arange(dk // 2) / dk)
    wrapped = np.degrees(np.angle(np.exp(1j * formula)))
    np.testing.assert_allclose(array(turns[1]["y"]), wrapped, atol=1e-3)
    np.testing.assert_allclose(array(turns[0]["y"]), wrapped, atol=1e-2)
    said = shown(" ".join(c.value for c in at.caption))
    assert f"At position 6, pair 0 turns by 6.000 rad ({math.degrees(6):.1f}°)" in said
    # the scores are made of the turned vectors
    table = step_frame(at)
    q_dot_k = trace[rope.rot_k][0, 1].double() @ trace[rope.rot_q][0, 1, 6].double()
    np.testing.assert_allclose(table["q_dot_k"], q_dot_k, rtol=1e-5)


def test_a_local_layer_masks_the_keys_outside_its_window_and_a_global_layer_says_so():
    query = dict(view="Attention steps", step_layer="1", step_query="5")
    at = open_page(**query, **{key: str(value) for key, value in ROPE_WINDOW.items()})
    assert_no_exception(at)
    n, half = len(tokens_of(SENTENCE)), ROPE_WINDOW["window"] // 2
    distance = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    removed = int((distance > half).sum())  # the pairs a window of 4 masks, counted here
    table = step_frame(at)
    outside = distance[5] > half
    assert table["outside_window"].tolist() == np.where(outside, "OUTSIDE", "").tolist()
    assert np.isneginf(table["masked"][outside]).all() and (table["weight"][outside] == 0).all()
    said = shown(" ".join(c.value for c in at.caption))
    assert f"the window removes {removed} of the {n} × {n} = {n * n} query-key pairs" in said
    assert f"in query 5's row, {int(outside.sum())} keys get −∞" in said
    window = figure(at, "step_window")
    crosses = next(t for t in window["data"] if t["type"] == "scatter")
    assert crosses["name"].startswith(f"outside the window: {removed} cells masked")
    assert sorted(zip(array(crosses["y"]), array(crosses["x"]), strict=True)) == sorted(
        map(tuple, np.argwhere(distance > half).tolist())
    )
    at.slider(key="step_layer").set_value(3).run()  # layer 3: a multiple of global_every
    assert_no_exception(at)
    said = shown(" ".join(c.value for c in at.caption))
    assert "Layer 3 is global: every query sees every key" in said
    assert "layers 1, 2" in said and not (step_frame(at)["outside_window"] == "OUTSIDE").any()


def test_step_controls_change_the_link_and_survive_other_views():
    at = open_page(view="Attention steps")
    at.slider(key="step_layer").set_value(3).run()
    at.slider(key="step_head").set_value(2).run()
    at.selectbox(key="step_query").set_value(10).run()
    assert_no_exception(at)
    assert (at.query_params["step_layer"], at.query_params["step_head"]) == ("3", "2")
    assert at.query_params["step_query"] == "10"
    assert shown(at.header[0].value) == "Layer 3, head 2: how query 10 “it” attends"
    go(at, "Shapes")
    go(at, "Attention steps")
    assert at.slider(key="step_layer").value == 3 and at.slider(key="step_head").value == 2
    assert at.selectbox(key="step_query").value == 10


def test_bad_step_links_get_a_message_or_are_brought_into_range():
    at = open_page(view="Attention steps", step_query="it", step_head="99", step_layer="7")
    assert_no_exception(at)
    messages = shown(" ".join(w.value for w in at.warning))
    assert "step_query='it' is not a whole number" in messages
    assert "step_head=99 is outside 0..63" in messages
    assert at.slider(key="step_layer").value == 3  # a 4-layer model: its last layer
    at = open_page(view="Attention steps", step_query="300")
    assert at.selectbox(key="step_query").value == len(tokens_of(SENTENCE)) - 1


def test_the_steps_table_downloads_at_full_precision():
    state = dict(DEFAULTS, d_model=32, num_heads=4, num_layers=2, d_ff=64)
    run = run_for(
        cfg := random_config(state), built_in("random", cfg), "cpu", TWO.splitlines(), names=None
    )
    frame = pd.read_csv(io.BytesIO(downloads.steps_csv(run, 0, 1, 3, 2)))
    expected = step_table(run.trace, 0, 1, 3, 2, run.padded_tokens[0])
    assert frame["key"].tolist() == run.padded_tokens[0]
    for column in ("q_dot_k", "scaled", "masked", "weight", "contribution_norm"):
        np.testing.assert_array_equal(frame[column], expected[column])  # no rounding
    assert np.isneginf(frame["masked"][run.n_valid(0) :]).all()


def mean_cosines(base, ablated, n: int) -> np.ndarray:
    """Mean over the real tokens of the cosine at every depth, computed here."""
    means = []
    for a, b in zip(base.hidden_states, ablated.hidden_states, strict=True):
        a, b = a[0, :n].double(), b[0, :n].double()
        means.append(float(torch.nn.functional.cosine_similarity(a, b, dim=-1).mean()))
    return np.array(means)


def test_an_ablation_link_shows_cosines_layer_by_layer():
    at = open_page(ablate="0.2,1.3")
    assert_no_exception(at)
    assert at.text_input(key="ablate").value == "0.2,1.3"
    assert at.query_params["ablate"] == "0.2,1.3"
    model = default_model()
    base, ablated = traced(model, SENTENCE), traced(model, SENTENCE, ablate=((0, 2), (1, 3)))
    n = len(tokens_of(SENTENCE))
    table = next(d.value for d in at.dataframe if "mean cosine" in d.value.columns)
    assert table["stream"].tolist()[:2] == ["embeddings", "after block 0"]
    np.testing.assert_allclose(table["mean cosine"], mean_cosines(base, ablated, n), atol=1e-6)
    metrics = {m.label: m.value for m in at.metric}
    assert "Sentence-embedding cosine" not in metrics  # random weights: no sentence embedding
    out = torch.nn.functional.cosine_similarity(base.output[0], ablated.output[0], dim=-1)
    assert metrics["Mean cosine of the final output"] == f"{float(out.mean()):.4f}"
    difference = figure(at, "ablation_difference")
    values = [t for t in difference["data"] if t.get("name") == "difference"][0]
    assert values["zmid"] == 0 and values["zmin"] == -values["zmax"]
    assert difference["layout"]["yaxis2"]["ticktext"] == ["L1", "L2", "L3"]


def test_bad_ablation_values_are_named_and_the_rest_is_used():
    at = open_page(ablate="x,9.9,0.1")
    assert_no_exception(at)
    messages = shown(" ".join(w.value for w in at.warning))
    assert "'x' is not written layer.head" in messages
    assert "'9.9' is not a head of this model (layers 0..3, heads 0..3)" in messages
    assert any("Without layer 0, head 1" in c.value for c in at.caption)
    at.text_input(key="ablate").set_value("3.0").run()
    assert_no_exception(at)
    assert any("Layer 3 is the last" in c.value for c in at.caption)


def test_no_second_run_without_ablation(monkeypatch):
    calls = []
    real_run_for = run_cache.run_for

    def counting(*args, **kwargs):
        calls.append(tuple(kwargs.get("ablate", ())))
        return real_run_for(*args, **kwargs)

    monkeypatch.setattr(run_cache, "run_for", counting)
    at = open_page(view="Attention")
    assert_no_exception(at)
    assert calls == [()]
    calls.clear()
    at.text_input(key="ablate").set_value("1.1").run()
    assert calls == [(), ((1, 1),)]


def test_pretrained_ablation_reports_the_sentence_embedding_cosine(minilm):
    at = open_page(source="pretrained", ablate="3.1")
    assert_no_exception(at)
    base = minilm.trace_of(SENTENCE)
    ablated = minilm.trace_of(SENTENCE, ablate_heads=[(3, 1)])
    pooled = base.output[0].double().mean(0), ablated.output[0].double().mean(0)
    expected = float(torch.nn.functional.cosine_similarity(*pooled, dim=0))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sentence-embedding cosine"] == f"{expected:.4f}"


def test_the_neuron_step_opens_the_explorer_on_this_query_with_the_turned_q_and_k():
    at = open_page(
        view="Attention steps", step_layer="2", step_head="1", step_query="6",
        **{key: str(value) for key, value in ROPE_WINDOW.items()},
    )  # fmt: skip
    assert not at.get("bidi_component")  # closed: nothing computed or sent
    labels = [box.label for box in at.main.expander]
    assert (
        labels.index("4b · One key's score, dimension by dimension")
        == labels.index("4 · Scores and weights, one row per key") + 1
    )
    at.session_state["step_open_qk"] = True  # a reader's click
    at.run()
    assert_no_exception(at)
    (drawn,) = at.get("bidi_component")
    data = drawn.proto.bytes
    assert decode_header(data)["start"] == {"layer": 2, "head": 1, "mode": "neuron", "query": 6}
    entry = decode_header(data)["setups"][0]
    body = 8 + int.from_bytes(data[4:8], "little") + entry["qk"]["offset"]
    n, dk = entry["n"], entry["qk"]["dk"]
    at_head = entry["qk"]["heads"].index([2, 1])
    vectors = np.frombuffer(data, "<f2", 2 * n * dk, body + at_head * 4 * n * dk).reshape(2, n, dk)
    rope = hooks.block(2).attn
    trace = traced(default_model(**ROPE_WINDOW), SENTENCE)
    np.testing.assert_allclose(vectors[0], trace[rope.rot_q][0, 1], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(vectors[1], trace[rope.rot_k][0, 1], rtol=2e-3, atol=2e-3)
    # its sentence, from the library's cell of the query's largest weight
    top = int(trace.attention[2, 0, 1, 6].argmax())
    cell = neuron_cell(trace, 0, 2, 1, 6, top)
    said = [shown(m.value) for m in at.markdown if "q·k = " in shown(m.value)]
    assert said == [str(cell.said(tokens_of(SENTENCE)))]
