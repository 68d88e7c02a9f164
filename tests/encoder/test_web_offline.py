"""Offline explorer pages (encoder.web.offline): the module once, one element per explorer opened
on its head, and nothing from the caller inside an attribute or the module."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from encoder.web.offline import explorer_element, explorer_html
from encoder.web.payload import decode_header, payload

ELEMENT = re.compile(
    r'<div id="(?P<id>[^"]+)"></div>\n<script type="application/octet-stream" '
    r'data-explorer-for="(?P<for>[^"]+)">'
    r"(?P<data>[^<]*)</script>"
)


PAYLOAD = payload(np.full((2, 3, 4, 4), 0.25), ["a", "b", "c", "d"])


def test_an_element_carries_its_payload_opening_where_its_header_says() -> None:
    found = ELEMENT.fullmatch(
        explorer_element(PAYLOAD, "step-3", layer=1, head=2, mode="heads", query=3)
    )
    assert found and found["id"] == found["for"] == "step-3"
    data = base64.b64decode(found["data"])
    assert decode_header(data)["start"] == {"layer": 1, "head": 2, "mode": "heads", "query": 3}
    body = 8 + int.from_bytes(PAYLOAD[4:8], "little")
    assert data.endswith(PAYLOAD[body:]) and len(data) % 2 == 0  # the weights untouched
    unpinned = ELEMENT.fullmatch(explorer_element(PAYLOAD, "step-4"))
    start = decode_header(base64.b64decode(unpinned["data"]))["start"]
    assert start == {"layer": 0, "head": 0, "mode": "lines"}  # nothing pinned


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
        explorer_element(PAYLOAD, **arguments)


class Scripts(HTMLParser):
    """The type of each script element of a page (a script's text is never parsed as tags)."""

    def __init__(self) -> None:
        super().__init__()
        self.types: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.types.append(dict(attrs).get("type"))


def test_a_page_holds_the_module_once_and_escapes_its_title() -> None:
    page = explorer_html(PAYLOAD, "A <b>bold</b> title")
    scripts = Scripts()
    scripts.feed(page)
    assert scripts.types == ["module", "application/octet-stream"]
    assert page.count("function mount(") == 1
    assert "<b>bold</b>" not in page and "A &lt;b&gt;bold&lt;/b&gt; title" in page
