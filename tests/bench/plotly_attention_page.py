"""The reference page: the app's own page, its Attention view drawing the attention with the Plotly
figures it had before the browser-side explorer (commit 80d54bb, app/views/attention.py).

`streamlit run tests/bench/plotly_attention_page.py`: app/main.py exactly (the same runs, sidebar,
metrics tables, readings), but where the view draws the explorer it draws, as it did, every head's
mosaic per setup (and B − A's in compare mode) and one head in detail in a fragment (layer and head
sliders, the head's heatmap per setup, B − A's). tests/bench/page_speed.py measures it beside the
app in one run: what the explorer saves is the difference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # `app` importable; streamlit runs this file again on every rerun
    sys.path.insert(0, ROOT)

from app.charts.ablation import attention_difference, difference_head  # noqa: E402
from app.charts.attention import OVERVIEW_MAX_TOKENS  # noqa: E402
from app.heap import freeze_startup_heap  # noqa: E402
from app.keys import Selection  # noqa: E402
from app.main import main  # noqa: E402
from app.page.figures import head_figure, overview_figure  # noqa: E402
from app.page.layout import missing, show_for, side_by_side  # noqa: E402
from app.page.widgets import pick_index, show  # noqa: E402
from app.runs import Runs  # noqa: E402
from app.views import attention  # noqa: E402


def plotly_attention(runs: Runs, sentence: int, chosen: Selection, stretch: bool, follow) -> None:
    """What app.views.attention drew before the explorer: every head's mosaic, then one head."""
    for name, setup in side_by_side(runs):
        n = setup.n_valid(sentence)
        blocks = setup.attention.shape[-1] > OVERVIEW_MAX_TOKENS
        st.caption(
            f"Each tile is one head's {n} x {n} attention matrix"
            + (" (drawn in blocks)" if blocks else "")
            + " (query rows, key columns; brighter = more weight). Padding is greyed out."
        )
        show_for(overview_figure(setup, sentence, stretch), "overview", name)
    comparison = runs.comparison
    if comparison is not None and comparison.attention_difference is not None:
        show(
            attention_difference(
                comparison.attention_difference[:, sentence],
                runs.a.n_valid(sentence),
                layers=list(range(runs.a.cfg.num_layers)),
                title="Attention of every head: B − A",
            ),
            "overview_difference",
        )
    st.subheader("One head in detail")
    st.fragment(_head_detail)(runs, sentence, stretch)


def _head_detail(runs: Runs, sentence: int, stretch: bool) -> None:
    """Pick a layer and head: this part reruns alone (a fragment), not the whole page."""
    setups = runs.named()
    left, right = st.columns(2)
    layer = pick_index("Layer", max(r.cfg.num_layers for _, r in setups), "layer", left)
    head = pick_index("Head", max(r.cfg.num_heads for _, r in setups), "head", right)
    for name, run in side_by_side(runs):
        label = name or "A"
        if missing(label, "layer", layer, run.cfg.num_layers):
            continue
        if missing(label, "head", head, run.cfg.num_heads):
            continue
        show_for(head_figure(run, sentence, layer, head, stretch), "head_detail", name)
    comparison = runs.comparison
    if comparison is not None and comparison.attention_difference is not None:
        show(
            difference_head(
                comparison.attention_difference[layer, sentence, head],
                runs.a.padded_tokens[sentence],
                runs.a.n_valid(sentence),
                title=f"Layer {layer}, head {head}: B − A",
            ),
            "head_difference",
        )


if __name__ == "__main__":
    freeze_startup_heap()  # as the server at its start (app.heap.frozen_at_start), but in a run
    attention._explorer = plotly_attention  # the view looks it up on every draw
    main()
