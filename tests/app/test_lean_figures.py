"""Figures are built without plotly.py's validation (app.charts.common.new_figure): every chart
each view draws must be the same JSON as with validation on, which would coerce shorthands (a
string title, a scalar where a list belongs) that plotly.js does not read."""

from __future__ import annotations

import json
from collections.abc import Callable

import plotly.io
import pytest
from streamlit.testing.v1 import AppTest

from app.charts import common, cost, training
from encoder import EncoderConfig
from encoder.measure.op_times import flops_by_operation
from tests.app.helpers import (
    EVERY_STEP_OPEN,
    STREAM_TAB,
    assert_no_exception,
    open_page,
    report_of,
)
from tests.shared import SENTENCE

TWO = f"{SENTENCE}\nIt was late."
PAGES = {
    "tokens": {"view": "Tokens", "text": TWO},
    "attention, ablation": {"view": "Attention", "source": "pretrained", "ablate": "3.1"},
    "steps": {"view": "Attention steps", "text": TWO, "norm": "post", "step_query": "3"},
    # the lesson's step 8: the residual stream's size with plotly (its norms: token_lines.js)
    "lesson, norms": {"view": "Lesson", "lesson": "8", "norm_type": "rmsnorm"},
    "layernorm, stream": {"view": "LayerNorm", "norm_type": "rmsnorm"},
    # the view's first tab draws with ES modules (as the lesson's step 9 does)
    "activations relu, stream": {"view": "Activations", "activation": "relu", "text": TWO},
    "activations relu, geometry": {"view": "Activations", "activation": "relu", "text": TWO},
}


def opened(states: dict) -> Callable[[AppTest], object]:
    """A page with these session states set, run again."""

    def open_them(at: AppTest) -> AppTest:
        for key, value in states.items():
            at.session_state[key] = value
        return at.run()

    return open_them


OPENED = {  # what a reader opens on a page (its steps, a tab, a question's reveal): closed, they
    # draw nothing
    "steps": opened(EVERY_STEP_OPEN),
    "layernorm, stream": opened(dict([STREAM_TAB])),
    "activations relu, stream": opened({"act_section": "The residual stream"}),
    "activations relu, geometry": opened({"act_section": "Token geometry across depth"}),
    "lesson, norms": lambda at: at.button(key="predict_skip").click().run(),
}


def chart_specs(page: str, validate: bool, monkeypatch) -> list[dict]:
    monkeypatch.setattr(common, "VALIDATE", validate)
    at = open_page(**PAGES[page])
    if page in OPENED:
        OPENED[page](at)
    assert_no_exception(at)
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


@pytest.mark.parametrize("page", PAGES)
def test_every_chart_is_the_same_with_validation_on(page, monkeypatch):
    lean = chart_specs(page, False, monkeypatch)
    validated = chart_specs(page, True, monkeypatch)
    assert lean, "the page drew no chart"
    assert lean == validated


def test_training_charts_are_the_same_with_validation_on(monkeypatch):
    history = [
        {"step": i + 1, "loss": 2.0 / (i + 1), "accuracy": i / 40, "grad_norm_layer_0": 0.5,
         "grad_norm_layer_1": 0.25 + i / 100}
        for i in range(40)
    ]  # fmt: skip

    def build() -> list[dict]:
        figures = [
            training.training_curves(
                {"pre": history, "post": history[:20]}, 60, chance_loss=2.3, dashed=("post",)
            ),
            training.layer_grad_norms_chart({"pre": [0.5, 0.4], "post": [0.6, 0.7]}, title="t"),
            training.grad_norm_heatmap(history),
        ]
        return [json.loads(plotly.io.to_json(fig, validate=False)) for fig in figures]

    lean = build()
    monkeypatch.setattr(common, "VALIDATE", True)
    assert lean == build()


def test_the_cost_views_bar_charts_are_the_same_with_validation_on(monkeypatch):
    """The FLOPs per operation (drawn on every run of the view) and the measured time per
    operation, one of its operations' time split from a fused kernel (hatched)."""
    flops = flops_by_operation(EncoderConfig(d_model=32, num_heads=4, num_layers=2, d_ff=64), 1, 9)
    linear1, softmax = report_of()["by_operation"]
    times = [linear1, softmax | {"measured": False}]

    def build() -> list[dict]:
        figures = [cost.flop_chart(flops), cost.operation_time_chart(times)]
        return [json.loads(plotly.io.to_json(fig, validate=False)) for fig in figures]

    lean = build()
    monkeypatch.setattr(common, "VALIDATE", True)
    assert lean == build()
