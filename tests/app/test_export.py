"""Downloads: the bytes a teacher saves hold exactly the run's numbers."""

import io
import json
import re

import numpy as np
import pandas as pd
import pytest

from app import downloads
from app.controls.sidebar import random_config
from app.keys import Selection
from app.run_cache import run_for
from app.sources import built_in

SENTENCES = ["The cat sat on the mat.", "A longer second sentence pads the first one."]


@pytest.fixture(scope="module")
def run():
    state = dict(
        d_model=32,
        num_heads=4,
        num_layers=2,
        d_ff=64,
        activation="gelu",
        norm="pre",
        positional="sinusoidal",
        norm_type="layernorm",
        seed=0,
    )
    return run_for(
        cfg := random_config(state), built_in("random", cfg), "cpu", SENTENCES, names=None
    )


def test_head_csv_is_the_heads_attention_over_real_tokens(run):
    frame = pd.read_csv(io.BytesIO(downloads.head_csv(run, 0, 1, 2)), index_col=0)
    n = run.n_valid(0)
    assert frame.shape == (n, n)
    assert list(frame.columns) == [f"{i}:{t}" for i, t in enumerate(run.tokens[0])]
    np.testing.assert_allclose(frame.to_numpy(), run.attention[1, 0, 2, :n, :n], rtol=1e-6)


def test_npz_holds_the_whole_runs_attention_and_statistics(run):
    saved = np.load(io.BytesIO(downloads.run_npz(run)), allow_pickle=False)
    np.testing.assert_array_equal(saved["attention"], run.attention)
    np.testing.assert_array_equal(saved["attention_mask"], run.attention_mask)
    assert saved["tokens"].tolist() == run.padded_tokens
    stats = run.layernorm_stats
    np.testing.assert_array_equal(saved["layernorm_stats.in_std"], stats["in_std"])
    assert saved["layernorm_stats.norm"].tolist() == stats["norm"].tolist()
    np.testing.assert_array_equal(saved["residual_norms.l2_norm"], run.residual_norms["l2_norm"])
    assert json.loads(str(saved["config"]))["d_model"] == 32


def test_json_trims_each_sentence_to_its_tokens(run):
    document = json.loads(downloads.run_json(run))
    first = document["sentences"][0]
    n = run.n_valid(0)
    assert first["tokens"] == run.tokens[0]
    attention = np.array(first["attention"])  # [layer, head, query, key]
    assert attention.shape == (2, 4, n, n)
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)
    assert len(document["layernorm_stats"]) == len(run.layernorm_stats)
    assert document["config"]["num_heads"] == 4


def test_a_figure_a_module_draws_downloads_as_that_modules_offline_page(run):
    """Export's block diagram and norms per token are drawn by the views' modules
    (block_diagram.js, token_lines.js), from the same data, in a page that needs no network."""
    from app.page.figures import block_figure, layernorm_figure, told_all
    from app.views.export import _figures

    chosen = Selection({"layer": 0, "head": 0, "ln_layer": 1, "stretch": False})
    files = {name: build for _, name, _, build in _figures("", run, 1, chosen)}
    expected = {
        "block_diagram.html": block_figure(run),
        "layernorm_l1.html": layernorm_figure(run, 1, 1),
    }
    for name, figure in expected.items():
        page = files[name]().decode("utf-8")
        (data,) = re.findall(r'data-module="([a-z_]+\.js)">(.*?)</script>', page)
        assert data[0] == figure.module
        assert json.loads(data[1]) == told_all(figure.data)
        assert "Plotly.newPlot" not in page and " src=" not in page
