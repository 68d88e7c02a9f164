"""The Training view through AppTest: train, stop, compare pre and post.

In AppTest a run_every fragment does not fire by itself, so each `at.run()` trains one chunk
(about CHUNK_SECONDS) -- the same steps a browser's timer drives.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from encoder.training import TokenClassifier

MAX_CHUNKS = 60


def training_page() -> None:
    from app.training_view import render_training_view

    render_training_view()


@pytest.fixture
def at() -> AppTest:
    app = AppTest.from_function(training_page, default_timeout=90)
    app.run()
    assert not app.exception
    app.number_input(key="train_layers").set_value(1)
    app.selectbox(key="train_d_model").set_value(32)
    return app


def run_until_done(at: AppTest) -> None:
    for _ in range(MAX_CHUNKS):
        if not at.session_state["train_job"].running:
            break
        at.run()
    assert not at.session_state["train_job"].running
    assert not at.exception, at.exception


def values(array) -> list:
    """A plotly JSON array: a plain list, or a typed array {"dtype": ..., "bdata": base64}."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def chart_titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_train_shows_curves_and_the_trained_models_attention(at: AppTest) -> None:
    at.number_input(key="train_steps").set_value(20)
    at.button(key="train_start").click().run()
    run_until_done(at)
    result = at.session_state["train_result"]
    assert isinstance(result.model, TokenClassifier)
    assert len(result.history) == 20 and not result.stopped
    assert result.config.num_layers == 1 and result.config.d_model == 32
    titles = chart_titles(at)
    assert titles[0] == "Training curves"
    assert any(t.startswith("Attention of every head: 1 layer x 4 heads, 8 tokens") for t in titles)
    assert any(t.startswith("Layer 0, head") for t in titles)
    curves = json.loads(at.get("plotly_chart")[0].proto.spec)
    loss, accuracy = curves["data"][:2]
    assert values(loss["x"]) == values(accuracy["x"]) == list(range(1, 21))
    assert values(loss["y"]) == [round(row["loss"], 5) for row in result.history]
    assert at.button(key="train_stop").disabled is True
    assert not at.error


def test_stop_keeps_the_partly_trained_model(at: AppTest) -> None:
    at.number_input(key="train_steps").set_value(5000)
    at.button(key="train_start").click().run()
    assert at.session_state["train_job"].running
    assert at.button(key="train_stop").disabled is False
    at.button(key="train_stop").click().run()
    assert not at.exception
    result = at.session_state["train_result"]
    assert result.stopped and 1 <= len(result.history) < 5000
    assert isinstance(result.model, TokenClassifier)
    assert "Training curves" in chart_titles(at)


def test_pre_vs_post_trains_four_runs_on_one_chart_and_shows_init_gradients(
    at: AppTest,
) -> None:
    at.number_input(key="train_layers").set_value(2)
    at.number_input(key="train_steps").set_value(8)
    at.button(key="train_compare").click().run()
    run_until_done(at)
    job = at.session_state["train_job"]
    assert list(job.trainers) == [
        "pre-norm",
        "pre-norm + warmup 2",
        "post-norm",
        "post-norm + warmup 2",
    ]
    batches = [t.held_out_inputs for t in job.trainers.values()]
    assert all((b == batches[0]).all() for b in batches)  # same seed, same data
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    curves = specs[chart_titles(at).index("Training curves")]
    names = {trace["name"] for trace in curves["data"] if trace.get("name")}
    assert names == set(job.trainers)
    init = specs[chart_titles(at).index("Gradient norm of each block at initialisation")]
    assert [trace["name"] for trace in init["data"]] == ["pre-norm", "post-norm"]
    for trace, name in zip(init["data"], ["pre-norm", "post-norm"], strict=True):
        expected = [round(g, 5) for g in job.init_grad_norms[name]]
        assert values(trace["y"]) == pytest.approx(expected)  # one bar per layer
    assert len(at.dataframe[0].value) == 4  # results table: one row per run


def test_preset_fills_the_controls(at: AppTest) -> None:
    at.selectbox(key="train_preset").set_value("pre vs post: deep, high lr").run()
    assert at.number_input(key="train_layers").value == 12
    assert at.select_slider(key="train_lr").value == 1e-2
    assert at.selectbox(key="train_task").value == "sort"


def test_heads_only_offer_divisors_of_d_model(at: AppTest) -> None:
    at.selectbox(key="train_d_model").set_value(16).run()
    assert 16 % at.selectbox(key="train_heads").value == 0
    assert set(at.selectbox(key="train_heads").options) == {"1", "2", "4", "8", "16"}


def test_long_histories_are_thinned_but_keep_the_last_step() -> None:
    from app.charts.training import MAX_POINTS, thin, training_curves

    history = [{"step": i + 1, "loss": 2.0 / (i + 1), "accuracy": 0.5} for i in range(1000)]
    frame = thin(history)
    assert len(frame) <= MAX_POINTS + 1 and frame["step"].iloc[-1] == 1000
    fig = training_curves({"run": history}, 1000, chance_loss=math.log(10))
    low, high = fig.layout.yaxis.range  # log10 of the loss axis ends
    assert 10**low < 2.0 / 1000 and 10**high > math.log(10)
