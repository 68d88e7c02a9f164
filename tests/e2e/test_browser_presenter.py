"""Presenter mode held across every view, and figure text legible in both modes (DESIGN 4b),
measured in the page: the size every figure text is drawn at on the screen (its computed font
size times the scale its SVG is drawn at: Plotly's charts, our ES modules' SVG figures and the
attention explorer, in their components' shadow roots), on each view: 14 px or more in normal
mode, 16 px or more in presenter mode; and the lesson's "Open in Attention" from presenter mode
opening the Attention view still in presenter mode (large type, no view bar, no status line).

Screenshots land in a pytest temporary folder (printed), to be looked at.
"""

from __future__ import annotations

import re

import pytest

from app.registry import BY_TITLE
from tests.e2e.harness import (
    DEEP_ALL_JS,
    EXPLORER,
    KEYS_STEP,
    LOAD_TIMEOUT_MS,
    PROJECTOR,
    open_step,
)
from tests.e2e.harness import wait_ready as settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

NORMAL_PX, PRESENTER_PX = 14, 16
STATUS_LINE = re.compile(r"· page \d+ ms$")  # app.main.status_line's end (the developer's line)

# Every visible figure text in the main area, as [px on the screen, its text], smallest first:
# Plotly's SVG text, the SVG figures' and the explorer's (in shadow roots), and the explorer's
# own labels and the SVG figures' words around their drawing (HTML). An SVG text's size on the
# screen is its computed size times the vertical scale of its drawing (a figure drawn larger
# through its viewBox).
FIGURE_TEXTS_JS = """() => {
  const main = document.querySelector("[data-testid=stMain]");
  const texts = [];
  const add = (element, scale) => {
    if (!element.textContent.trim() || !element.checkVisibility()) return;
    const px = parseFloat(getComputedStyle(element).fontSize) * scale;
    texts.push([Math.round(px * 10) / 10, element.textContent.trim().slice(0, 30)]);
  };
  for (const text of DEEP_ALL(main, "svg text")) {
    const m = text.getScreenCTM();
    const scale = m ? Math.hypot(m.c, m.d) : 1;
    for (const part of [text, ...text.querySelectorAll("tspan")]) {
      if (part === text && text.querySelector("tspan")) continue;
      add(part, scale);
    }
  }
  for (const root of DEEP_ALL(main, "[data-testid=attention-explorer], .svg-figure")) {
    for (const element of root.querySelectorAll("*")) {
      if (element.closest("svg")) continue;
      const own = [...element.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
      if (own) add(element, 1);
    }
  }
  return texts.sort((a, b) => a[0] - b[0]);
}""".replace("DEEP_ALL", DEEP_ALL_JS)

# the views and what opens their figures (Attention steps' heatmaps are in a closed step)
VIEWS = [view for view in BY_TITLE if view not in ("Training", "Export", "Exercises")]


def _measure(page, view: str) -> list:
    settled(page, LOAD_TIMEOUT_MS)
    if view == "Attention steps":  # its heatmaps, in a step opened first
        open_step(page, KEYS_STEP)
        page.locator(f".st-key-{KEYS_STEP} .js-plotly-plot svg text").first.wait_for()
    if view == "Attention":  # its explorer, drawn in the browser
        page.locator(f"{EXPLORER} [data-side=query]").first.wait_for()
    page.wait_for_timeout(600)  # plotly and the modules finish their layout
    return page.evaluate(FIGURE_TEXTS_JS)


def _smallest(texts: list) -> str:
    return f"{texts[0][0]} px ({texts[0][1]!r}) of {len(texts)}" if texts else "no figure"


@pytest.mark.slow
@pytest.mark.parametrize("present", [0, 1], ids=["normal", "presenter"])
def test_every_views_figure_text_is_legible(open_page, server, tmp_path_factory, present):
    least = PRESENTER_PX if present else NORMAL_PX
    folder = tmp_path_factory.mktemp(f"figure_text_{present}")
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Lesson", source="pretrained")
    small, measured = {}, []  # {view: what is too small}, the views with figures
    for view in VIEWS:
        lesson = {"lesson": 7} if view == "Lesson" else {}  # a step with figures, no question
        if view == "What it is for":  # its matrix needs a pair of sentences
            lesson = {"text": "A cat sleeps on the sofa.\nA kitten naps on the couch."}
        url = server.page_url(source="pretrained", present=present, **lesson)
        page.goto(url.replace("/?", f"/{BY_TITLE[view].path}?"))
        texts = _measure(page, view)
        page.screenshot(path=folder / f"{BY_TITLE[view].path}.png")
        print(f"{'presenter' if present else 'normal'} {view}: {_smallest(texts)}")
        measured += [view] if texts else []
        under = [text for text in texts if text[0] < least - 0.05]
        if under:
            small[view] = f"{len(under)} of {len(texts)}, e.g. {under[:3]}"
        if present and page.get_by_text(STATUS_LINE).count():
            small[view] = small.get(view, "") + " and the developer's status line"
    print(f"screenshots: {folder}")
    assert len(measured) >= 6, measured  # the views' figures were there to measure
    assert small == {}, small


def test_open_in_attention_from_presenter_mode_stays_in_it(open_page, tmp_path_factory):
    folder = tmp_path_factory.mktemp("presenter_open")
    page, _ = open_page(
        {"viewport": PROJECTOR}, 60_000, view="Lesson", source="pretrained", lesson=5, present=1
    )
    page.get_by_role("button", name="Open in Attention", exact=True).click()
    page.wait_for_url(lambda url: "/attention?" in url, timeout=LOAD_TIMEOUT_MS)
    texts = _measure(page, "Attention")
    page.screenshot(path=folder / "attention_from_presenter.png")
    print(f"\nAttention from the presenter lesson: {_smallest(texts)}; screenshots: {folder}")
    assert "present=1" in page.url
    assert texts and texts[0][0] >= PRESENTER_PX - 0.05, texts[:5]
    assert not page.get_by_test_id("stTopNav").is_visible()  # no view bar
    assert page.get_by_text(STATUS_LINE).count() == 0
    prose = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stMarkdown] p')]"
        ".filter(p => p.checkVisibility()).map(p => parseFloat(getComputedStyle(p).fontSize))"
    )
    assert prose and min(prose) >= 20, prose
