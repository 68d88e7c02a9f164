"""Token lines on the page: a Custom Components v2 host of encoder/web's token_lines.js.

The module, joined with its Streamlit glue (encoder/web/glue/streamlit.js), and its stylesheet
are the component's code; user text (tokens) travels only in `data`. Hover, the keyboard's token
and the readout are handled in the browser and send nothing back: a rerun sends the new numbers
and the module draws them, with no Plotly on the page.
"""

from __future__ import annotations

import streamlit as st

from app.i18n import language
from app.i18n.browser import words_now
from encoder.web import spoken_in
from encoder.web.hosts import host_module, lines_style

NAME = "encoder_explorer.token_lines"

_lines = st.components.v2.component(
    NAME, js=host_module("streamlit_token_lines"), css=lines_style()
)


def token_lines(data: dict, *, key: str) -> None:
    """Draw token_lines.js's `data` (app.charts.norms.layernorm_lines), in the page's
    language."""
    _lines(key=key, data=spoken_in(data, language(), words_now()))
