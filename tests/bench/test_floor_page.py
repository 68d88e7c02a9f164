"""The floor page is the app's page drawn from a stand-in run: the same views and elements, no
model and no forward pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.sources import built_in
from encoder.core import block
from encoder.core.model import TransformerEncoder
from tests.bench import stand_in

ROOT = Path(__file__).resolve().parents[2]
TWO = "The cat sat on the mat.\nA longer second sentence pads the first one here."
VIEWS = ("Tokens", "Attention", "Attention steps", "LayerNorm", "Activations", "Shapes", "Export")


def elements(at: AppTest) -> list[str]:
    """The main area's elements in order: their kinds, and for charts their keys."""
    found = []
    for node in at.main:
        kind = node.type
        if kind == "plotly_chart":
            kind += f" {node.proto.id.split('-')[-1] if node.proto.id else ''}"
        found.append(kind)
    return found


def open_page(script: str, view: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=120)
    at.query_params.update(view=view, text=TWO, d_model="64", num_heads="4", num_layers="2")
    at.query_params.update(timing="1")  # the status line, off by default, read below
    return at.run()


def refuse(*args, **kwargs):
    raise AssertionError("the floor page built a model")


@pytest.mark.parametrize("view", VIEWS)
def test_the_floor_draws_every_view_as_the_app_does_without_a_model(view, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(TransformerEncoder, "__init__", refuse)  # any model built fails the test
        floor = open_page("tests/bench/floor_page.py", view)
    assert not floor.exception and not floor.error, (floor.exception, floor.error)
    status = [c.value for c in floor.main.caption if c.value.startswith("Device ")]
    assert len(status) == 1 and "forward pass 0 ms" in status[0]
    floor_elements = elements(floor)
    assert len(floor_elements) > 3
    app = open_page("app/main.py", view)
    assert not app.exception
    assert elements(app) == floor_elements


def test_a_stand_in_run_has_the_shapes_of_a_real_one_and_softmax_rows():
    cfg = random_config(dict(DEFAULTS, d_model=64, num_heads=4, num_layers=2, d_ff=128))
    run = stand_in.floor_run(cfg, built_in("random", cfg), "cpu", TWO.splitlines(), None)
    B, T = run.input_ids.shape
    assert B == 2 and run.tokens[0][0] == "[CLS]"
    expected = block.shapes(cfg, B, T)
    assert {name: tuple(t.shape) for name, t in run.trace.tensors.items()} == expected
    rows = run.attention.sum(axis=-1)  # [L, B, H, T]
    assert np.allclose(rows, 1.0, atol=1e-5)
    short = run.n_valid(0)
    assert short < T and np.all(run.attention[:, 0, :, :, short:] == 0)  # padded keys
    assert run.head_metrics(0)["entropy"].between(0, np.log(short) + 1e-6).all()
    with pytest.raises(ValueError, match="no model"):
        run.heads_off(((0, 1),))
