"""head_fingerprint.js from an offline file in Chromium, on a grid of MiniLM's shape (6 layers x
12 heads, 7 behaviours): a cell a behaviour and a head in viridis of its value, a white line
between two layers, the heads' numbers and the layers' names under the columns as many as fit,
the keyboard and the mouse choose a cell whose value the readout gives as the data has it, the
table and the saved SVG hold the data, no label under 14 px and none outside the drawing or on
another at 350, 580 and 1200 px, Arabic mirrors the figure, a missing value is grey, and bad data
is a message."""

from __future__ import annotations

from xml.etree import ElementTree

import numpy as np
import pytest

from app.i18n.browser import browser_words
from encoder.inspect.corpus import FINGERPRINT
from encoder.web import spoken_in
from encoder.web.head_fingerprint import fingerprint_data
from encoder.web.hosts import FINGERPRINT as MODULE
from tests.e2e.harness import js_number
from tests.e2e.module_pages import (
    BOX_JS,
    LAID_OUT_JS,
    cell_boxes,
    channels,
    module_page,
    viridis,
)

pytestmark = pytest.mark.browser

LAYERS, HEADS = 6, 12  # MiniLM's
SVG = "{http://www.w3.org/2000/svg}"
# every text's computed font size in the figure, in px
FONT_SIZES_JS = """root => [...root.querySelectorAll("text, .hfp-title, .hfp-readout")]
  .filter(node => node.textContent.trim())
  .map(node => parseFloat(getComputedStyle(node).fontSize))"""
# each tick's column, layer, number in its layer, text and x: [head, layer, number, text, x]
TICKS_JS = """root => [...root.querySelectorAll("[data-role=tick]")].map(t => [
  Number(t.dataset.head), Number(t.dataset.layer), Number(t.dataset.layerHead), t.textContent,
  Number(t.getAttribute("x"))])"""


def grid_of(layers: int, heads: int, seed: int = 0) -> np.ndarray:
    """[layers * heads, FINGERPRINT]: values in [0, 1], a few of them large (as shares are)."""
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(len(FINGERPRINT), 0.4), size=layers * heads)


def data_of(layers: int = LAYERS, heads: int = HEADS, grid=None) -> dict:
    grid = grid_of(layers, heads) if grid is None else grid
    columns = [(layer, head) for layer in range(layers) for head in range(heads)]
    return fingerprint_data(
        grid, [c[0] for c in columns], [c[1] for c in columns], list(FINGERPRINT)
    )


@pytest.fixture(scope="module")
def minilm() -> dict:
    return data_of()


def page_of(browser, tmp_path, data: dict, width: int = 1200):
    return module_page(browser, tmp_path, MODULE, data, "head-fingerprint", width)


def test_the_cells_draw_the_grid_and_read_it_back(browser, tmp_path, minilm):
    data = minilm
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=head-fingerprint]")
    values, names = data["values"], data["behaviours"]
    rows, count = len(names), len(data["heads"])
    assert (rows, count) == (7, 72)
    assert root.get_attribute("role") == "figure"
    assert root.get_attribute("aria-label") == data["title"]
    assert page.locator(".hfp-title").inner_text() == data["title"]
    assert (root.get_attribute("data-behaviours"), root.get_attribute("data-heads")) == ("7", "72")
    assert root.get_attribute("data-width") == "1200"
    assert float(root.get_attribute("data-draw-ms")) < 100

    # the plot's name: its shape, and the highest head of each behaviour with its value
    plot = page.locator("[data-role=plot]")
    assert plot.get_attribute("tabindex") == "0" and plot.get_attribute("role") == "application"
    assert plot.get_attribute("aria-roledescription") == "heatmap"
    said = plot.get_attribute("aria-label")
    assert said.startswith(
        "A heatmap of 7 behaviours (rows) by 72 heads in 6 layers (columns), coloured from 0 to 1."
    )
    for b, name in enumerate(names):
        j = int(np.argmax(values[b]))
        layer, head = data["heads"][j]
        assert f"{name}, layer {layer}, head {head} ({js_number(values[b][j])})" in said, name

    # a cell a behaviour and a head, coloured as viridis of its value (the scale: 0 to 1)
    cells = cell_boxes(page, "row", "head")
    assert len(cells) == rows * count
    fills = page.locator("[data-role=cell]").evaluate_all(
        "cs => cs.map(c => [+c.dataset.row, +c.dataset.head, c.getAttribute('fill')])"
    )
    for b, j, fill in fills:
        want = viridis(values[b][j])
        assert all(abs(a - w) <= 1 for a, w in zip(channels(fill), want, strict=True)), (b, j)
    # rows top to bottom in the data's order, named so; columns left to right, layer by layer
    assert cells[(1, 0)][1] > cells[(0, 0)][1] and cells[(0, 1)][0] > cells[(0, 0)][0]
    assert page.locator("[data-role=row-label]").all_text_contents() == names
    xs = [cells[(0, j)][0] for j in range(count)]
    assert xs == sorted(xs)
    # 3 px between two layers, a white line 3 px wide in it; none inside a layer
    ends = [cells[(0, j)][0] + cells[(0, j)][2] for j in range(count)]
    gaps = [round(xs[j + 1] - ends[j], 1) for j in range(count - 1)]
    assert [j + 1 for j, gap in enumerate(gaps) if gap == 3.0] == [12, 24, 36, 48, 60]
    assert {gap for gap in gaps if gap != 3.0} == {0.0}
    lines = page.locator("[data-role=layer-line]")
    assert lines.count() == LAYERS - 1
    assert {lines.nth(i).get_attribute("stroke") for i in range(5)} == {"#ffffff"}
    assert {lines.nth(i).get_attribute("stroke-width") for i in range(5)} == {"3"}
    line_xs = [float(lines.nth(i).get_attribute("x1")) for i in range(5)]
    assert line_xs == pytest.approx([xs[12 * k] - 1.5 for k in range(1, 6)], abs=0.01)

    # at 1200 px every head's number shows, under its column; each layer named under its heads
    ticks = root.evaluate(TICKS_JS)
    assert [t[0] for t in ticks] == list(range(count))
    assert [(t[1], t[2]) for t in ticks] == [tuple(pair) for pair in data["heads"]]
    assert [t[3] for t in ticks] == [str(h) for _layer, h in data["heads"]]
    layer_labels = page.locator("[data-role=layer-label]")
    assert layer_labels.all_text_contents() == [f"layer {n}" for n in range(LAYERS)]

    # the keyboard: one Tab stop; the first arrow, the first cell, then the cells
    readout = page.locator("[data-role=readout]")
    assert readout.inner_text().startswith("Hover a cell, or Tab to the plot")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.role") == "plot"
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-cell") == "0,0"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert root.get_attribute("data-cell") == "1,1"
    assert readout.inner_text() == f"Layer 0, head 1 · next: {js_number(values[1][1])}"
    page.keyboard.press("End")
    assert root.get_attribute("data-cell") == f"1,{count - 1}"
    page.keyboard.press("ArrowRight")  # the last stays
    assert root.get_attribute("data-cell") == f"1,{count - 1}"
    assert readout.inner_text() == f"Layer 5, head 11 · next: {js_number(values[1][71])}"
    page.keyboard.press("Home")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # the first stays
    assert root.get_attribute("data-cell") == "0,0"
    for _ in range(7):
        page.keyboard.press("ArrowDown")
    assert root.get_attribute("data-cell") == "6,0"
    assert readout.inner_text() == f"Layer 0, head 0 · spread: {js_number(values[6][0])}"
    ring = page.locator("[data-role=ring]")
    assert ring.get_attribute("visibility") == "visible"
    inner = ring.locator("[data-edge=inner]")
    assert float(inner.get_attribute("x")) == pytest.approx(cells[(6, 0)][0] + 1, abs=0.01)
    assert float(inner.get_attribute("y")) == pytest.approx(cells[(6, 0)][1] + 1, abs=0.01)
    bold = page.locator("[data-role=row-label][font-weight='700']")
    assert bold.all_text_contents() == ["spread"]
    assert page.locator("[data-role=tick][font-weight='700']").get_attribute("data-head") == "0"
    page.keyboard.press("Escape")
    assert root.get_attribute("data-cell") == "" and ring.get_attribute("visibility") == "hidden"
    assert page.locator("[font-weight='700']").count() == 0

    # the mouse: a cell chooses itself
    origin = plot.bounding_box()
    x, y, w, h = cells[(3, 40)]
    page.mouse.move(origin["x"] + x + w / 2, origin["y"] + y + h / 2)
    assert root.get_attribute("data-cell") == "3,40"
    assert readout.inner_text() == f"Layer 3, head 4 · [CLS]: {js_number(values[3][40])}"

    # the table: a row a head, its layer, its number, its value of every behaviour
    page.locator("[data-testid=figure-table-toggle]").click()
    table = page.locator("[data-testid=figure-table]")
    assert table.locator("thead th").all_text_contents() == ["layer", "head", *names]
    body = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [row[:2] for row in body] == [[str(a), str(b)] for a, b in data["heads"]]
    by_head = [list(column) for column in zip(*values, strict=True)]  # [head][behaviour]
    assert [[float(v) for v in row[2:]] for row in body] == by_head

    # the saved drawing: an SVG document with its title, every cell and label
    page.locator("[data-testid=figure-save]").click()
    with page.expect_download() as saving:
        page.locator("[data-format=svg]").click()
    tree = ElementTree.parse(saving.value.path()).getroot()
    drawn = [e.text for e in tree.iter(f"{SVG}text")]
    assert set(names) <= set(drawn) and data["title"] in drawn and "mean share" in drawn
    roles = [e.get("data-role") for e in tree.iter(f"{SVG}rect")]
    assert roles.count("cell") == rows * count

    sizes = root.evaluate(FONT_SIZES_JS)
    assert sizes and min(sizes) >= 14, min(sizes)
    assert not errors, errors
    page.screenshot(path="/tmp/head_fingerprint_offline.png")
    page.close()


@pytest.mark.parametrize("width", [1200, 580, 450, 350])
def test_every_label_fits_its_width_and_none_overlaps(browser, tmp_path, minilm, width):
    """MiniLM's 72 heads at a wide page's, compare mode's halves and a phone's width: no text
    outside the drawing, no sideways scroll, no two labels on each other; the heads' numbers
    thinned as the columns narrow, the layers named under their heads throughout."""
    page, errors = page_of(browser, tmp_path, minilm, width)
    root = page.locator("[data-testid=head-fingerprint]")
    assert root.get_attribute("data-width") == str(width)
    assert root.evaluate("r => r.scrollWidth <= r.clientWidth")  # no sideways scroll
    plot = page.locator("[data-role=plot]")
    laid = plot.evaluate(LAID_OUT_JS)
    assert laid["width"] == width
    for role, left, top, right, bottom, _turned in laid["texts"]:
        assert left >= -0.5 and right <= width + 0.5, (role, left, right)
        assert top >= -0.5 and bottom <= laid["height"] + 0.5, (role, top, bottom)
    flat = [t for t in laid["texts"] if not t[5]]
    for i, a in enumerate(flat):
        for b in flat[i + 1 :]:
            apart = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
            assert apart, (a, b)
    # the heads' numbers: upright, 14 px apart at least, under the cells, above the layers' names
    ticks = root.evaluate(TICKS_JS)
    xs = [t[4] for t in ticks]
    assert all(b - a >= 14 - 0.01 for a, b in zip(xs, xs[1:], strict=False)), xs
    cells_bottom = max(top + h for _x, top, _w, h in cell_boxes(page, "row", "head").values())
    upright = [t for t in laid["texts"] if t[5]]
    names = [t for t in laid["texts"] if t[0] == "layer-label"]
    assert len(upright) == len(ticks)
    assert all(t[2] >= cells_bottom for t in upright)
    assert all(t[4] <= min(n[2] for n in names) for t in upright)
    shown = {1200: 72, 580: 24, 450: 18, 350: 0}[width]
    assert len(ticks) == shown
    numbers = {layer: [t[2] for t in ticks if t[1] == layer] for layer in range(LAYERS)}
    assert all(numbers[layer] == numbers[0] for layer in numbers), numbers  # alike in each layer
    assert not ticks or numbers[0][0] == 0
    said = page.locator("[data-role=layer-label]").all_text_contents()
    layer_name = "layer {}" if width == 1200 else "L{}"
    assert said == [layer_name.format(n) for n in range(LAYERS)]
    sizes = root.evaluate(FONT_SIZES_JS)
    assert min(sizes) >= 14, min(sizes)
    assert page.locator("[data-role=cell]").count() == 7 * 72
    assert not errors, errors
    page.screenshot(path=f"/tmp/head_fingerprint_{width}.png")
    page.close()


def test_in_arabic_the_figure_is_mirrored(browser, tmp_path, minilm):
    data = spoken_in(minilm, "ar", browser_words("ar"), "rtl")
    page, errors = page_of(browser, tmp_path, data, 580)
    root = page.locator("[data-testid=head-fingerprint]")
    assert root.get_attribute("dir") == "rtl" and root.get_attribute("lang") == "ar"
    cells = cell_boxes(page, "row", "head")
    # the first head on the right, the behaviours named right of the cells, the colour bar left
    assert cells[(0, 0)][0] > cells[(0, 1)][0] > cells[(0, 12)][0] + cells[(0, 12)][2]
    right = max(x + w for x, _y, w, _h in cells.values())
    left = min(x for x, _y, _w, _h in cells.values())
    assert right == pytest.approx(cells[(0, 0)][0] + cells[(0, 0)][2])
    row_labels = page.locator("[data-role=row-label]").evaluate_all(
        "ts => ts.map(t => t.getBoundingClientRect().left - t.ownerSVGElement"
        ".getBoundingClientRect().left)"
    )
    assert min(row_labels) >= right
    bar = page.locator("[data-role=colour-bar] rect").evaluate_all(BOX_JS)
    assert max(x + w for x, _y, w, _h in bar) < left
    ticks = root.evaluate(TICKS_JS)
    assert [x for *_t, x in ticks] == sorted((x for *_t, x in ticks), reverse=True)
    laid = page.locator("[data-role=plot]").evaluate(LAID_OUT_JS)
    for role, left_, _top, right_, _bottom, _turned in laid["texts"]:
        assert left_ >= -0.5 and right_ <= 580.5, (role, left_, right_)
    # the arrows follow the drawing: ← toward the last head
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    assert root.get_attribute("data-cell") == "0,2"
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-cell") == "0,1"
    # the mouse over a mirrored cell
    origin = page.locator("[data-role=plot]").bounding_box()
    x, y, w, h = cells[(2, 30)]
    page.mouse.move(origin["x"] + x + w / 2, origin["y"] + y + h / 2)
    assert root.get_attribute("data-cell") == "2,30"
    assert page.locator("[data-testid=figure-table-toggle]").inner_text() != "Show as a table"
    assert not errors, errors
    page.screenshot(path="/tmp/head_fingerprint_arabic.png")
    page.close()


def test_a_small_model_shows_every_number_flat_and_a_missing_value_grey(browser, tmp_path):
    grid = grid_of(2, 2)
    grid[3, 5] = np.nan  # punctuation of layer 1, head 1: none in the corpus
    data = data_of(2, 2, grid)
    page, errors = page_of(browser, tmp_path, data, 580)
    root = page.locator("[data-testid=head-fingerprint]")
    ticks = root.evaluate(TICKS_JS)
    assert [t[3] for t in ticks] == ["0", "1", "0", "1"]
    assert page.locator("[data-role=tick][transform]").count() == 0  # flat: they fit
    missing = page.locator("[data-role=cell][data-row='5'][data-head='3']")
    assert missing.get_attribute("fill") == "#d9d9d9"
    origin = page.locator("[data-role=plot]").bounding_box()
    x, y, w, h = cell_boxes(page, "row", "head")[(5, 3)]
    page.mouse.move(origin["x"] + x + w / 2, origin["y"] + y + h / 2)
    readout = page.locator("[data-role=readout]").inner_text()
    assert readout == "Layer 1, head 1 · punctuation: –"
    page.locator("[data-testid=figure-table-toggle]").click()
    last = page.locator("[data-testid=figure-table] tbody tr").last.evaluate(
        "r => [...r.cells].map(c => c.textContent)"
    )
    assert last[:2] == ["1", "1"] and last[2 + 5] == ""
    assert not errors, errors
    page.close()


def test_bad_data_is_a_message_not_an_error(browser, tmp_path, minilm):
    broken = {**minilm, "values": minilm["values"][:3]}
    page, errors = page_of(browser, tmp_path, broken)
    message = page.locator("[data-role=message]")
    assert message.inner_text() == "the heatmap does not have 7 x 72 values"
    assert page.locator("[data-role=cell]").count() == 0
    for bad, said in [
        ({**minilm, "heads": [[0, 0]] * 71 + [[0]]}, "the heads are not (layer, head) pairs"),
        ({**minilm, "zmax": 0}, "the colour scale from 0 to 0 is empty"),
        ({**minilm, "behaviours": []}, "nothing to draw"),
        ({**minilm, "heads": []}, "nothing to draw"),
    ]:
        page.evaluate("data => window.figure.update(data)", bad)
        assert message.inner_text() == said
        assert page.locator("[data-role=cell]").count() == 0
    page.evaluate("data => window.figure.update(data)", minilm)  # and back
    assert message.inner_text() == "" and page.locator("[data-role=cell]").count() == 7 * 72
    assert not errors, errors
    page.close()
