"""The page by keyboard and for a screen reader (app/assets/page: view_nav.js, announce.js): the
skip link first, then the view control as one stop that lands on the open view, arrows among
the views; a run announced once through the page's live region; reduced motion and more
contrast honoured where the system asks."""

from __future__ import annotations

import re

import pytest

from tests.e2e.harness import PROJECTOR, expected_tokens, type_text

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

FOCUSED = "() => document.activeElement?.innerText?.trim() ?? ''"
IS_VIEW = "() => document.activeElement?.dataset?.testid === 'stTopNavLink'"
ANNOUNCED = "() => document.querySelector('[data-testid=page-announcer]')?.textContent ?? null"


def tab_to_the_views(page) -> list[str]:
    """Tab from the top of the page until a view link has the focus: the stops on the way."""
    page.locator("body").focus()
    stops = []
    for _ in range(30):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(FOCUSED))
        if page.evaluate(IS_VIEW):
            return stops
    raise AssertionError(f"no view link within 30 stops: {stops}")


def test_the_view_control_is_one_stop_on_the_open_view(open_page):
    page, _ = open_page(view="LayerNorm", source="pretrained")
    stops = tab_to_the_views(page)
    assert stops[0] == "Skip to main content"  # Streamlit's skip link stays first
    assert stops[-1] == "LayerNorm"  # not "Lesson", the first view
    page.keyboard.press("ArrowRight")
    assert page.evaluate(FOCUSED) == "Activations"
    page.keyboard.press("Home")
    assert page.evaluate(FOCUSED) == "Lesson"
    # the page changes while the focus is among the views (a run still drawing): the stop
    # stays where the keys put it, not back on the open view as well
    page.evaluate("() => document.body.append(document.createElement('div'))")
    page.wait_for_timeout(400)
    page.keyboard.press("ArrowLeft")  # wraps round
    last = page.get_by_test_id("stTopNavLink").last.inner_text().strip()
    assert page.evaluate(FOCUSED) == last
    page.keyboard.press("Tab")  # one stop for all the views: Tab leaves them
    assert not page.evaluate(IS_VIEW)
    tabbable = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stTopNavLink]')]"
        ".filter(a => a.tabIndex >= 0).length"
    )
    assert tabbable == 1


# The focused element's focus indicator: its outline (or else its box-shadow ring), as
# {style, width px, colour [r, g, b]}, and the colours around it, each [r, g, b] as seen on the
# screen: the element's own background and the one behind it (each composited over what is
# behind it, up to the page's white).
FOCUS_RING_JS = """() => {
  const rgba = text => (text.match(/[\\d.]+/g) || []).map(Number);
  const seen = element => {  // the colour under `element`, its own background composited in
    const layers = [];
    for (let e = element; e; e = e.parentElement) {
      layers.push(rgba(getComputedStyle(e).backgroundColor));
    }
    let colour = [255, 255, 255];
    for (const [r, g, b, a = 1] of layers.reverse()) {
      if (!a) continue;
      colour = [r, g, b].map((c, i) => c * a + colour[i] * (1 - a));
    }
    return colour;
  };
  const focused = document.activeElement;
  const style = getComputedStyle(focused);
  let ring = { style: style.outlineStyle, width: parseFloat(style.outlineWidth),
               colour: rgba(style.outlineColor).slice(0, 3) };
  if (ring.style === "none" && style.boxShadow !== "none") {
    const spread = style.boxShadow.match(/(rgba?\\([^)]*\\))[^,]*?(\\d+(?:\\.\\d+)?)px\\s*$/);
    ring = { style: "shadow", width: spread ? Number(spread[2]) : 0,
             colour: spread ? rgba(spread[1]).slice(0, 3) : [0, 0, 0] };
  }
  return { ring, inside: seen(focused), behind: seen(focused.parentElement),
           text: focused.innerText };
}"""


def contrast(a: list[float], b: list[float]) -> float:
    """WCAG 2.2's contrast ratio of two sRGB colours (0-255)."""

    def luminance(colour):
        linear = [c / 255 for c in colour]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in linear]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_a_focused_view_link_shows_a_ring_that_contrasts_with_its_neighbours(open_page):
    page, _ = open_page({"viewport": PROJECTOR}, view="LayerNorm", source="pretrained")
    tab_to_the_views(page)
    page.keyboard.press("ArrowRight")  # a link that is not the open view's (no tint of its own)
    page.wait_for_timeout(300)  # past any transition
    for link in ("Activations", "LayerNorm"):
        if link == "LayerNorm":
            page.keyboard.press("ArrowLeft")  # the open view's link, on its own tint
            page.wait_for_timeout(300)
        found = page.evaluate(FOCUS_RING_JS)
        assert found["text"] == link, found
        ring = found["ring"]
        assert ring["style"] not in ("none", "hidden") and ring["width"] >= 2, found
        # WCAG 2.4.11: the ring 3:1 against what it sits between (the link, the bar behind it)
        for around in (found["inside"], found["behind"]):
            assert contrast(ring["colour"], around) >= 3, (link, found)


def test_a_finished_run_is_announced_once_politely(open_page):
    page, _ = open_page(view="Attention", source="pretrained", timing=1)  # the status line too
    text = "The cat sat on the mat."
    type_text(page, text)
    tokens = len(expected_tokens(text)[0])
    page.wait_for_function(
        f"() => ({ANNOUNCED})()?.startsWith('Attention drawn: {tokens} tokens, 1 sentence,')",
        timeout=60_000,
    )
    region = page.get_by_test_id("page-announcer")
    assert region.get_attribute("role") == "status"
    assert region.get_attribute("aria-live") == "polite"
    parameters = re.search(r"([\d,]+) parameters", page.evaluate(ANNOUNCED)).group(1)
    captions = page.get_by_test_id("stCaptionContainer")
    status = captions.filter(has_text="parameters").last.inner_text()
    assert f"{parameters} parameters" in status  # the same run's count as the status line
    assert page.locator("[data-announce]").first.is_hidden()  # said, never shown


def test_reduced_motion_and_more_contrast_are_honoured(open_page):
    # asked for before the page opens (Chromium does not restyle a page whose emulated
    # contrast changes after it is drawn)
    asking = {"viewport": PROJECTOR, "reduced_motion": "reduce", "contrast": "more"}
    page, _ = open_page(browsing=asking, view="Tokens", source="pretrained")
    caption = "getComputedStyle(document.querySelector('[data-testid=stCaptionContainer]'))"
    # #595959 otherwise; waited for, not read once: a loaded machine once read Streamlit's own
    # colour, rgb(47, 45, 43), before the page's style was drawn (CI, 2026-11-28)
    page.wait_for_function(f"() => {caption}.color === 'rgb(34, 34, 34)'", timeout=15_000)
    durations = page.evaluate(
        "() => [...document.querySelectorAll('button, a')].map(e => getComputedStyle(e)"
        ".transitionDuration.split(',').map(parseFloat)).flat()"
    )
    assert durations and max(durations) < 0.001
