"""The Attention view's sections below the explorer compute and send only while open: closed,
the page holds the explorer and no chart or table of theirs; opened, each draws its numbers (here
compare mode's divergence: the share of each head's attention that moved, against B − A of two
traces computed in the test)."""

from __future__ import annotations

import numpy as np

from app.views.attention import DIVERGENCE, METRICS, READINGS
from encoder.io.tokenize import load_tokenizer, tokenize
from tests.app.helpers import array, assert_no_exception, figure, heatmaps, open_page, page_model
from tests.shared import SENTENCE

SIZES = {"d_model": 64, "num_heads": 4, "num_layers": 3, "d_ff": 128}  # small: a quick page


def test_closed_sections_send_nothing_and_an_opened_one_draws_its_numbers() -> None:
    at = open_page(
        view="Attention", compare="1", b_norm="post", **{k: str(v) for k, v in SIZES.items()}
    )
    assert_no_exception(at)
    labels = [expander.label for expander in at.expander]
    assert [METRICS[1], DIVERGENCE[1], READINGS[1]] == [
        label for label in labels if label in (METRICS[1], DIVERGENCE[1], READINGS[1])
    ]
    assert not at.get("plotly_chart") and not at.dataframe
    assert len(at.get("bidi_component")) == 1  # the explorer, drawn all the same
    at.session_state[DIVERGENCE[0]] = True
    at.run()
    assert_no_exception(at)
    assert not at.dataframe  # the metrics' section stays closed
    batch = tokenize([SENTENCE], load_tokenizer(), 512)
    a, b = (
        page_model(**SIZES, **norm).trace(batch.input_ids, batch.attention_mask)
        for norm in ({}, {"norm": "post"})
    )
    expected = 0.5 * (b.attention - a.attention)[:, 0].abs().sum(-1).mean(-1)  # [layer, head]
    moved = array(heatmaps(figure(at, "divergence"))[0]["z"]).astype(float)
    np.testing.assert_allclose(moved, expected.numpy(), atol=1e-4)
