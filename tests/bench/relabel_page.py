"""Streamlit alone relabelling its elements: what a language switch costs the browser, no app.

`streamlit run tests/bench/relabel_page.py` with `?kind=K&count=N`: N elements of one kind
(KINDS; NAVIGATION: N pages; TABLE_ROWS: one table of N rows) whose every text carries the
sidebar's "Language" choice (EN or ES), a text box in the sidebar (key `text`, as the app's), and
one line that says the text and the language. Changing the text changes that line alone (a
rerun); choosing the other language changes every element's text (a switch).
tests/bench/relabel_floor.py times both in headless Chromium.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

OPTIONS = ("one", "two")
ROWS = 10  # a dataframe's rows


def _frame(tag: str, rows: int) -> pd.DataFrame:
    """`rows` rows of a name, a shape and a number, under headers in language `tag`."""
    return pd.DataFrame({
        f"{tag} operation": [f"{tag} step {r}" for r in range(rows)],
        f"{tag} shape": [f"[1, {r}, 384]" for r in range(rows)],
        f"{tag} value": [r / 7 for r in range(rows)],
    })  # fmt: skip


def _plotly(tag: str, i: int) -> None:
    figure = go.Figure(go.Bar(x=[f"{tag} {k}" for k in range(6)], y=list(range(6))))
    figure.update_layout(title=f"{tag} chart {i}", height=300, xaxis_title=f"{tag} axis")
    st.plotly_chart(figure, key=f"e{i}")


def _selectbox(tag: str, i: int) -> None:
    st.selectbox(f"{tag} choice {i}", OPTIONS, key=f"e{i}", format_func=lambda o: f"{tag} {o}")


def _radio(tag: str, i: int) -> None:
    st.radio(f"{tag} choice {i}", OPTIONS, key=f"e{i}", horizontal=True)


KINDS: dict[str, Callable[[str, int], object]] = {
    "markdown": lambda tag, i: st.markdown(f"{tag}: sentence {i}, with **a bold word** in it."),
    "caption": lambda tag, i: st.caption(f"{tag}: sentence {i}, a caption under a figure."),
    "html": lambda tag, i: st.html(f"<p>{tag}: sentence {i}, with <b>a bold word</b> in it.</p>"),
    "text": lambda tag, i: st.text(f"{tag}: sentence {i}, as plain text."),
    "header": lambda tag, i: st.header(f"{tag} header {i}"),
    "selectbox": _selectbox,
    "radio": _radio,
    "toggle": lambda tag, i: st.toggle(f"{tag} switch {i}", key=f"e{i}"),
    "text_input": lambda tag, i: st.text_input(f"{tag} answer {i}", key=f"e{i}"),
    "button": lambda tag, i: st.button(f"{tag} button {i}", key=f"e{i}"),
    "number_input": lambda tag, i: st.number_input(f"{tag} number {i}", key=f"e{i}"),
    "metric": lambda tag, i: st.metric(f"{tag} metric {i}", f"{i} {tag}"),
    "alert": lambda tag, i: st.info(f"{tag}: a note about the run, number {i}."),
    "dataframe": lambda tag, i: st.dataframe(_frame(tag, ROWS), hide_index=True, key=f"e{i}"),
    "plotly": _plotly,
}
TABLE_ROWS = "table_rows"  # one st.table of N rows (st.table draws every cell as Markdown)
NAVIGATION = "navigation"  # the top navigation's links: pages whose titles carry the language


def main() -> None:
    st.set_page_config(page_title="Relabel page", layout="wide")
    kind = st.query_params.get("kind", "markdown")
    count = int(st.query_params.get("count", "0"))
    tag = st.sidebar.radio("Language", ("EN", "ES"), key="language", horizontal=True)
    text = st.sidebar.text_area("Text", value="a b c", key="text")

    def body() -> None:
        st.title("Relabel page")
        if kind == TABLE_ROWS:
            st.table(_frame(tag, count), hide_index=True)
        elif kind != NAVIGATION:
            for i in range(count):
                KINDS[kind](tag, i)
        st.markdown(f"The text: {text} · {tag}")  # the line both a rerun and a switch change

    if kind == NAVIGATION:
        pages = [
            st.Page(body, title=f"{tag} page {i}", url_path=f"page{i}", default=i == 0)
            for i in range(max(count, 1))
        ]
        st.navigation(pages, position="top").run()
    else:
        body()


if __name__ == "__main__":  # streamlit run (the benchmark imports KINDS)
    main()
