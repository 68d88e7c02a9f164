"""The Activations view through AppTest: random ReLU and GELU models (pre- and post-norm) and
MiniLM, each number checked against a trace computed here, apart from the app."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import torch

from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.run_cache import run_for
from app.runs import Runs
from app.sources import built_in
from app.views import export as export_view
from encoder import EncoderConfig, TransformerEncoder, hooks
from encoder.inspect.activations import OUTLIER_FACTOR, RESIDUAL_MAX_DIMS
from encoder.io.tokenize import load_tokenizer, tokenize
from tests.app.helpers import (
    array,
    assert_no_exception,
    figure,
    go,
    module_data,
    open_page,
    open_tab,
)
from tests.shared import SENTENCE


def default_random_config(activation: str, norm: str) -> EncoderConfig:
    """The page's default architecture (4 layers, d_model 256, d_ff 1024) with these two set."""
    return EncoderConfig(
        vocab_size=load_tokenizer().get_vocab_size(),
        d_model=256,
        num_heads=4,
        num_layers=4,
        d_ff=1024,
        activation=activation,
        norm_first=norm == "pre",
        seed=0,
    )


def hand_trace(model: TransformerEncoder, text: str = SENTENCE):
    """The trace of one sentence and its real-token count, from the model itself."""
    batch = tokenize([text], load_tokenizer(), model.cfg.max_len)
    with torch.no_grad():
        trace = model.trace(batch.input_ids, batch.attention_mask)
    return trace, len(batch.tokens[0])


def open_section(at, label: str):
    """Open one of the view's tabs."""
    return open_tab(at, "act_section", label)


def chart_keys(at) -> set[str]:
    """The keys of the charts on the page: Plotly's, and the figures our ES modules draw."""
    charts = [*at.get("plotly_chart"), *at.get("bidi_component")]
    return {chart.proto.id.split("-")[-1] for chart in charts}


def shown_table(at, columns: set[str]) -> pd.DataFrame:
    for frame in at.dataframe:
        if columns <= set(frame.value.columns):
            return frame.value
    raise AssertionError(f"no table with columns {columns}")


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_random_model_page_shows_the_traces_numbers(activation, norm):
    at = open_page(view="Activations", activation=activation, norm=norm)
    assert_no_exception(at)
    assert not at.error
    model = TransformerEncoder(default_random_config(activation, norm)).eval()
    trace, n = hand_trace(model)
    table = shown_table(at, {"share_zero", "share_negative"})
    assert table["layer"].tolist() == [0, 1, 2, 3]
    for layer in range(4):
        post = trace[hooks.block(layer).mlp.post][0, :n].numpy()
        pre = trace[hooks.block(layer).mlp.pre][0, :n].numpy()
        assert table["share_zero"][layer] == pytest.approx((post == 0).mean())
        assert table["share_negative"][layer] == pytest.approx((pre < 0).mean())
        assert table["max"][layer] == pytest.approx(post.max(), rel=1e-5)
    if activation == "relu":  # ReLU zeroes every negative value: about half of them
        assert (table["share_zero"] > 0.4).all()
    else:  # GELU bends them instead
        assert (table["share_zero"] < 0.001).all()

    histogram = module_data(at, "act_histogram")
    assert sum(histogram["counts"]) == n * 1024  # every value of block 0, the default layer
    pre = trace[hooks.block(0).mlp.pre][0, :n].numpy()
    low, high = np.quantile(pre, [0.001, 0.999])  # the axis leaves out 0.1 % at each end
    assert histogram["edges"][0] == pytest.approx(min(low, 0.0), abs=1e-4)
    assert histogram["edges"][-1] == pytest.approx(max(high, 0.0), abs=1e-4)
    name = {"relu": "ReLU", "gelu": "GELU"}[activation]
    assert histogram["name"] == name and histogram["labels"]["curve"].startswith(f"{name}(x)")
    assert any(i.value.startswith(f"{name}(x)") for i in at.info)
    assert not {"act_residual", "act_cosine", "act_pca"} & chart_keys(at)  # closed tabs

    open_section(at, "The residual stream")
    assert_no_exception(at)
    assert "act_histogram" not in chart_keys(at)
    residual = figure(at, "act_residual")["data"]
    assert len(residual[0]["x"]) == RESIDUAL_MAX_DIMS  # 256 wide: the 128 largest drawn
    resid = trace.hidden_states[1][0, :n].numpy()  # after block 0, the default layer
    np.testing.assert_allclose(array(residual[1]["x"]), np.linalg.norm(resid, axis=1), rtol=1e-3)

    unit = resid / np.linalg.norm(resid, axis=1, keepdims=True)
    open_section(at, "Token geometry across depth")
    cosine = figure(at, "act_cosine")["data"][0]
    np.testing.assert_allclose(array(cosine["z"]), unit @ unit.T, atol=2e-4)
    pca = figure(at, "act_pca")
    states = np.stack([h[0, :n].numpy() for h in trace.hidden_states]).reshape(5 * n, -1)
    centred = states - states.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    pc1 = centred @ vt[0]  # every token at every depth, up to sign
    drawn = array(pca["data"][1]["x"])
    np.testing.assert_allclose(drawn * np.sign(drawn[0] * pc1[0]), pc1, atol=2e-3)
    share = singular[0] ** 2 / (singular**2).sum()
    assert f"PC1 ({share:.1%} of the variance)" == pca["layout"]["xaxis"]["title"]["text"]


def test_minilm_page_names_its_outlier_dimensions(minilm):
    at = open_section(open_page(view="Activations", source="pretrained"), "The residual stream")
    assert_no_exception(at)
    trace, n = hand_trace(minilm.model)
    size = np.stack([np.abs(h[0, :n].numpy()).mean(axis=0) for h in trace.hidden_states])
    ratio = size / np.median(size, axis=1, keepdims=True)  # [depth, d]
    depth, dim = np.nonzero(ratio > OUTLIER_FACTOR)
    assert len(depth) > 0  # MiniLM has outlier dimensions
    shown = shown_table(at, {"dimension", "times_median"})
    assert sorted(zip(shown["depth"], shown["dimension"], strict=True)) == sorted(
        zip(depth.tolist(), dim.tolist(), strict=True)
    )
    for row in shown.itertuples():
        assert row.times_median == pytest.approx(ratio[row.depth, row.dimension], rel=1e-4)

    at.slider(key="act_layer").set_value(4).run()  # the stream after block 4: depth 5
    assert_no_exception(at)
    note = next(i.value for i in at.info if i.value.startswith("A dimension is an outlier"))
    flagged = dim[depth == 5]
    assert len(flagged) and all(f"dimension {k} (" in note for k in flagged)
    annotations = figure(at, "act_residual")["layout"]["annotations"]
    columns = [int(x) for x in figure(at, "act_residual")["data"][0]["x"]]
    named = {a["text"].split(":")[0]: a["x"] for a in annotations if a["text"].startswith("dim ")}
    for k in flagged:  # named above their own columns
        assert columns[named[f"dim {k}"]] == k
    title = figure(at, "act_residual")["layout"]["title"]["text"]
    assert f"{RESIDUAL_MAX_DIMS} of 384 dimensions" in title

    open_section(at, "Token geometry across depth")
    states = np.stack([h[0, :n].numpy() for h in trace.hidden_states])
    unit = states / np.linalg.norm(states, axis=-1, keepdims=True)
    cosines = unit @ unit.transpose(0, 2, 1)
    means = cosines[:, ~np.eye(n, dtype=bool)].mean(axis=1)
    line = figure(at, "act_mean_cosine")["data"][0]
    np.testing.assert_allclose(array(line["y"]), means, atol=1e-4)


def test_layer_and_token_survive_a_visit_to_another_view_and_stay_in_range():
    at = open_page(view="Activations", text="One two three four five six.\nShort.")
    at.slider(key="act_layer").set_value(3).run()
    at.selectbox(key="act_token").set_value(6).run()
    assert "'six' (6) in block 3" in module_data(at, "act_top_units")["title"]
    go(at, "Shapes")
    go(at, "Activations")
    assert at.slider(key="act_layer").value == 3 and at.selectbox(key="act_token").value == 6
    at.selectbox(key="sentence").set_value(1).run()  # 3 tokens: token 6 no longer exists
    assert_no_exception(at)
    assert at.selectbox(key="act_token").value == 1
    assert "'short' (1)" in module_data(at, "act_top_units")["title"]


def test_export_csvs_hold_the_summary_tables():
    state = dict(
        DEFAULTS,
        d_model=32,
        num_heads=4,
        num_layers=2,
        d_ff=64,
        activation="relu",
        norm="post",
        positional="sinusoidal",
        norm_type="layernorm",
        seed=0,
    )
    run = run_for(
        cfg := random_config(state),
        built_in("random", cfg),
        "cpu",
        ["A cat.", "A longer one here."],
        None,
    )
    files = export_view.table_files(Runs(run), 1)
    assert [name for _, name, _, _ in files] == [
        "head_metrics_s1.csv",
        "residual_stream_s1.csv",
        "feed_forward_s1.csv",
        "outlier_dimensions_s1.csv",
        "mean_cosine_s1.csv",
        "pca_paths_s1.csv",
    ]
    summary = run.activation_summary(1)
    tables = {name: pd.read_csv(io.BytesIO(build())) for _, name, _, build in files}
    pd.testing.assert_frame_equal(tables["feed_forward_s1.csv"], summary.feed_forward, rtol=1e-6)
    saved = tables["mean_cosine_s1.csv"]
    pd.testing.assert_frame_equal(saved, summary.mean_cosine, rtol=1e-6, check_dtype=False)
    pca = tables["pca_paths_s1.csv"]
    assert pca["token"].tolist()[: run.n_valid(1)] == run.tokens[1]
    np.testing.assert_allclose(pca["pc1"], summary.pca.coords[:, :, 0].flatten(), rtol=1e-6)


def test_a_gated_rope_models_formulas_and_notes_are_its_own():
    modern = dict(positional="rope", activation="geglu", window="4", global_every="3",
                  bias="off", norm_bias="off", shared="shared")  # fmt: skip
    at = open_page(view="Shapes", **modern)
    assert_no_exception(at)
    formulas = [latex.value for latex in at.latex]
    assert any(r"\mathrm{RoPE}(Q_i)\,\mathrm{RoPE}(K_i)^\top" in f and "+ M" in f for f in formulas)
    ffn = next(f for f in formulas if r"\mathrm{FFN}(x) =" in f)
    assert r"\mathrm{GELU}(x W_{\mathrm{in}}) \odot (x W_{\mathrm{gate}})" in ffn
    assert "b_" not in ffn  # no biases
    assert not any(r"+ \beta" in f for f in formulas)  # no norm bias
    said = " ".join(c.value for c in at.caption)
    assert "M is −∞ where a key is more than 2 positions from its query (window 4)" in said
    assert "in layers 1, 2; the other layers are global" in said
    assert "Every one of the 4 blocks applies the same weights" in said
    at = open_page(view="Activations", act_layer="1", **modern)
    assert_no_exception(at)
    said = " ".join(c.value for c in at.caption)
    assert "linear1 gives 2 × 1024 numbers, x = W_in·h (the pre-activation) and the gate" in said
    assert "GeGLU = GELU(x)·g" in said
    note = " ".join(i.value for i in at.info)
    assert "GeGLU is gated" in note and "In block 1" in note
    title = module_data(at, "act_histogram")["title"]
    assert "units before GELU (the input half of GeGLU, before its gate)" in title
