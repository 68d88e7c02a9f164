"""Offline explorer pages (encoder.web.offline): the module once, one element per explorer opened
on its head, and nothing from the caller inside an attribute or the module."""

from __future__ import annotations

import base64
import html
import json
import re
from html.parser import HTMLParser

import pytest

from encoder.web.offline import explorer_element, explorer_html

ELEMENT = re.compile(
    r'<div id="(?P<id>[^"]+)"></div>\n<script type="application/octet-stream" '
    r'data-explorer-for="(?P<for>[^"]+)" data-selection="(?P<selection>[^"]*)">'
    r"(?P<data>[^<]*)</script>"
)


def test_an_element_carries_its_payload_and_where_it_opens() -> None:
    found = ELEMENT.fullmatch(
        explorer_element(b"AEX1 any bytes", "step-3", layer=2, head=5, mode="heads", query=7)
    )
    assert found and found["id"] == found["for"] == "step-3"
    assert base64.b64decode(found["data"]) == b"AEX1 any bytes"
    selection = json.loads(html.unescape(found["selection"]))
    assert selection == {"layer": 2, "head": 5, "mode": "heads", "query": 7}
    assert "query" not in explorer_element(b"AEX1", "step-4")  # nothing pinned


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"element_id": 'x"><script>'}, "must be letters, digits, - or _"),
        ({"element_id": "3d"}, "must be letters, digits, - or _"),
        ({"mode": "sankey"}, "mode='sankey' is not one of the explorer's views"),
    ],
)
def test_an_element_refuses_an_id_or_view_it_cannot_hold(arguments, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        explorer_element(b"AEX1", **arguments)


class Scripts(HTMLParser):
    """The type of each script element of a page (a script's text is never parsed as tags)."""

    def __init__(self) -> None:
        super().__init__()
        self.types: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.types.append(dict(attrs).get("type"))


def test_a_page_holds_the_module_once_and_escapes_its_title() -> None:
    page = explorer_html(b"AEX1", "A <b>bold</b> title")
    scripts = Scripts()
    scripts.feed(page)
    assert scripts.types == ["module", "application/octet-stream"]
    assert page.count("export function mount(") == 1
    assert "<b>bold</b>" not in page and "A &lt;b&gt;bold&lt;/b&gt; title" in page
