"""A Custom Components v2 host whose module the page holds: the module's code is sent once, in a
module script (encoder.web.hosts.page_library), and the component's own code is a small stub
(hosts.page_stub) that hands each call to it. Streamlit sends an unchanged element again only as
a reference to the one the browser holds, so a rerun carries the stub and the new data, not the
module (the explorer's 105 kB, a figure module's 45-55 kB) again."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from encoder.web.hosts import page_library, page_stub


def page_component(name: str, host: str, css: str) -> Callable:
    """The component `name` for `host` (a streamlit_* key of encoder.web.hosts.HOSTS), with the
    stylesheet `css`: called as st.components.v2's component is, it first puts the module's
    script (hidden: the page's CSS hides an element that holds a script) and then the element."""
    component = st.components.v2.component(name, js=page_stub(host), css=css)
    script = f'<script type="module">{page_library(host)}</script>'

    def draw(**kwargs):
        st.html(script, unsafe_allow_javascript=True)
        return component(**kwargs)

    return draw
