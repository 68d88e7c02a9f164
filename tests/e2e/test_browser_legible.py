"""Legible at the back of the room and on a phone, measured in the page (DESIGN 4b): the smallest
figure text (the computed font size of every SVG text Plotly draws), no table or block wider than
its place, the contrast of captions (from their computed colours), presenter mode without the
view bar or the status line, and a phone's first screen. One server, one page per size.

Screenshots land in a pytest temporary folder (printed), to be looked at.
"""

from __future__ import annotations

import pytest

from app.lesson.steps import STEPS
from app.registry import BY_TITLE
from tests.e2e.harness import (
    DEEP_ALL_JS,
    KEYS_STEP,
    LOAD_TIMEOUT_MS,
    PHONE,
    PHONE_BROWSING,
    PROJECTOR,
    open_step,
    open_view,
    wait_ready,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

# The smallest figure text in the main area as shown (an SVG text: its size times its drawing's
# scale, a module's drawn larger in presenter mode): [size px, its text], or null with no figure.
SMALLEST_FIGURE_TEXT_JS = """() => {
  let smallest = null;
  const main = document.querySelector("[data-testid=stMain]");
  const plotly = main.querySelectorAll(".js-plotly-plot svg text");
  // and our ES modules' figures, in their components' shadow roots ([data-draw-ms]: drawn)
  for (const text of [...plotly, ...DEEP_ALL(main, "[data-draw-ms] text")]) {
    const m = text.getScreenCTM();  // a module's drawing shown larger (presenter mode)
    const scale = m ? Math.hypot(m.c, m.d) : 1;
    for (const part of [text, ...text.querySelectorAll("tspan")]) {
      if (!part.textContent.trim() || !text.checkVisibility()) continue;
      const size = Math.round(parseFloat(getComputedStyle(part).fontSize) * scale * 10) / 10;
      if (smallest === null || size < smallest[0]) smallest = [size, part.textContent];
    }
  }
  return smallest;
}""".replace("DEEP_ALL", DEEP_ALL_JS)

# What is wider than its place: with `tables`, a table's grid scrolled sideways (columns hidden
# past its right edge) or an HTML table (st.table's: its box, and the box inside it that
# scrolls); a figure's title past its figure's right edge; the page itself. (On a phone a table
# of a token per column scrolls sideways, as grids do there.)
TOO_WIDE_JS = """tables => {
  const wide = [];
  const over = (element, what) => {
    if (element.scrollWidth > element.clientWidth + 1)
      wide.push(`${what}: ${element.scrollWidth} > ${element.clientWidth}`);
  };
  if (tables) {
    document.querySelectorAll("[data-testid=stDataFrame] .dvn-scroller")
      .forEach(grid => over(grid, "table"));
    document.querySelectorAll("[data-testid=stTable], [data-testid=stTable] > div")
      .forEach(t => over(t, "html table"));
  }
  for (const plot of document.querySelectorAll("[data-testid=stMain] .js-plotly-plot")) {
    const title = plot.querySelector(".gtitle");
    const box = plot.getBoundingClientRect();
    if (title && title.getBoundingClientRect().right > box.right + 1)
      wide.push(`title "${title.textContent.slice(0, 40)}" past its figure`);
  }
  over(document.querySelector("[data-testid=stMain]"), "page");
  return wide;
}"""

# The lowest contrast of a caption's text against white: [ratio, text] (WCAG 2.2's formula).
CAPTION_CONTRAST_JS = """() => {
  const luminance = colour => {
    const [r, g, b] = colour.match(/[\\d.]+/g).slice(0, 3).map(c => {
      const v = Number(c) / 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  let worst = null;
  for (const caption of document.querySelectorAll("[data-testid=stCaptionContainer]")) {
    for (const part of [caption, ...caption.querySelectorAll("*")]) {
      if (!part.textContent.trim() || !part.checkVisibility()) continue;
      const style = getComputedStyle(part);
      const ratio = 1.05 / (luminance(style.color) + 0.05) * Number(style.opacity);
      if (worst === null || ratio < worst[0]) worst = [ratio, part.textContent.slice(0, 40)];
    }
  }
  return worst;
}"""

# Every pair of texts that overlap in a figure of the main area (a Plotly chart, or one of our ES
# modules' SVG figures in its component's shadow root): [figure's title, text, text]. A text is
# the quadrilateral it covers on the screen (its box, turned as drawn: tokens at 45 degrees),
# less 15 % of its height top and bottom (a font's box is taller than its ink: the lines of a
# paragraph touch); two overlap where they do by more than 1 px along every axis that could
# separate them (the separating axis test). Hidden texts (a heatmap's numbers that do not fit)
# do not count.
OVERLAPPING_TEXT_JS = """() => {
  const drawn = { opacityProperty: true, visibilityProperty: true };
  const quads = (texts) => texts.flatMap((text) => {
    if (!text.textContent.trim() || !text.checkVisibility(drawn)) return [];
    const box = text.getBBox();
    if (box.width < 0.5 || box.height < 0.5) return [];
    const m = text.getScreenCTM();
    const inset = box.height * 0.15;
    const corners = [[box.x, box.y + inset], [box.x + box.width, box.y + inset],
      [box.x + box.width, box.y + box.height - inset], [box.x, box.y + box.height - inset]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
    return [{ text: text.textContent.trim().slice(0, 30), corners }];
  });
  const depth = (p, q) => {  // the least overlap along the sides' normals (0 or less: apart)
    let least = Infinity;
    for (const shape of [p, q]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = shape[i], [x2, y2] = shape[(i + 1) % 4];
        const length = Math.hypot(x2 - x1, y2 - y1) || 1;
        const normal = [-(y2 - y1) / length, (x2 - x1) / length];
        const span = (s) => s.map(([x, y]) => x * normal[0] + y * normal[1]);
        const [a, b] = [span(p), span(q)];
        least = Math.min(least, Math.min(Math.max(...a), Math.max(...b))
          - Math.max(Math.min(...a), Math.min(...b)));
      }
    }
    return least;
  };
  const main = document.querySelector("[data-testid=stMain]");
  const figures = [...main.querySelectorAll(".js-plotly-plot"),
    ...DEEP_ALL(main, "[data-draw-ms]")];
  const found = [];
  for (const figure of figures.filter((f) => f.checkVisibility())) {
    const boxes = quads([...figure.querySelectorAll("svg text")]);
    const name = (figure.querySelector(".gtitle")?.textContent
      || figure.getAttribute("aria-label") || "").slice(0, 40);
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (depth(boxes[i].corners, boxes[j].corners) > 1)
          found.push([name, boxes[i].text, boxes[j].text]);
      }
    }
  }
  return found;
}""".replace("DEEP_ALL", DEEP_ALL_JS)

FONT_PX_JS = "selector => [...document.querySelectorAll(selector)].map(e => parseFloat(getComputedStyle(e).fontSize))"  # noqa: E501
TOP_JS = """selector => {
  const found = [...document.querySelectorAll(selector)].find(e => e.checkVisibility());
  return found ? found.getBoundingClientRect().top : null;
}"""
# a Plotly chart, or a Custom Components v2 element's (the token lines')
FIGURES = "[data-testid=stMain] .js-plotly-plot, [data-testid=stMain] .stBidiComponent"
STATUS_LINE = "forward pass"  # app.main.status_line's words


def _settle(page) -> None:
    wait_ready(page)
    page.wait_for_timeout(500)  # plotly finishes its layout


def test_views_at_1280x720_read_from_afar(open_page, tmp_path_factory) -> None:
    folder = tmp_path_factory.mktemp("legible_1280")
    page, _ = open_page(
        {"viewport": PROJECTOR}, 60_000, view="LayerNorm", source="pretrained", timing=1
    )
    for view in (
        "LayerNorm",
        "Activations",
        "Shapes",
        "Attention steps",
    ):  # Attention: its explorer, tested in test_browser_explorer
        if view != "LayerNorm":
            open_view(page, view)
        if view == "Attention steps":
            open_step(page, KEYS_STEP)  # its heatmaps: closed at first
        _settle(page)
        page.screenshot(path=folder / f"{view}.png")
        smallest = page.evaluate(SMALLEST_FIGURE_TEXT_JS)
        assert smallest is not None and smallest[0] >= 14, (view, smallest)
        assert page.evaluate(TOO_WIDE_JS, True) == [], view
        contrast = page.evaluate(CAPTION_CONTRAST_JS)
        assert contrast is not None and contrast[0] >= 4.5, (view, contrast)
        assert page.get_by_text(STATUS_LINE).count() == 1, view  # the developer's line, once
    print(f"\nscreenshots: {folder}")


def test_presenter_mode_is_large_and_bare_and_exits(open_page, tmp_path_factory) -> None:
    folder = tmp_path_factory.mktemp("legible_presenter")
    page, _ = open_page(
        {"viewport": PROJECTOR}, 60_000, view="Lesson", lesson=13, present=1, timing=1
    )
    for step in (13, 12, 11):  # the block diagram, then figures and tables
        heading = page.locator("h2").filter(has_text=f"{step}. ")
        heading.wait_for()
        _settle(page)
        page.screenshot(path=folder / f"step_{step:02d}.png")
        smallest = page.evaluate(SMALLEST_FIGURE_TEXT_JS)
        assert smallest is None or smallest[0] >= 16, (step, smallest)
        prose = page.evaluate(FONT_PX_JS, "[data-testid=stMain] [data-testid=stMarkdown] p")
        assert prose and min(prose) >= 20, (step, prose)
        label = page.evaluate(FONT_PX_JS, "[data-testid=stProgress] p")
        assert label and min(label) >= 20, (step, label)  # "Step 13 of 13 · ..."
        cells = page.evaluate(FONT_PX_JS, "[data-testid=stTable] td")
        assert cells == [] or min(cells) >= 20, step
        assert not page.get_by_test_id("stTopNav").is_visible(), step  # no views bar
        assert page.get_by_test_id("stExpandSidebarButton").is_visible(), step  # its way out
        assert page.get_by_text(STATUS_LINE).count() == 0, step
        assert page.evaluate(TOO_WIDE_JS, True) == [], step
        page.locator(".st-key-lesson_previous button").click()
    page.get_by_role("button", name="Exit presenter mode").click()
    page.get_by_test_id("stTopNav").wait_for()  # the views are back, and the status line
    wait_ready(page)
    assert "present" not in page.url or "present=0" in page.url
    assert page.get_by_text(STATUS_LINE).count() == 1
    if not page.locator(".st-key-present").is_visible():  # the sidebar, folded away before
        page.get_by_test_id("stExpandSidebarButton").click()
    switch = page.locator(".st-key-present input")
    switch.wait_for(state="visible")  # the switch back into it, on every view
    assert not switch.is_checked()


def test_a_phone_sees_the_content_first_and_the_text_one_tap_away(
    open_page, server, tmp_path_factory
) -> None:
    folder = tmp_path_factory.mktemp("legible_phone")
    page, _ = open_page(PHONE_BROWSING, 60_000)  # a first visit: the lesson, on MiniLM
    _settle(page)
    page.screenshot(path=folder / "lesson.png")
    # the step and its first words on the first screen; no title, no status line above it
    step_top = page.evaluate(TOP_JS, "[data-testid=stMain] h2")
    text_top = page.evaluate(TOP_JS, "[data-testid=stMain] [data-testid=stMarkdown] p")
    assert step_top is not None and step_top < PHONE["height"] / 2, step_top
    assert text_top is not None and text_top < PHONE["height"] - 100, text_top
    assert not page.locator("[data-testid=stMainBlockContainer] h1").is_visible()
    assert page.evaluate(TOO_WIDE_JS, False) == []
    for view in ("LayerNorm", "Activations", "Shapes"):  # its main figure on the first screen
        page.goto(server.page_url(view=view, source="pretrained"))
        wait_ready(page, LOAD_TIMEOUT_MS)
        _settle(page)
        page.screenshot(path=folder / f"{view}.png")
        figure_top = page.evaluate(TOP_JS, FIGURES)
        assert figure_top is not None and figure_top < PHONE["height"] * 0.6, view
        assert page.evaluate(TOO_WIDE_JS, False) == [], view  # titles wrap, none cut at the edge
        smallest = page.evaluate(SMALLEST_FIGURE_TEXT_JS)
        assert smallest[0] >= 14, (view, smallest)
    # one labelled tap opens the views and the text box, on the screen
    opener = page.get_by_test_id("stExpandSidebarButton")
    label = opener.evaluate("b => getComputedStyle(b, '::after').content")
    assert "Views" in label and "text" in label, label
    opener.click()
    box = page.locator(".st-key-text textarea")
    box.wait_for(state="visible")
    page.wait_for_timeout(500)  # the sidebar slides in
    top = box.bounding_box()["y"]
    assert 0 <= top < PHONE["height"] - 60, top
    views = page.get_by_test_id("stSidebar").get_by_role("link", name="Attention", exact=True)
    assert views.is_visible()  # the views it names are there
    page.screenshot(path=folder / "text_box.png")
    print(f"\nscreenshots: {folder}")


def _overlaps(page) -> list:
    wait_ready(page, LOAD_TIMEOUT_MS)
    page.wait_for_timeout(800)  # plotly finishes its layout, the page's script its figures
    return page.evaluate(OVERLAPPING_TEXT_JS)


def _lesson_overlaps(page) -> dict:
    """Each lesson step from the first, its question skipped: {step: overlapping pairs}, where
    there are any."""
    found = {}
    for number in range(1, len(STEPS) + 1):
        if number > 1:
            page.locator(".st-key-lesson_next button").click()
            page.locator("h2").filter(has_text=f"{number}. ").wait_for()
        wait_ready(page, LOAD_TIMEOUT_MS)
        skip = page.locator(".st-key-predict_skip button")
        if skip.count():
            skip.click()
            page.locator(".st-key-predict_skip").wait_for(state="detached")
        if pairs := _overlaps(page):
            found[number] = pairs
    return found


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(  # Spanish, the longest words, at presenter mode's size; Arabic mirrored
    "query",
    [{}, {"present": 1, "lang": "es"}, {"lang": "ar"}],
    ids=["normal", "presenter, spanish", "arabic"],
)
def test_no_two_texts_of_a_figure_overlap_in_any_lesson_step(open_page, query) -> None:
    # every figure of every step at a projector's size: heatmaps write their numbers only where
    # they fit, colour bars stay off the other panels, legends off the axes' titles
    page, _ = open_page(
        {"viewport": PROJECTOR}, 60_000, view="Lesson", lesson=1, source="pretrained", **query
    )
    assert _lesson_overlaps(page) == {}


@pytest.mark.slow
def test_no_two_texts_of_a_figure_overlap_in_any_view(open_page) -> None:
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Tokens", source="pretrained")
    found = {}
    for view in BY_TITLE:
        if view != "Lesson":
            open_view(page, view, LOAD_TIMEOUT_MS)
        if view == "Attention steps":
            open_step(page, KEYS_STEP)  # its heatmaps of keys and values
        if pairs := _overlaps(page):
            found[view] = pairs
    assert found == {}
