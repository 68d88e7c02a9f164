"""The Attention view's two more readings in AppTest: what a head moves, and rollout."""

from __future__ import annotations

import numpy as np

from tests.app.helpers import array, assert_no_exception, figure, heatmaps, open_page


def test_minilm_attention_shows_what_heads_move_and_the_rollout():
    at = open_page(view="Attention", source="pretrained", layer="3", head="4")
    assert_no_exception(at)
    said = " ".join(m.value for m in at.markdown)
    assert "of the attention weight goes to [CLS], [SEP] and punctuation" in said
    assert "that share drops to" in said
    assert "After the last layer, “it” (position 10) draws most on" in said
    weights = array(heatmaps(figure(at, "moves_weights"))[0]["z"]).astype(float)
    moved = array(heatmaps(figure(at, "moves_norms"))[0]["z"]).astype(float)
    assert weights.shape == moved.shape
    # the same zeros (padding aside, no weight means nothing moved) and a different ranking
    assert ((weights == 0) == (moved == 0)).all()
    assert weights[:, 0].mean() > 0.5 and moved[:, 0].mean() < moved.mean(axis=0).max()
    lines = figure(at, "rollout_lines")["data"]
    assert len(lines) == 6
    assert np.isclose(array(lines[-1]["y"]).sum(), 1.0, atol=1e-4)  # a rollout row is a share of 1
