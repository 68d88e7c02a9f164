"""Interventions in Chromium on MiniLM: the grids drawn once the background patching is done
(no click), a grid's table one key away with a row a token, and the keyboard reaching the two
sentences, the metric and the grids' tabs."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

PROJECTOR = {"width": 1280, "height": 720}
DRAWN_JS = """key => {
  const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  return !!(plot && plot._fullData && plot._fullData.length);
}"""
FOCUSED_JS = """() => {
  const at = document.activeElement;
  return [at.getAttribute("aria-label") || "", at.getAttribute("role") || at.tagName,
          (at.innerText || "").trim()];
}"""
TOKENS = ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it",
          "was", "too", "tired", ".", "[SEP]"]  # fmt: skip


def test_the_grids_are_drawn_a_table_opens_and_the_keyboard_reaches_the_controls(open_page):
    page, _ = open_page({"viewport": PROJECTOR}, 120_000, view="Interventions", source="pretrained")
    page.wait_for_function(DRAWN_JS, arg="patch_residual_a", timeout=180_000)
    assert page.get_by_test_id("stProgress").count() == 0
    chart = page.locator(".st-key-patch_residual_a")
    toggle = chart.get_by_test_id("figure-table-toggle")
    table = chart.get_by_test_id("figure-table")
    toggle.focus()
    page.keyboard.press("Enter")
    assert toggle.get_attribute("aria-expanded") == "true" and table.is_visible()
    rows = table.locator("tbody th").all_inner_texts()
    assert rows == [f"{t} {token}" for t, token in enumerate(TOKENS)]
    tired = table.locator("tbody tr").nth(13).locator("td").all_inner_texts()
    assert len(tired) == 7 and float(tired[0]) == pytest.approx(1.0, abs=1e-3)  # layer 0
    # the keyboard, from the clean sentence on: the corrupted one, the metric, the grids' tabs
    page.get_by_label("Clean sentence").focus()
    seen = []
    for _press in range(12):
        page.keyboard.press("Tab")
        seen.append(page.evaluate(FOCUSED_JS))
    labels = [label for label, _role, _text in seen]
    assert "Corrupted sentence" in labels, seen
    assert any(role == "radio" or "cosine" in text for _label, role, text in seen), seen
    tab = next((s for s in seen if s[1] == "tab"), None)
    assert tab is not None and tab[2] == "Residual stream", seen
    page.get_by_role("tab", name="Residual stream").focus()  # where Tab reached it
    page.keyboard.press("ArrowRight")  # the next tab, chosen by the keyboard alone
    page.wait_for_function(DRAWN_JS, arg="patch_attention_a", timeout=60_000)
