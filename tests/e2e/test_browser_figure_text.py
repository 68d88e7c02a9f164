"""Every chart's text alternative in a real browser (app/assets/page/figure_text.js): a figure
named by a sentence of its own numbers, and one keyboard stop below it its numbers as a table,
which saves as CSV. The expected numbers are computed here from what Plotly itself decoded and
drew (its _fullData and tick labels), not from the script's reading of the figure."""

from __future__ import annotations

import csv
import io
import struct
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.e2e.harness import (
    KEYS_STEP,
    PROJECTOR,
    js_number,
    open_step,
    wait_ready,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

# A heatmap as Plotly holds it: its values (decoded) and the row labels it draws.
HEATMAP_JS = """key => {
  const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  return {
    z: plot._fullData[0].z.map(row => Array.from(row)),
    rows: [...plot.querySelectorAll("g.ytick text")].map(t => t.textContent),
    title: plot.querySelector(".gtitle").textContent,
    axes: [".ytitle", ".xtitle"].map(title => plot.querySelector(title)?.textContent || ""),
    label: plot.getAttribute("aria-label"),
    role: plot.getAttribute("role"),
  };
}"""
# Each chart in the main area: its role, its name and its drawn title.
CHARTS_JS = """() => [...document.querySelectorAll("[data-testid=stMain] .js-plotly-plot")]
  .map(plot => [plot.getAttribute("role"), plot.getAttribute("aria-label") || "",
                (plot.querySelector(".gtitle") || {}).textContent || ""])"""
MINILM = {"source": "pretrained"}
# Where an element is seen: [what hides it], empty when the whole of it is on the screen, inside
# every ancestor that cuts what overflows it (one that scrolls among them), and on top at its
# centre (nothing drawn over it, where a pointer reaches it).
UNSEEN_JS = """element => {
  const box = element.getBoundingClientRect();
  const hidden = [];
  if (!element.checkVisibility() || box.width < 1 || box.height < 1) return ["not drawn"];
  if (box.top < 0 || box.left < 0 || box.bottom > innerHeight || box.right > innerWidth)
    hidden.push(`outside the window: ${box.top}..${box.bottom} of ${innerHeight}`);
  for (let up = element.parentElement; up; up = up.parentElement) {
    const style = getComputedStyle(up);
    if (style.overflowX === "visible" && style.overflowY === "visible") continue;
    const edge = up.getBoundingClientRect();
    if (box.top < edge.top - 1 || box.bottom > edge.bottom + 1 || box.left < edge.left - 1
        || box.right > edge.right + 1)
      hidden.push(`cut by ${up.dataset.testid || up.className}: ${box.top}..${box.bottom} `
        + `outside ${edge.top}..${edge.bottom}`);
  }
  const atCentre = document.elementFromPoint(
    (box.left + box.right) / 2, (box.top + box.bottom) / 2);
  const pointed = getComputedStyle(element).pointerEvents !== "none";
  if (!hidden.length && pointed && !element.contains(atCentre)) hidden.push("covered");
  return hidden;
}"""
SVG = "http://www.w3.org/2000/svg"


def save_as(page, key: str, format: str) -> tuple[str, bytes]:
    """Save chart `key` as `format` from its "Save as…" menu, by keyboard: (file name, bytes)."""
    chart = page.locator(f".st-key-{key}")
    chart.get_by_test_id("figure-save").press("Enter")  # the menu opens on its first item
    item = chart.locator(f"[role=menuitem][data-format={format}]")
    with page.expect_download() as saving:
        item.press("Enter")
    assert chart.get_by_test_id("figure-save-menu").is_hidden()  # closed again
    return saving.value.suggested_filename, Path(saving.value.path()).read_bytes()


def test_a_heatmap_is_named_by_its_range_and_its_largest_cell(open_page) -> None:
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Attention steps", **MINILM)
    open_step(page, KEYS_STEP)
    page.wait_for_selector(".st-key-step_keys .js-plotly-plot[aria-label]")
    drawn = page.evaluate(HEATMAP_JS, "step_keys")
    values = [(value, i, j) for i, row in enumerate(drawn["z"]) for j, value in enumerate(row)]
    largest, row, column = max(values)
    smallest = min(value for value, _, _ in values)
    assert drawn["role"] == "figure"
    assert drawn["label"] == (
        f"{drawn['title']}: heatmap of {len(drawn['z'])} rows by {len(drawn['z'][0])} columns, "
        f"from {js_number(smallest)} to {js_number(largest)}; largest at row {drawn['rows'][row]}"
        f", column {column}."
    )


def test_the_table_is_one_key_away_and_saves_as_csv(open_page) -> None:
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Attention steps", **MINILM)
    open_step(page, KEYS_STEP)
    chart = page.locator(".st-key-step_keys")
    toggle = chart.get_by_test_id("figure-table-toggle")
    table = chart.get_by_test_id("figure-table")
    assert toggle.get_attribute("aria-expanded") == "false" and not table.is_visible()
    toggle.focus()
    page.keyboard.press("Enter")
    assert toggle.get_attribute("aria-expanded") == "true" and table.is_visible()
    drawn = page.evaluate(HEATMAP_JS, "step_keys")
    assert table.locator("tbody tr").count() == len(drawn["z"])
    assert table.locator("tbody th").all_inner_texts() == drawn["rows"]
    name, saved = save_as(page, "step_keys", "csv")
    assert name == "Keys K 16 32.csv"
    rows = list(csv.reader(io.StringIO(saved.decode("utf-8"))))
    corner = f"{drawn['axes'][0] or 'rows'} / {drawn['axes'][1] or 'columns'}"  # never empty
    assert rows[0] == [corner, *[str(j) for j in range(len(drawn["z"][0]))]]
    assert [row[0] for row in rows[1:]] == drawn["rows"]
    for row, values in zip(rows[1:], drawn["z"], strict=True):
        assert [float(cell) for cell in row[1:]] == pytest.approx(values, rel=5e-3, abs=1e-12)
    toggle.press("Enter")  # and closed again
    assert toggle.get_attribute("aria-expanded") == "false" and not table.is_visible()


def test_every_chart_of_a_view_is_a_named_figure(open_page) -> None:
    # (the first tabs of LayerNorm and Activations, Shapes' block and the corpus' fingerprint:
    # drawn by our ES modules, each named by its own module: tests/e2e/test_browser_token_lines.py
    # and its siblings)
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Activations", **MINILM)
    page.get_by_role("tab", name="The residual stream").click()
    page.locator(".st-key-act_residual .js-plotly-plot").wait_for()
    wait_ready(page)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.js-plotly-plot')].every(p => p.ariaLabel)"
    )
    charts = page.evaluate(CHARTS_JS)
    assert charts
    for role, label, title in charts:
        assert role == "figure", title
        assert label.startswith(title[:20]) and " from " in label, label


def test_a_chart_saves_as_svg_and_as_a_png_twice_its_size(open_page) -> None:
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Attention steps", **MINILM)
    open_step(page, KEYS_STEP)
    plot = page.locator(".st-key-step_keys .js-plotly-plot")
    plot.wait_for()
    width, height = plot.evaluate("p => [p.clientWidth, p.clientHeight]")
    name, svg = save_as(page, "step_keys", "svg")
    assert name == "Keys K 16 32.svg"
    root = ElementTree.fromstring(svg)  # parses as XML
    assert root.tag == f"{{{SVG}}}svg" and root.findtext(f"{{{SVG}}}title") == "Keys K [16, 32]"
    assert (root.get("width"), root.get("height")) == (str(width), str(height))
    drawn = [text.text for text in root.iter(f"{{{SVG}}}text")]
    assert "13 tired" in drawn  # the chart's own labels, as text
    name, png = save_as(page, "step_keys", "png")
    assert name == "Keys K 16 32.png" and png.startswith(b"\x89PNG\r\n\x1a\n")
    assert struct.unpack(">II", png[16:24]) == (2 * width, 2 * height)  # IHDR: width, height


def test_a_charts_tools_are_seen_under_it_and_its_table_opens_there(open_page) -> None:
    # the lesson's second step at a projector's size: its first chart (the embedding's heatmap),
    # its tools in sight under it without a scroll, and its table under it, the chart whole
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Lesson", lesson=2, **MINILM)
    chart = page.locator(".st-key-lesson_embedding")
    plot = chart.locator(".js-plotly-plot")
    page.wait_for_selector(".st-key-lesson_embedding .js-plotly-plot[aria-label]")
    toggle = chart.get_by_test_id("figure-table-toggle")
    save = chart.get_by_test_id("figure-save")
    below = plot.bounding_box()
    title = plot.locator(".gtitle")
    drawn_title = title.text_content()
    for button in (toggle, save):
        assert button.evaluate(UNSEEN_JS) == [], button
        where = button.bounding_box()
        assert below["y"] + below["height"] <= where["y"] < below["y"] + below["height"] + 40
        inside = chart.bounding_box()  # the figure's box holds its tools
        assert inside["y"] + inside["height"] >= where["y"] + where["height"] - 1
    toggle.click()
    table = chart.get_by_test_id("figure-table")
    table.wait_for()
    assert toggle.get_attribute("aria-expanded") == "true"
    now = plot.bounding_box()
    assert table.bounding_box()["y"] >= now["y"] + now["height"]  # under the chart
    table.scroll_into_view_if_needed()
    assert table.evaluate("t => t.checkVisibility()")
    plot.scroll_into_view_if_needed()
    assert title.evaluate(UNSEEN_JS) == [] and title.text_content() == drawn_title
    assert plot.bounding_box()["height"] == pytest.approx(below["height"], abs=1)  # as it was
    # its numbers: the chart's own, as Plotly decoded them
    drawn = page.evaluate(HEATMAP_JS, "lesson_embedding")
    rows = plot.evaluate("p => Array.from(p._fullData[0].y, String)")  # its rows' labels, in order
    assert table.locator("tbody th").all_inner_texts() == rows
    cells = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.textContent))"
    )
    assert len(cells) == len(drawn["z"])
    for row, values in zip(cells, drawn["z"], strict=True):
        assert [float(cell) for cell in row] == pytest.approx(values, rel=5e-3, abs=1e-12)
