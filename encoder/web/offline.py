"""The attention explorer and the figure modules in self-contained HTML: the ES module and its
stylesheet inline, the payload inline (the explorer's as base64, a figure's as JSON), no network
at all; it works opened from file:// (a lesson handout, a download, an e-mail attachment).

A page holds each module once (`explorer_scripts`, `figure_scripts`) and any number of its
figures (`explorer_element`, `figure_element`), each mounted on its own element from its own
data. User text (tokens, setup names) only ever travels inside the data, and the title is
escaped.
"""

from __future__ import annotations

import base64
import html
import json
import re

from encoder.web.hosts import OFFLINE_FIGURE, explorer_style, figure_style, host_module, joined
from encoder.web.payload import start_at, with_start

PAGE_STYLE = "body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }"
ELEMENT_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def _inlined(style: str, module: str) -> str:
    if "</script" in module.lower():  # trusted code, but it must not end its own element
        raise ValueError("a module contains '</script' and cannot be inlined")
    return f'<style>{style}</style>\n<script type="module">{module}</script>'


def explorer_scripts() -> str:
    """The explorer's stylesheet and module, once per page; mounts every explorer_element."""
    return _inlined(explorer_style(), host_module("offline_explorer"))


def figure_scripts(module: str) -> str:
    """A figure module's stylesheet and module (module: one of hosts.FIGURE_MODULES), once per
    page; mounts every figure_element of that module."""
    code = joined(module, OFFLINE_FIGURE).replace('"MODULE_NAME"', json.dumps(module))
    return _inlined(figure_style(module), code)


def _element_id(element_id: str) -> str:
    if not ELEMENT_ID.fullmatch(element_id):
        raise ValueError(f"element_id={element_id!r} must be letters, digits, - or _")
    return element_id


def figure_element(module: str, data: dict, element_id: str = "figure") -> str:
    """Where one figure of `module` is drawn: its element, and its `data` (the module's, every
    word already in the reader's language) as JSON in a script element that the page never runs
    ("<" written as \\u003c: no text in it ends the element)."""
    text = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    return (
        f'<div id="{_element_id(element_id)}"></div>\n<script type="application/json" '
        f'data-figure-for="{element_id}" data-module="{html.escape(module)}">{text}</script>'
    )


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
    start = start_at(layer, head, mode, query)
    data = base64.b64encode(with_start(payload, start)).decode("ascii")
    return (
        f'<div id="{_element_id(element_id)}"></div>\n'
        f'<script type="application/octet-stream" data-explorer-for="{element_id}">{data}</script>'
    )


def page_html(title: str, scripts: str, body: str, *, lang: str, direction: str) -> str:
    """One HTML page: `scripts` (the modules' _scripts) in its head, `body` (their elements)
    under `title`, said in language `lang` (a BCP 47 tag), written in `direction` ("ltr", or
    "rtl" for Arabic)."""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{html.escape(lang)}" dir="{html.escape(direction)}"><head>'
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{PAGE_STYLE}</style>",
            scripts,
            "</head><body>",
            f"<h1>{html.escape(title)}</h1>",
            body,
            "</body></html>",
        ]
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
    body = explorer_element(payload, layer=layer, head=head)
    return page_html(title, explorer_scripts(), body, lang=lang, direction=direction)


def figure_html(module: str, data: dict, title: str, *, lang: str, direction: str) -> str:
    """One HTML page holding one figure of `module` drawn from `data` (its words in `lang`),
    under `title`."""
    body = figure_element(module, data)
    return page_html(title, figure_scripts(module), body, lang=lang, direction=direction)
