"""top_units.js from an offline file in Chromium, on a random model's feed-forward units: a bar a
unit as long as its value, a cell a unit and a token in viridis of its value, the token's column
outlined, the keyboard and the mouse choose a cell whose value the readout gives as the data has
it, the table and the saved SVG hold the data, no label under 12 px, markup in the tokens stays
text, Arabic mirrors the figure, and bad data is a message."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from app.i18n.browser import browser_words
from encoder.inspect.activations import top_units
from encoder.web import spoken_in
from encoder.web.hosts import TOP_UNITS
from encoder.web.top_units import top_units_data
from tests.e2e.harness import js_number
from tests.e2e.module_pages import BOX_JS, cell_boxes, channels, module_page, small_trace, viridis

pytestmark = pytest.mark.browser

TEXT = "The <b>cat</b> sat & the dog ran."  # markup in the tokens stays text
LAYER = 1
TOKEN = 2  # "<"
SVG = "{http://www.w3.org/2000/svg}"
# every text's computed font size in the figure, in px
FONT_SIZES_JS = """root => [...root.querySelectorAll(
    "text, .tpu-title, .tpu-notes *, .tpu-readout")]
  .filter(node => node.textContent.trim())
  .map(node => parseFloat(getComputedStyle(node).fontSize))"""
# each tick's position and the x of its anchor: [position, x]
TICKS_JS = """root => [...root.querySelectorAll("[data-role=tick]")]
  .map(t => [Number(t.dataset.position), Number(t.getAttribute("x"))])"""


@pytest.fixture(scope="module")
def units_data() -> dict:
    _cfg, batch, trace = small_trace(TEXT)
    top = top_units(trace, 0, LAYER, token=TOKEN)
    return top_units_data(top.units, top.values, top.across_tokens, batch.tokens[0], TOKEN, LAYER)


def page_of(browser, tmp_path, data: dict, width: int = 900):
    return module_page(browser, tmp_path, TOP_UNITS, data, "top-units", width)


def test_the_bars_and_the_heatmap_draw_the_data_and_read_it_back(browser, tmp_path, units_data):
    data = units_data
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=top-units]")
    tokens, units, values, across = data["tokens"], data["units"], data["values"], data["across"]
    k, n = len(units), len(tokens)
    assert (k, n) == (10, 17) and tokens[TOKEN] == "<"
    assert root.get_attribute("role") == "figure"
    assert root.get_attribute("aria-label") == data["title"]
    assert data["title"] == "The 10 most active units of '<' (2) in block 1"
    assert page.locator(".tpu-title").inner_text() == data["title"]
    assert page.locator(".tpu-notes > div").all_text_contents() == data["notes"]
    assert (root.get_attribute("data-units"), root.get_attribute("data-tokens")) == ("10", "17")
    assert float(root.get_attribute("data-draw-ms")) < 100

    # the plot's name: its numbers, its largest value and unit
    plot = page.locator("[data-role=plot]")
    assert plot.get_attribute("tabindex") == "0" and plot.get_attribute("role") == "application"
    assert plot.get_attribute("aria-roledescription") == "heatmap"
    largest = max(range(k), key=lambda i: values[i])
    assert plot.get_attribute("aria-label").startswith(
        f"Bars of 10 units, the most active on “<” (position {TOKEN}), and a heatmap of the "
        f"same units on 17 tokens; the largest is {units[largest]}, {js_number(values[largest])}."
    )

    # a bar a unit, largest on top, its length in proportion to its value, its unit named
    bars = page.locator("[data-role=bar]")
    assert bars.count() == k
    boxes = bars.evaluate_all(BOX_JS)
    assert [b[1] for b in boxes] == sorted(b[1] for b in boxes)  # unit 0 on top
    assert values == sorted(values, reverse=True) and values[-1] > 0
    per_value = [b[2] / v for b, v in zip(boxes, values, strict=True)]
    assert max(per_value) == pytest.approx(min(per_value), rel=2e-3), per_value
    assert len({round(b[0], 1) for b in boxes}) == 1  # every bar from one zero
    assert page.locator("[data-role=label]").all_text_contents() == units
    assert bars.first.get_attribute("fill") == "#0072B2" == data["colour"]

    # a cell a unit and a token, coloured as viridis of its value between zmin and zmax
    cells = cell_boxes(page, "unit", "token")
    assert len(cells) == k * n
    zmin, zmax = data["zmin"], data["zmax"]
    assert zmin == min(0.0, min(min(row) for row in across))
    assert zmax == max(max(row) for row in across)
    fills = page.locator("[data-role=cell]").evaluate_all(
        "cs => Object.fromEntries(cs.map(c => "
        "[c.dataset.unit + ',' + c.dataset.token, c.getAttribute('fill')]))"
    )
    for unit, token in [(0, 0), (0, TOKEN), (3, 5), (k - 1, n - 1), (5, 11)]:
        want = viridis((across[unit][token] - zmin) / (zmax - zmin))
        got = channels(fills[f"{unit},{token}"])
        assert all(abs(a - b) <= 1 for a, b in zip(got, want, strict=True)), (unit, token)
    biggest = max(((u, t) for u in range(k) for t in range(n)), key=lambda c: across[c[0]][c[1]])
    assert channels(fills[f"{biggest[0]},{biggest[1]}"]) == (253, 231, 37)  # the top of the scale
    # columns left to right in token order, rows top to bottom in unit order; the bars left
    assert cells[(0, 1)][0] > cells[(0, 0)][0] and cells[(1, 0)][1] > cells[(0, 0)][1]
    assert cells[(0, 0)][0] > max(b[0] + b[2] for b in boxes)

    # the outlined column is the token's
    column = page.locator("[data-role=chosen-column]")
    assert column.get_attribute("data-token") == str(TOKEN)
    outline = column.locator("rect").last
    assert float(outline.get_attribute("x")) == pytest.approx(cells[(0, TOKEN)][0], abs=0.01)
    assert outline.get_attribute("stroke") == "#E69F00"

    # the token labels: left to right, as text (no markup made), the token's among them
    ticks = root.evaluate(TICKS_JS)
    assert [x for _p, x in ticks] == sorted(x for _p, x in ticks)
    assert TOKEN in [p for p, _x in ticks]
    labels = page.locator("[data-role=tick]").all_text_contents()
    assert labels == [tokens[p] for p, _x in ticks]
    assert "<" in labels and page.locator("b, img").count() == 0

    # the keyboard: one Tab stop; the first arrow, the token's largest unit, then the cells
    readout = page.locator("[data-role=readout]")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.role") == "plot"
    page.keyboard.press("ArrowDown")
    assert root.get_attribute("data-cell") == f"0,{TOKEN}"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-cell") == f"1,{TOKEN + 1}"
    t = TOKEN + 1
    assert readout.inner_text() == f"{units[1]}, token {t} “{tokens[t]}”: {js_number(across[1][t])}"
    page.keyboard.press("End")
    assert root.get_attribute("data-cell") == f"1,{n - 1}"
    page.keyboard.press("ArrowRight")  # the last stays
    assert root.get_attribute("data-cell") == f"1,{n - 1}"
    page.keyboard.press("Home")
    page.keyboard.press("PageDown")
    assert root.get_attribute("data-cell") == f"{k - 1},0"
    page.keyboard.press("ArrowUp")
    assert root.get_attribute("data-cell") == f"{k - 2},0"
    assert readout.inner_text() == (
        f"{units[k - 2]}, token 0 “{tokens[0]}”: {js_number(across[k - 2][0])}"
    )
    ring = page.locator("[data-role=ring]")
    assert ring.get_attribute("visibility") == "visible"
    inner = ring.locator("[data-edge=inner]")
    assert float(inner.get_attribute("x")) == pytest.approx(cells[(k - 2, 0)][0] + 1, abs=0.01)
    assert float(inner.get_attribute("y")) == pytest.approx(cells[(k - 2, 0)][1] + 1, abs=0.01)
    page.keyboard.press("Escape")
    assert root.get_attribute("data-cell") == "" and ring.get_attribute("visibility") == "hidden"

    # the mouse: a cell chooses itself; a bar, its unit on the outlined token
    origin = plot.bounding_box()
    x, y, w, h = cells[(3, 6)]
    page.mouse.move(origin["x"] + x + w / 2, origin["y"] + y + h / 2)
    assert root.get_attribute("data-cell") == "3,6"
    assert readout.inner_text() == f"{units[3]}, token 6 “<”: {js_number(across[3][6])}"
    x, y, w, h = boxes[4]
    page.mouse.move(origin["x"] + x + w / 2, origin["y"] + y + h / 2)
    assert root.get_attribute("data-cell") == f"4,{TOKEN}"
    assert readout.inner_text() == f"{units[4]}, token {TOKEN} “<”: {js_number(values[4])}"
    assert values[4] == across[4][TOKEN]

    # the table: a row a unit, its value on every token
    page.locator("[data-testid=figure-table-toggle]").click()
    table = page.locator("[data-testid=figure-table]")
    head = table.locator("thead th").all_text_contents()
    assert head == ["unit", *(f"{p} {token}" for p, token in enumerate(tokens))]
    body = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [row[0] for row in body] == units
    assert [[float(v) for v in row[1:]] for row in body] == across

    # the saved drawing: an SVG document with its title, every bar, cell and label
    page.locator("[data-testid=figure-save]").click()
    with page.expect_download() as saving:
        page.locator("[data-format=svg]").click()
    tree = ElementTree.parse(saving.value.path()).getroot()
    drawn = [e.text for e in tree.iter(f"{SVG}text")]
    assert set(labels) <= set(drawn) and set(units) <= set(drawn)
    assert data["title"] in drawn and data["scale"] in drawn
    roles = [e.get("data-role") for e in tree.iter(f"{SVG}rect")]
    assert roles.count("cell") == k * n and roles.count("bar") == k

    sizes = root.evaluate(FONT_SIZES_JS)
    assert sizes and min(sizes) >= 12, min(sizes)
    assert not errors, errors
    page.screenshot(path="/tmp/top_units_offline.png")

    # another token: the outline moves, the chosen cell is kept where it still fits
    moved = top_units_data_for(data, 5)
    page.evaluate("data => window.figure.update(data)", moved)
    assert page.locator("[data-role=chosen-column]").get_attribute("data-token") == "5"
    assert page.locator("[data-role=tick][data-position='5']").get_attribute("font-weight") == "700"
    assert not errors, errors
    page.close()


def top_units_data_for(data: dict, token: int) -> dict:
    """`data` with another token outlined (the same units: enough for the drawing)."""
    return {**data, "token": token, "values": [row[token] for row in data["across"]]}


def test_a_narrow_host_still_draws_every_cell(browser, tmp_path, units_data):
    page, errors = page_of(browser, tmp_path, units_data, width=360)
    page.evaluate("document.getElementById('host').style.width = '300px'")
    root = page.locator("[data-testid=top-units]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=top-units]').dataset.width === '300'"
    )
    assert page.locator("[data-role=cell]").count() == 10 * 17
    ticks = root.evaluate(TICKS_JS)
    gaps = [b - a for (_p, a), (_q, b) in zip(ticks, ticks[1:], strict=False)]
    assert TOKEN in [p for p, _x in ticks] and min(gaps) >= 14 * 1.3 - 0.01, gaps
    assert len(ticks) < 17  # thinned
    assert not errors, errors
    page.screenshot(path="/tmp/top_units_narrow.png")
    page.close()


def test_in_arabic_the_figure_is_mirrored(browser, tmp_path, units_data):
    data = spoken_in(units_data, "ar", browser_words("ar"), "rtl")
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=top-units]")
    assert root.get_attribute("dir") == "rtl" and root.get_attribute("lang") == "ar"
    ticks = root.evaluate(TICKS_JS)
    assert [x for _p, x in ticks] == sorted((x for _p, x in ticks), reverse=True)
    cells = cell_boxes(page, "unit", "token")
    bars = page.locator("[data-role=bar]").evaluate_all(BOX_JS)
    # the first token's column on the right, the bars right of the heatmap, growing leftwards
    assert cells[(0, 0)][0] > cells[(0, 1)][0]
    assert min(b[0] for b in bars) > cells[(0, 0)][0] + cells[(0, 0)][2]
    assert len({round(b[0] + b[2], 1) for b in bars}) == 1  # every bar from one zero, on the right
    assert bars[0][2] > bars[-1][2]
    names = page.locator("[data-role=label]").evaluate_all(
        "ts => ts.map(t => +t.getAttribute('x'))"
    )
    assert min(names) >= max(b[0] + b[2] for b in bars)
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowLeft")  # toward the end of the sentence, drawn on the left
    page.keyboard.press("ArrowLeft")
    assert root.get_attribute("data-cell") == f"0,{TOKEN + 2}"
    # the mouse over a mirrored cell
    origin = page.locator("[data-role=plot]").bounding_box()
    x, y, w, h = cells[(2, 1)]
    page.mouse.move(origin["x"] + x + w / 2, origin["y"] + y + h / 2)
    assert root.get_attribute("data-cell") == "2,1"
    assert page.locator("[data-testid=figure-table-toggle]").inner_text() != "Show as a table"
    assert not errors, errors
    page.screenshot(path="/tmp/top_units_arabic.png")
    page.close()


def test_bad_data_is_a_message_not_an_error(browser, tmp_path, units_data):
    n = len(units_data["tokens"])
    broken = {**units_data, "across": units_data["across"][:3]}
    page, errors = page_of(browser, tmp_path, broken)
    message = page.locator("[data-role=message]")
    assert message.inner_text() == f"the heatmap does not have 10 x {n} values"
    assert page.locator("[data-role=cell], [data-role=bar]").count() == 0
    for bad, said in [
        ({**units_data, "values": units_data["values"][:2]}, "the bars do not have 10 values"),
        ({**units_data, "token": n}, f"the token {n} is not one of the {n} positions"),
        ({**units_data, "tokens": []}, "nothing to draw"),
        ({**units_data, "units": []}, "nothing to draw"),
    ]:
        page.evaluate("data => window.figure.update(data)", bad)
        assert message.inner_text() == said
        assert page.locator("[data-role=cell]").count() == 0
    page.evaluate("data => window.figure.update(data)", units_data)  # and back
    assert message.inner_text() == "" and page.locator("[data-role=cell]").count() == 10 * n
    assert not errors, errors
    page.close()
