"""The naive way to draw every head: one `st.plotly_chart` per head (the benchmark's baseline).

`streamlit run tests/bench/naive_page.py`: the same run as the app at 6 layers x 8 heads,
d_model 512 (the same cached `app.run_cache.run_for`), text in the same `text` widget, but 48
figures of raw float32 weights with token tick labels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # `app` and `encoder` importable; streamlit runs this file on every rerun
    sys.path.insert(0, ROOT)

from app.controls.sidebar import random_config  # noqa: E402
from app.run_cache import run_for, split_lines  # noqa: E402
from app.sources import built_in  # noqa: E402
from tests.e2e.harness import BENCH_SETUP  # noqa: E402
from tests.shared import SENTENCE  # noqa: E402


def head_figure(pattern, tokens: list[str], title: str) -> go.Figure:
    """One head's [query, key] weights, every token on both axes."""
    positions = list(range(len(tokens)))
    fig = go.Figure(go.Heatmap(z=pattern, zmin=0, zmax=1, colorscale="Viridis"))
    axis = dict(tickvals=positions, ticktext=tokens)
    fig.update_layout(title=title, height=320, xaxis=axis, yaxis=dict(axis, autorange="reversed"))
    return fig


def main() -> None:
    st.set_page_config(page_title="Naive attention page", layout="wide")
    st.session_state.setdefault("text", st.query_params.get("text", SENTENCE))
    text = st.sidebar.text_area("Sentence", key="text")
    sentences, _ = split_lines(text)
    if not sentences:
        st.info("Type a sentence.")
        return
    cfg = random_config({**BENCH_SETUP, "norm": "pre", "activation": "gelu", "seed": 0,
                         "positional": "sinusoidal", "norm_type": "layernorm"})  # fmt: skip
    run = run_for(cfg, built_in("random", cfg), "cpu", sentences[:1])
    tokens = run.tokens[0]
    st.title(f"Every head, one chart each: {cfg.num_layers} x {cfg.num_heads}")
    for layer in range(cfg.num_layers):
        for head, column in enumerate(st.columns(cfg.num_heads)):
            with column:
                figure = head_figure(run.attention[layer, 0, head], tokens, f"L{layer} H{head}")
                st.plotly_chart(figure, key=f"head_{layer}_{head}")


main()
