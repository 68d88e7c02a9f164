"""Compare mode through AppTest: setup B in the sidebar and the URL, every view drawing A and B,
the tables' setup column against numbers computed here from each model, the headline pairs'
sentences, and an impossible B."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from app.views.attention import METRICS
from encoder import TransformerEncoder
from encoder.inspect.heads import head_metrics
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web.payload import decode_header
from tests.app.helpers import (
    STREAM_TAB,
    assert_no_exception,
    explorer,
    open_page,
    open_tab,
    page_model,
    shown,
    upload,
)
from tests.shared import SENTENCE

SMALL = {"d_model": "64", "num_heads": "4", "num_layers": "3", "d_ff": "128"}
VIEWS = ("Tokens", "Attention", "Attention steps", "LayerNorm", "Activations", "Shapes", "Export")


def model_for(**changes) -> TransformerEncoder:
    """The random-weights model the page builds from SMALL's sidebar values and these."""
    return page_model(**{k: int(v) for k, v in SMALL.items()}, **changes)


def traced(model: TransformerEncoder, text: str = SENTENCE):
    batch = tokenize([text], load_tokenizer(), 512)
    return model.trace(batch.input_ids, batch.attention_mask)


def table_with(at: AppTest, column: str) -> pd.DataFrame:
    return next(t.value for t in at.dataframe if column in t.value.columns)


def test_b_follows_a_until_changed_and_the_url_holds_only_where_b_differs() -> None:
    at = open_page(view="Attention", compare="1", b_norm="post", **SMALL)
    assert_no_exception(at)
    assert at.radio(key="b_norm").value == "post" and at.radio(key="norm").value == "pre"
    assert at.select_slider(key="b_d_model").value == 64  # absent from the URL: A's value
    assert at.query_params["compare"] == "1" and at.query_params["b_norm"] == "post"
    assert not [k for k in at.query_params if k.startswith("b_") and k != "b_norm"]
    at.select_slider(key="d_model").set_value(128).run()  # A changes; B follows
    assert at.select_slider(key="b_d_model").value == 128
    assert "B differs from A in norm placement: pre-norm → post-norm." in at.caption.values
    at.radio(key="b_activation").set_value("relu").run()  # B changes: the link says so
    assert at.query_params["b_activation"] == "relu"
    at.radio(key="b_activation").set_value("gelu").run()  # back to A's value: B follows again
    assert "b_activation" not in at.query_params
    at.toggle(key="compare").set_value(False).run()
    assert "compare" not in at.query_params and "b_norm" not in at.query_params
    assert_no_exception(at)


def test_a_link_with_b_values_reopens_the_same_pair() -> None:
    at = open_page(view="LayerNorm", compare="1", b_norm="post", b_seed="7", **SMALL)
    assert_no_exception(at)
    link = dict(at.query_params)
    again = open_page(**link)
    assert again.radio(key="b_norm").value == "post" and again.number_input(key="b_seed").value == 7
    assert dict(again.query_params) == link


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_draws_both_setups(view: str) -> None:
    at = open_page(view=view, compare="1", b_norm="post", **SMALL)
    assert_no_exception(at)
    assert not at.error
    titles = [m.value for m in at.markdown if m.value.startswith(("**A ·", "**B ·"))]
    if view != "Export":
        assert any("A · Random weights: pre-norm" in t for t in titles)
        assert any("B · Random weights: post-norm" in t for t in titles)


def test_residual_table_rows_are_each_models_numbers() -> None:
    at = open_tab(open_page(view="LayerNorm", compare="1", b_norm="post", **SMALL), *STREAM_TAB)
    assert_no_exception(at)
    table = table_with(at, "mean_norm")
    for setup, norm in (("A", "pre"), ("B", "post")):
        trace = traced(model_for(norm=norm))
        expected = torch.stack(trace.hidden_states)[:, 0].norm(dim=-1).mean(dim=-1)  # [depth]
        rows = table[table["setup"] == setup].sort_values("depth")
        np.testing.assert_allclose(rows["mean_norm"], expected.numpy(), rtol=1e-5)
        assert rows["stream"].iloc[0] == "embeddings"
    sentence = shown(at.info[0].value)
    post = traced(model_for(norm="post"))
    held = torch.stack(post.hidden_states[1:])[:, 0].norm(dim=-1).mean(dim=-1)
    assert f"sqrt(d_model) = {math.sqrt(64):.2f}" in sentence
    assert f"{held.min():.2f}" == f"{held.max():.2f}"  # unit gains: every block's output the same
    assert f"is {held.min():.2f} after each of the 3 blocks" in sentence


def test_head_metric_rows_carry_their_setup_and_the_deltas_are_b_minus_a() -> None:
    at = open_page(view="Attention", compare="1", b_activation="relu", **SMALL)
    at.session_state[METRICS[0]] = True  # the metrics' section opened (it computes only then)
    at.run()
    assert_no_exception(at)
    table = table_with(at, "setup")
    expected = {
        "A": head_metrics(traced(model_for()), 0),
        "B": head_metrics(traced(model_for(activation="relu")), 0),
    }
    for setup, metrics in expected.items():
        rows = table[table["setup"] == setup].sort_values(["layer", "head"])
        np.testing.assert_allclose(rows["entropy"], metrics["entropy"], rtol=1e-5)
    deltas = table_with(at, "Δ entropy").sort_values(["layer", "head"])
    change = expected["B"]["entropy"] - expected["A"]["entropy"]
    np.testing.assert_allclose(deltas["Δ entropy"], change, atol=1e-5)
    # one explorer holds both setups; the browser draws B − A from them
    a, b = (explorer(at, setup) for setup in (0, 1))
    assert (a[0]["name"], b[0]["name"]) == ("A", "B") and a[0]["tokens"] == b[0]["tokens"]
    expected_b = traced(model_for(activation="relu")).attention[:, 0].numpy()
    np.testing.assert_allclose(b[1], expected_b, atol=1e-4)


@pytest.mark.parametrize(("smooth", "name"), [("gelu", "GELU"), ("geglu", "GeGLU")])
def test_relu_vs_a_smooth_activation_says_the_share_of_exact_zeros(smooth: str, name: str) -> None:
    """A's ReLU against B's GELU, or (gated) GeGLU, whose hidden values are GELU(x) x gate."""
    at = open_page(view="Activations", compare="1", b_activation=smooth, **SMALL, activation="relu")
    assert_no_exception(at)
    names = {"A": model_for(activation="relu"), "B": model_for(activation=smooth)}
    shares = {}
    for setup, model in names.items():
        trace = traced(model)
        posts = [trace[f"blocks.{i}.mlp.hook_post"][0] for i in range(3)]
        shares[setup] = np.mean([(p == 0).float().mean().item() for p in posts])
    sentence = shown(next(i.value for i in at.info if "exactly zero" in i.value))
    assert f"{shares['A']:.1%} of the feed-forward's hidden values are exactly zero" in sentence
    assert f"{name} (B) bends negative values toward 0" in sentence
    assert f"instead: {shares['B']:.2%} are exactly zero" in sentence
    ffn = table_with(at, "share_zero")
    assert set(ffn["setup"]) == {"A", "B"} and len(ffn) == 6


def test_minilm_with_a_head_off_names_the_later_heads_that_moved(minilm) -> None:
    at = open_page(view="Attention", source="pretrained", compare="1", b_ablate="1.3")
    assert_no_exception(at)
    base = minilm.trace_of(SENTENCE)
    off = minilm.trace_of(SENTENCE, ablate_heads=[(1, 3)])
    moved = 0.5 * (off.attention - base.attention)[2:, 0].abs().sum(-1).mean(-1)  # [L', H]
    layer, head = divmod(int(moved.argmax()), moved.shape[1])
    sentence = shown(next(i.value for i in at.info if "Switching off layer 1, head 3" in i.value))
    assert f"most layer {layer + 2}, head {head}, where {moved.max().item():.1%}" in sentence


def test_random_vs_trained_compares_how_focused_the_heads_are(minilm) -> None:
    at = open_page(view="Attention", source="pretrained", compare="1", b_source="random")
    assert_no_exception(at)
    trained = head_metrics(minilm.trace_of(SENTENCE), 0)
    sentence = shown(next(i.value for i in at.info if "Random weights (B)" in i.value))
    assert (
        f"The trained weights (A) spread each query's attention unevenly: mean entropy "
        f"{trained['entropy'].mean():.2f}" in sentence
    )
    assert at.radio(key="b_norm").value == "post"  # B: random weights in MiniLM's architecture


def test_an_impossible_b_names_its_values_and_a_is_still_drawn() -> None:
    at = open_page(view="Attention", compare="1", b_d_model="30", **SMALL)
    assert_no_exception(at)
    message = shown(at.error[0].value)
    assert "Setup B is impossible" in message and "d_model=30" in message
    assert "num_heads=4" in message
    assert [
        s["name"] for s in decode_header(at.get("bidi_component")[0].proto.bytes)["setups"]
    ] == ["A"]


def test_a_selection_b_lacks_is_said_and_shapes_that_differ_get_no_difference_panel() -> None:
    at = open_page(
        view="Attention", compare="1", b_num_layers="2", b_num_heads="8", layer="2", **SMALL
    )
    assert_no_exception(at)
    shapes = [(s["layers"], s["heads"]) for s in (explorer(at, i)[0] for i in (0, 1))]
    assert shapes == [(3, 4), (2, 8)]  # the explorer draws each; B − A needs the same shapes
    assert any("No difference panel" in shown(c.value) for c in at.caption)


def test_the_pairs_are_one_click() -> None:
    at = open_page(view="Attention", compare="1", layer="1", **SMALL)
    at.button(key="pair_norm").click().run()
    assert at.radio(key="b_norm").value == "post" and at.query_params["b_norm"] == "post"
    at.button(key="pair_activation").click().run()
    assert at.radio(key="b_activation").value == "relu" and at.radio(key="b_norm").value == "pre"
    at.button(key="pair_head_off").click().run()
    assert at.text_input(key="b_ablate").value == "1.0"
    at.button(key="pair_random").click().run()
    assert (
        at.radio(key="source").value == "pretrained" and at.radio(key="b_source").value == "random"
    )
    assert_no_exception(at)


@pytest.mark.parametrize(
    ("activation", "label", "other"),
    [("geglu", "GeGLU ↔ SwiGLU", "swiglu"), ("gelu_tanh", "ReLU ↔ GELU (tanh)", "relu")],
)
def test_the_activation_pair_of_a_gated_or_tanh_activation(activation, label, other) -> None:
    at = open_page(view="Attention", compare="1", activation=activation, **SMALL)
    button = at.button(key="pair_activation")
    assert button.label == label
    button.click().run()
    assert at.radio(key="b_activation").value == other
    assert_no_exception(at)


def test_setup_b_s_model_and_run_count_in_the_shared_memory_budget() -> None:
    from app import runs

    runs.CACHE.clear()
    at = open_page(view="Attention", compare="1", b_norm="post", **SMALL)
    assert_no_exception(at)
    b_config = model_for(norm="post").cfg
    cached = [key for key in runs.CACHE._entries]
    models = [k for k in cached if k[0] == "model" and k[1] == b_config]  # not the landing's
    b_runs = [k for k in cached if k[0] == "run" and k[1].cfg == models[0][1]]
    assert len(models) == 1 and len(b_runs) == 1
    assert b_runs[0][1].sentences == (SENTENCE,)
    assert runs.CACHE.used >= sum(p.numel() * 4 for p in TransformerEncoder(b_config).parameters())


def test_a_trained_toy_model_against_random_weights_of_its_architecture() -> None:
    from encoder.io.checkpoint_files import checkpoint_archive
    from encoder.train.config import TrainConfig
    from encoder.train.trainer import train

    cfg = TrainConfig(task="reverse", steps=20, held_out_examples=50).with_model(
        d_model=32, num_layers=1
    )
    model = train(cfg).task_model()
    at = open_page(view="Attention")
    at = upload(at, ("reverse.zip", checkpoint_archive(model.files())))
    assert_no_exception(at)
    at.toggle(key="compare").set_value(True).run()
    at.button(key="pair_random").click().run()  # A trained, B random in its architecture
    assert_no_exception(at)
    assert not at.error, [e.value for e in at.error]
    assert at.radio(key="b_source").value == "random"
    at.session_state[METRICS[0]] = True
    at.run()
    deltas = table_with(at, "Δ entropy")
    assert "Δ to first" in deltas.columns and len(deltas) == 4  # 1 layer x 4 heads
    sentence = shown(next(i.value for i in at.info if "Random weights (B)" in i.value))
    assert "over the 8 tokens" in sentence


def test_trained_weights_offer_only_the_pairs_that_keep_their_architecture() -> None:
    at = open_page(view="Attention", compare="1", source="pretrained")
    assert_no_exception(at)
    assert at.button(key="pair_norm").disabled and at.button(key="pair_activation").disabled
    assert at.button(key="pair_norm").help == "A's trained weights fit only their own architecture"
    assert not at.button(key="pair_head_off").disabled and not at.button(key="pair_random").disabled
