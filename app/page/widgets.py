"""Widgets and drawing helpers every view shares.

A widget here carries a key its view declares (app.keys.Key), whose value app.controls.state has
already brought within what the widget offers (app.controls.state.selection): the widget opens on
it, keeps it on the other pages (persist_state="session"), and its return value is the choice."""

from __future__ import annotations

import functools

import plotly.graph_objects as go
import streamlit as st

from app.charts import common
from app.charts.common import (
    PLOTLY_WHITE,
    SMALLEST_TEXT,
    legible,
    smallest_text,
    text_layout,
)
from app.charts.fitting import fit_narrow, mirror
from app.i18n import _, direction

# No Plotly toolbar: each chart's "Save as…" (SVG, PNG, CSV) and "Show as a table" come from
# app/assets/page/figure_text.js; zoom by dragging and a double click to reset need no button,
# and the toolbar's eight were as many keyboard stops a chart.
PLOTLY_CONFIG = {"displaylogo": False, "displayModeBar": False}


@functools.cache
def _template_layout(smallest: int) -> dict:
    """The figures' template's layout (app.charts.common.PLOTLY_WHITE) with the text sizes of
    app.charts.common.text_layout(smallest)."""
    return go.Layout(PLOTLY_WHITE["layout"]).update(text_layout(smallest)).to_plotly_json()


def page_template(fig: go.Figure, smallest: int = SMALLEST_TEXT) -> go.Figure:
    """The figure with its template's defaults for the trace types it draws only (the same look,
    without the ~7 kB of defaults for every other kind of trace sent on every rerun), and the
    text sizes of app.charts.common.text_layout(smallest)."""
    template = fig.layout.template
    used = {trace.type for trace in fig.data}
    data = {kind: template.data[kind] for kind in used if template.data[kind]}
    fig.layout.template = go.layout.Template(
        layout=_template_layout(smallest), data=data or None, _validate=common.VALIDATE
    )
    return fig


PHONE_TITLE_CHARS = 36  # a title line on a phone's 360 px of figure
PHONE_BROWSER = "Mobi"  # in a phone's User-Agent (MDN's advice for telling phones apart)


def on_phone() -> bool:
    """Whether this page's browser says it is a phone (its User-Agent); False where no browser
    asked (AppTest)."""
    return PHONE_BROWSER in (st.context.headers.get("User-Agent") or "")


def show(fig, key: str, title_chars: int | None = None) -> None:
    """Draw a figure under its key, no text in it under this run's smallest figure text
    (app.charts.common.smallest_text: larger in presenter mode), fit for a place `title_chars`
    characters of title wide
    (app.charts.fitting.fit_narrow: a column narrower than the page; PHONE_TITLE_CHARS on a
    phone), mirrored in a right-to-left language where the order of its things matters
    (app.charts.fitting.mirror). Our template, not Streamlit's plotly theme (which draws ticks
    and subtitles at 11-12 px whatever the figure's font). The builders' own sizes are
    SMALLEST_TEXT or more (tests/app/test_charts.py): only larger text raises them."""
    smallest = smallest_text()
    if smallest > SMALLEST_TEXT:
        legible(fig, smallest)
    if direction() == "rtl":
        mirror(fig)
    if on_phone():
        title_chars = min(title_chars or PHONE_TITLE_CHARS, PHONE_TITLE_CHARS)
    if title_chars is not None:
        fit_narrow(fig, title_chars)
    st.plotly_chart(
        page_template(fig, smallest), width="stretch", theme=None, config=PLOTLY_CONFIG, key=key
    )


def pick_index(label: str, count: int, key: str, where=st) -> int:
    """A slider over 0..count-1; with one choice, a line instead."""
    if count == 1:
        where.caption(_("{label}: 0 (the only one)", label=label))
        return 0
    return where.slider(label, 0, count - 1, key=key, persist_state="session")


def pick_sentence(sentences: list[str], chosen: int) -> int:
    """A sentence picker when the batch has several; the chosen index."""
    if len(sentences) == 1:
        return chosen
    return st.selectbox(
        _("Sentence"),
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
