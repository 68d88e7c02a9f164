"""Widgets and drawing helpers every view shares."""

from __future__ import annotations

import streamlit as st

from app.runs import Run

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def show(fig, key: str) -> None:
    st.plotly_chart(fig, width="stretch", config=PLOTLY_CONFIG, key=key)


def pick_index(label: str, count: int, key: str, where=st) -> int:
    """A slider over 0..count-1 (kept in range when the model shrinks); with one choice, a line."""
    value = min(int(st.session_state.get(key, 0)), count - 1)
    st.session_state[key] = value
    if count == 1:
        where.caption(f"{label}: 0 (the only one)")
        return 0
    return where.slider(label, 0, count - 1, key=key)


def pick_sentence(run: Run) -> int:
    """A sentence picker when the batch has several; the chosen index."""
    count = len(run.sentences)
    if count == 1:
        return 0
    st.session_state.setdefault("sentence", 0)
    if st.session_state["sentence"] >= count:
        st.session_state["sentence"] = 0
    return st.selectbox(
        "Sentence",
        range(count),
        key="sentence",
        format_func=lambda s: f"{s + 1}: {run.sentences[s][:60]}",
    )
