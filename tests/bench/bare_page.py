"""The bare page: what Streamlit itself costs to draw two heatmaps and a table, with no app.

`streamlit run tests/bench/bare_page.py`: a text box in the sidebar (key `text`, as the app's),
then a mosaic heatmap (8 heads side by side), one head's heatmap and a table of 32 rows, all from
numbers made once per server (precomputed, random), labelled with the text's words. No model, no
views, no sidebar controls: tests/bench/page_speed.py measures every view's first visit and its
rerun after a text change against this page's, in the same run.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

TOKENS = 32  # rows and columns of each head's matrix
HEADS = 8


@st.cache_resource
def numbers() -> np.ndarray:
    """[heads, T, T] rows that sum to 1, made once per server."""
    rng = np.random.default_rng(0)
    weights = rng.random((HEADS, TOKENS, TOKENS))  # [H, T, T]
    return weights / weights.sum(axis=-1, keepdims=True)


def labels_of(text: str) -> list[str]:
    """TOKENS labels: the text's words, cycled, each with its position."""
    words = text.split() or ["·"]
    return [f"{i} {words[i % len(words)]}" for i in range(TOKENS)]


def heatmap(z: np.ndarray, labels: list[str] | None, title: str) -> go.Figure:
    axis = dict(tickvals=list(range(len(labels))), ticktext=labels) if labels else {}
    fig = go.Figure(go.Heatmap(z=z, zmin=0, zmax=1, colorscale="Viridis"))
    fig.update_layout(title=title, height=420, xaxis=axis, yaxis=dict(axis, autorange="reversed"))
    return fig


def main() -> None:
    start = time.perf_counter()
    st.set_page_config(page_title="Bare page", layout="wide")
    text = st.sidebar.text_area("Text", value=st.query_params.get("text", "a b c"), key="text")
    st.title("Bare page")
    status = st.empty()
    weights = numbers()
    labels = labels_of(text)
    mosaic = np.concatenate(list(weights), axis=1)  # [T, H*T]: the heads side by side
    st.plotly_chart(heatmap(mosaic, None, f"{HEADS} heads, {TOKENS} tokens"), key="bare_mosaic")
    st.plotly_chart(heatmap(weights[0], labels, "Head 0"), key="bare_head")
    table = pd.DataFrame({"token": labels, "max weight": weights[0].max(axis=1)})
    st.dataframe(table, hide_index=True)
    status.caption(f"page {(time.perf_counter() - start) * 1000:.0f} ms")


main()
