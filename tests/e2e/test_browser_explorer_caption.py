"""The Attention view's caption says on which side the explorer draws the queries and the keys,
as it draws them: in English the queries' column left of the keys', in Arabic (the explorer
mirrored, right to left) right of them; measured in the page (issue 50, item 7)."""

from __future__ import annotations

import pytest

from app.i18n import _, speak_now

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CAPTION = "[data-testid=stCaptionContainer]"


@pytest.mark.parametrize("language", ["en", "ar"])
def test_the_caption_puts_the_queries_where_the_explorer_draws_them(open_page, language) -> None:
    page, _problems = open_page({"viewport": {"width": 1280, "height": 720}}, 90_000,
                                view="Attention", lang=language)  # fmt: skip
    explorer = page.locator("[data-testid=attention-explorer]")
    queries = explorer.locator(".aex-queries").bounding_box()
    keys = explorer.locator(".aex-keys").bounding_box()
    query_side = "left" if queries["x"] + queries["width"] / 2 < keys["x"] else "right"
    speak_now(language)
    try:
        words = {"left": _("on the left"), "right": _("on the right")}
    finally:
        speak_now(None)
    key_side = "right" if query_side == "left" else "left"
    caption = next(t for t in page.locator(CAPTION).all_inner_texts() if "PageUp" in t)
    said_query, said_key = (
        caption.find(f"({words[query_side]})"),
        caption.find(f"({words[key_side]})"),
    )
    assert 0 <= said_query < said_key, (language, query_side, caption[:120])
    if language == "ar":
        assert query_side == "right"  # the explorer mirrored, as its own test checks
