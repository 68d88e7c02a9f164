"""Widgets and drawing helpers every view shares.

A widget here carries a key its view declares (app.keys.Key), whose value app.controls.state has
already brought within what the widget offers (app.controls.state.selection): the widget opens on
it, keeps it on the other pages (persist_state="session"), and its return value is the choice."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def lean_template(fig: go.Figure) -> go.Figure:
    """The figure with its template's defaults for the trace types it draws only: the same look,
    without the ~7 kB of defaults for every other kind of trace sent on every rerun."""
    template = fig.layout.template
    used = {trace.type for trace in fig.data}
    data = {kind: template.data[kind] for kind in used if template.data[kind]}
    fig.layout.template = go.layout.Template(layout=template.layout, data=data)
    return fig


def show(fig, key: str) -> None:
    st.plotly_chart(lean_template(fig), width="stretch", config=PLOTLY_CONFIG, key=key)


def pick_index(label: str, count: int, key: str, where=st) -> int:
    """A slider over 0..count-1; with one choice, a line instead."""
    if count == 1:
        where.caption(f"{label}: 0 (the only one)")
        return 0
    return where.slider(label, 0, count - 1, key=key, persist_state="session")


def pick_sentence(sentences: list[str], chosen: int) -> int:
    """A sentence picker when the batch has several; the chosen index."""
    if len(sentences) == 1:
        return chosen
    return st.selectbox(
        "Sentence",
        range(len(sentences)),
        key="sentence",
        persist_state="session",
        format_func=lambda s: f"{s + 1}: {sentences[s][:60]}",
    )


def pick_token(label: str, tokens: list[str], key: str, where=st, help: str | None = None) -> int:
    """A real token of the sentence, by position ([CLS] = 0)."""
    return where.selectbox(
        label,
        range(len(tokens)),
        key=key,
        format_func=lambda i: f"{i}: {tokens[i]}",
        help=help,
        persist_state="session",
    )
