"""The attention explorer in self-contained HTML: the ES module and its stylesheet inline, the
payload inline as base64, no network at all; it works opened from file:// (a lesson handout, a
download, an e-mail attachment).

A page holds the module once (`explorer_scripts`) and any number of explorers
(`explorer_element`), each mounted on its own element from its own payload. User text (tokens,
setup names) only ever travels inside the payload's bytes, and the title is escaped.
"""

from __future__ import annotations

import base64
import html
import re

from encoder.web.hosts import explorer_style, host_module
from encoder.web.payload import start_at, with_start

PAGE_STYLE = "body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }"
ELEMENT_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def explorer_scripts() -> str:
    """The explorer's stylesheet and module, once per page; mounts every explorer_element."""
    module = host_module("offline_explorer")
    if "</script" in module.lower():  # trusted code, but it must not end its own element
        raise ValueError("the explorer's module contains '</script' and cannot be inlined")
    return f'<style>{explorer_style()}</style>\n<script type="module">{module}</script>'


def explorer_element(
    payload: bytes,
    element_id: str = "explorer",
    *,
    layer: int = 0,
    head: int = 0,
    mode: str = "lines",
    query: int | None = None,
) -> str:
    """Where one explorer is drawn: its element, and its payload (encoder.web.payload) as
    base64 in a script element that the page never runs; it opens on `layer`, `head` (numbered
    from 0) in `mode` (one of encoder.web.payload.MODES), with the token `query` pinned if given
    (the payload's header "start", encoder.web.payload.with_start)."""
    if not ELEMENT_ID.fullmatch(element_id):
        raise ValueError(f"element_id={element_id!r} must be letters, digits, - or _")
    start = start_at(layer, head, mode, query)
    data = base64.b64encode(with_start(payload, start)).decode("ascii")
    return (
        f'<div id="{element_id}"></div>\n'
        f'<script type="application/octet-stream" data-explorer-for="{element_id}">{data}</script>'
    )


def explorer_html(
    payload: bytes,
    title: str = "Attention explorer",
    *,
    layer: int = 0,
    head: int = 0,
    lang: str = "en",
    direction: str = "ltr",
) -> str:
    """One HTML page holding the explorer of one payload (one setup, or A and B to compare),
    opened on `layer`, `head` (positions in the payload, from 0); the page says `title` in
    language `lang` (a BCP 47 tag), written in `direction` ("ltr", or "rtl" for Arabic)."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{html.escape(lang)}" dir="{html.escape(direction)}"><head>'
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{PAGE_STYLE}</style>",
            explorer_scripts(),
            "</head><body>",
            f"<h1>{html.escape(title)}</h1>",
            explorer_element(payload, layer=layer, head=head),
            "</body></html>",
        ]
    )
