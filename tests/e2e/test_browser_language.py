"""The page's language in a real browser (app/i18n, app/assets/page/language.js): the document
declares the language it shows, Arabic reads right to left with the sidebar on the right, and
the sidebar's control switches the language and puts it in the link."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from app.i18n.browser import browser_words
from app.i18n.catalogue import translations
from app.registry import VIEWS
from encoder.web.payload import decode_header
from tests.e2e.harness import PROJECTOR

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

DOCUMENT = "() => [document.documentElement.lang, document.documentElement.dir]"
SIDEBAR_HEADER = "[data-testid=stSidebar] h2"


def test_arabic_reads_right_to_left_with_the_sidebar_on_the_right(open_page):
    page, _ = open_page({"viewport": PROJECTOR}, view="Tokens", source="pretrained", lang="ar")
    page.wait_for_function(f"() => ({DOCUMENT})()[1] === 'rtl'")
    assert page.evaluate(DOCUMENT) == ["ar", "rtl"]
    sidebar = page.get_by_test_id("stSidebar").bounding_box()
    main = page.get_by_test_id("stMain").bounding_box()
    assert sidebar["x"] > main["x"] + main["width"] / 2  # the sidebar on the right
    heading = page.locator(SIDEBAR_HEADER).first
    assert heading.inner_text() == translations("ar").gettext("Input")
    assert heading.evaluate("(h) => getComputedStyle(h).direction") == "rtl"
    # the English sentence typed in it reads left to right, its full stop at its end
    box = page.locator("[data-testid=stSidebar] .st-key-text textarea")
    page.wait_for_function("() => document.querySelector('.st-key-text textarea').dir === 'auto'")
    assert box.evaluate("(t) => getComputedStyle(t).direction") == "ltr"
    box.fill("جملة عربية.")
    assert box.evaluate("(t) => getComputedStyle(t).direction") == "rtl"


def test_the_sidebar_switches_the_language_and_the_link_keeps_it(open_page):
    page, _ = open_page({"viewport": PROJECTOR}, view="Tokens", source="pretrained")
    assert page.evaluate(DOCUMENT) == ["en", "ltr"]
    assert page.locator(SIDEBAR_HEADER).first.inner_text() == "Input"
    page.locator(".st-key-_language input").click()
    page.get_by_role("option", name="Español", exact=True).click()
    spanish = translations("es").gettext("Input")
    page.locator(SIDEBAR_HEADER).filter(has_text=spanish).wait_for()
    page.wait_for_function(f"() => ({DOCUMENT})()[0] === 'es'")
    assert page.evaluate(DOCUMENT) == ["es", "ltr"]
    page.wait_for_url(lambda url: "lang=es" in url)


@pytest.mark.parametrize("language", ["es", "ar"])
def test_every_view_is_reachable_from_the_navigation_at_a_projectors_width(open_page, language):
    # 14 views do not all fit a 1280 px bar beside the sidebar (Spanish's titles are the
    # longest): the bar shows what fits, Streamlit's "N more" menu the rest, each one click away,
    # every title in the page's language
    page, _ = open_page({"viewport": PROJECTOR}, view="Tokens", source="pretrained", lang=language)
    nav = page.get_by_test_id("stTopNav")
    nav.get_by_role("link").first.wait_for()
    shown = [link.inner_text() for link in nav.get_by_role("link").all() if link.is_visible()]
    more = nav.get_by_text(re.compile(r"^\d+ more$"))
    if more.count():
        more.click()
        page.get_by_role("menuitem").first.wait_for()
        shown += page.get_by_role("menuitem").all_inner_texts()
    titles = [translations(language).gettext(view.title) for view in VIEWS]
    assert sorted(text.strip() for text in shown) == sorted(titles)


def test_a_browser_in_spanish_gets_the_page_in_spanish(open_page):
    browsing = {"viewport": PROJECTOR, "locale": "es-MX"}
    page, _ = open_page(browsing, view="Tokens", source="pretrained")
    page.wait_for_function(f"() => ({DOCUMENT})()[0] === 'es'")
    assert page.locator(SIDEBAR_HEADER).first.inner_text() == translations("es").gettext("Input")
    assert "lang=" not in page.url  # the browser's choice, not a link's


def switch_to(page, language: str, name: str) -> None:
    """Choose `name` in the sidebar's language control; return once the run in it is over."""
    page.locator(".st-key-_language input").click()
    page.get_by_role("option", name=name, exact=True).click()
    page.wait_for_function(f"() => ({DOCUMENT})()[0] === '{language}'")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=stApp]')"
        ".getAttribute('data-test-script-state') === 'notRunning'"
    )


def test_a_language_switch_leaves_no_warning_in_the_servers_log(open_page, server):
    # the language control was given its choice twice, as its index and through its key:
    # Streamlit warns (once a process) that the widget has a default and a Session State value
    page, _ = open_page({"viewport": PROJECTOR}, view="Tokens")
    for language, name in (("es", "Español"), ("ar", "العربية"), ("en", "English")):
        switch_to(page, language, name)  # the page speaks it: the document's language, the link
        page.wait_for_url(lambda url, to=language: parse_qs(urlparse(url).query)["lang"] == [to])
    assert "was created with a default value" not in server.log()


def test_switching_back_and_forth_keeps_every_choice(open_page):
    # Streamlit knows a radio's choice by its label, which the browser sends back: a choice
    # named in the old language was once read as a new choice (the weights' control's label
    # "Pretrained MiniLM (…)"), and the page fell into a traceback on the second switch
    page, _ = open_page({"viewport": PROJECTOR}, view="Shapes", source="pretrained")
    for language, name in (("es", "Español"), ("en", "English"), ("zh", "简体中文")):
        switch_to(page, language, name)
        page.locator(SIDEBAR_HEADER).filter(
            has_text=translations(language).gettext("Input")
        ).wait_for()
        assert page.get_by_test_id("stException").count() == 0, language
        assert page.locator(".st-key-source input:checked").count() == 1
        chosen = page.locator(".st-key-source label", has=page.locator("input:checked"))
        pretrained = translations(language).gettext("Pretrained MiniLM (all-MiniLM-L6-v2)")
        assert chosen.inner_text() == pretrained


def test_the_open_tab_stays_open_in_the_new_language(open_page):
    # Streamlit knows the open tab by its label: the old language's label once opened the first
    page, _ = open_page({"viewport": PROJECTOR}, view="LayerNorm", source="pretrained")
    page.get_by_role("tab", name="Stream by depth").click()
    page.locator(".st-key-residual .js-plotly-plot").wait_for()
    switch_to(page, "es", "Español")
    spanish = translations("es").gettext("Stream by depth")
    page.get_by_role("tab", name=spanish, selected=True).wait_for()
    assert page.locator(".st-key-residual .js-plotly-plot").count() == 1
    assert page.locator(".st-key-layernorm").count() == 0


def test_a_switch_gives_the_explorer_and_the_scatter_the_pages_words(open_page):
    # their data carries no words (a switch sends it again only as a reference): each speaks the
    # page's, told by the page's script (shared.js's PAGE_SPEECH), and right to left in Arabic
    words = {language: browser_words(language) for language in ("es", "ar")}
    page, _ = open_page({"viewport": PROJECTOR}, view="Attention", source="pretrained")
    explorer = page.get_by_test_id("attention-explorer").first
    matrix = explorer.locator("[data-role=mode][data-mode=matrix]")
    assert (explorer.get_attribute("lang"), matrix.inner_text()) == ("en", "Matrix")
    switch_to(page, "es", "Español")
    page.wait_for_function("e => e.getAttribute('lang') === 'es'", arg=explorer.element_handle())
    assert matrix.inner_text() == words["es"]["Matrix"]
    page, _ = open_page(
        {"viewport": PROJECTOR}, view="Heads across a corpus", d_model="32", num_heads="2",
        num_layers="2", lang="es",
    )  # fmt: skip
    scatter = page.get_by_test_id("head-scatter")
    scatter.wait_for(timeout=60_000)
    plane = scatter.locator("canvas")
    assert scatter.get_attribute("lang") == "es"
    assert plane.get_attribute("aria-roledescription") == words["es"]["scatter plot"]
    switch_to(page, "ar", "العربية")
    page.wait_for_function("e => e.getAttribute('dir') === 'rtl'", arg=scatter.element_handle())
    assert scatter.get_attribute("lang") == "ar"
    assert plane.get_attribute("aria-roledescription") == words["ar"]["scatter plot"]


def downloaded(page, key: str) -> str:
    """The text of the file that the download button `key` gives (built when clicked)."""
    with page.expect_download() as download:
        page.locator(f".st-key-{key}").locator("button, a").first.click()
    return Path(download.value.path()).read_text(encoding="utf-8")


def test_files_downloaded_from_a_page_in_arabic_are_in_arabic(open_page):
    # Streamlit builds them when clicked, in a thread that knows no session: they once came
    # out in English (app.i18n.in_this_language)
    browsing = {"viewport": PROJECTOR, "accept_downloads": True}
    page, _ = open_page(browsing, view="Lesson", source="pretrained", lang="ar")
    handout = downloaded(page, "lesson_handout")
    assert '<html lang="ar" dir="rtl">' in handout
    assert translations("ar").gettext("The numbers behind this step") in handout
    page, _ = open_page(browsing, view="Attention", source="pretrained", lang="ar")
    explorer = downloaded(page, "download_explorer")
    assert '<html lang="ar" dir="rtl">' in explorer
    (payload,) = re.findall(r'data-explorer-for="[^"]+">([^<]+)</script>', explorer)
    header = decode_header(base64.b64decode(payload))
    assert (header["lang"], header["words"]) == ("ar", browser_words("ar"))
    assert header["direction"] == "rtl"  # as the page's Python says it (app.i18n.RIGHT_TO_LEFT)


# The first table cell (st.table's HTML) with a negative number: where its minus and its first
# digit are drawn, and its text
NEGATIVE_CELL_JS = """() => {
  const cell = [...document.querySelectorAll("[data-testid=stTable] td")]
    .find((td) => /-\\d/.test(td.textContent));
  if (!cell) return null;
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  let node = walker.nextNode();
  while (node && !/-\\d/.test(node.textContent)) node = walker.nextNode();
  const at = node.textContent.search(/-\\d/);
  const x = (start) => {
    const range = document.createRange();
    range.setStart(node, start);
    range.setEnd(node, start + 1);
    return range.getBoundingClientRect().x;
  };
  return [x(at), x(at + 1), cell.textContent];
}"""


def test_a_negative_number_in_arabic_keeps_its_minus_on_the_left(open_page):
    """A right-to-left table cell would draw "-21.16" as "21.16-": the Arabic minus sign
    (CLDR's, a left-to-right mark before "-") keeps the number's own direction."""
    page, _ = open_page({"viewport": PROJECTOR}, view="Lesson", lesson=4, lang="ar")
    page.locator("h2").filter(has_text="4. ").wait_for()
    skip = page.locator(".st-key-predict_skip button")  # where the step asks first: later
    if skip.count():
        skip.click()
    page.wait_for_function(f"({NEGATIVE_CELL_JS})() !== null", timeout=60_000)
    minus, digit, text = page.evaluate(NEGATIVE_CELL_JS)
    assert minus < digit, text
