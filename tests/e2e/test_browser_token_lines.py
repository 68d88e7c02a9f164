"""token_lines.js from an offline file in Chromium, on a random model's LayerNorm statistics: every
series drawn in every plot through the data's own points, every token labelled, the keyboard and
the mouse choose a token whose values the readout gives as the data has them, the table and the
saved SVG hold the data, no label under 12 px, Arabic draws the first token on the right; and in
the page, the LayerNorm view draws it (no Plotly) and a new text draws its new tokens."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from app.i18n.browser import browser_words
from encoder.inspect.norms import layernorm_stats
from encoder.web import spoken_in
from encoder.web.hosts import LINES
from encoder.web.token_lines import layernorm_lines
from tests.e2e.harness import DEEP_FIND_JS, js_number
from tests.e2e.module_pages import module_page, small_trace

pytestmark = pytest.mark.browser

TEXT = "The <b>cat</b> sat & the dog ran."  # markup in the tokens stays text
LAYER = 1
# every text's computed font size in the figure, in px
FONT_SIZES_JS = """root => [...root.querySelectorAll("text, .tln-title, .tln-readout *")]
  .filter(node => node.textContent.trim())
  .map(node => parseFloat(getComputedStyle(node).fontSize))"""
# each tick's token and the middle of its anchor across the page: [token, x]
TICKS_JS = """root => [...root.querySelectorAll("[data-role=tick]")]
  .map(t => [Number(t.dataset.position), Number(t.getAttribute("x"))])"""
# the page's token lines' labels, in one string ("" before they are drawn)
PAGE_TICKS_JS = f"""() => {{
  const root = {DEEP_FIND_JS}(document, "[data-testid=token-lines]");
  if (!root) return "";
  return [...root.querySelectorAll("[data-role=tick]")].map(t => t.textContent).join(" ");
}}"""


@pytest.fixture(scope="module")
def norm_data() -> dict:
    cfg, batch, trace = small_trace(TEXT)
    stats = layernorm_stats(trace, cfg)
    return layernorm_lines(stats[stats["sentence"] == 0], batch.tokens[0], LAYER)


def page_of(browser, tmp_path, data: dict):
    return module_page(browser, tmp_path, LINES, data, "token-lines")


def test_the_lines_draw_the_datas_points_and_read_them_back(browser, tmp_path, norm_data):
    data = norm_data
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=token-lines]")
    tokens, series = data["tokens"], data["series"]
    assert len(series) == 4 and [s["name"] for s in series] == [
        "ln1 input", "ln1 output", "ln2 input", "ln2 output"
    ]  # fmt: skip
    assert root.get_attribute("data-positions") == str(len(tokens))
    assert root.get_attribute("aria-label") == data["title"]
    assert float(root.get_attribute("data-draw-ms")) < 100

    # a line a series and a plot, through one point a token, higher values drawn higher
    lines = page.locator("[data-role=line]")
    assert lines.count() == len(series) * len(data["panels"])
    for k, panel in enumerate(data["panels"]):
        for i in range(len(series)):
            line = page.locator(f"[data-panel='{k}'] [data-role=line][data-series='{i}']")
            ys = [float(y) for y in line.locator("circle").evaluate_all(
                "cs => cs.map(c => c.getAttribute('cy'))")]  # fmt: skip
            values = panel["values"][i]
            assert len(ys) == len(tokens)
            order = sorted(range(len(values)), key=lambda p: values[p])
            assert all(ys[a] >= ys[b] - 0.11 for a, b in zip(order, order[1:], strict=False)), (
                k,
                i,
            )

    # every token labelled, left to right, as text
    ticks = root.evaluate(TICKS_JS)
    assert [p for p, _x in ticks] == list(range(len(tokens)))
    assert [x for _p, x in ticks] == sorted(x for _p, x in ticks)
    labels = page.locator("[data-role=tick]").all_text_contents()
    assert "<" in "".join(labels) and page.locator("b, img").count() == 0

    # the keyboard: one Tab stop; → twice, End, ←; the readout gives the data's values
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-token") == "1"
    page.keyboard.press("End")
    page.keyboard.press("ArrowLeft")
    chosen = len(tokens) - 2
    assert root.get_attribute("data-token") == str(chosen)
    readout = page.locator("[data-role=readout]")
    assert f"“{tokens[chosen]}”, position {chosen}" in readout.inner_text()
    rows = readout.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    expected = [
        [s["name"], *(js_number(panel["values"][i][chosen]) for panel in data["panels"])]
        for i, s in enumerate(series)
    ]
    assert rows == expected
    page.keyboard.press("Escape")
    assert root.get_attribute("data-token") == ""

    # the mouse: over the third token's band
    box = page.locator("[data-role=plot]").bounding_box()
    x = next(x for p, x in ticks if p == 2)
    page.mouse.move(box["x"] + x, box["y"] + box["height"] / 2)
    assert root.get_attribute("data-token") == "2"

    # the table: a row a token, every series's every statistic
    page.locator("[data-testid=figure-table-toggle]").click()
    table = page.locator("[data-testid=figure-table]")
    body = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [row[:2] for row in body] == [[str(p), t] for p, t in enumerate(tokens)]
    ln2_output_std = [float(row[2 + len(series) + 3]) for row in body]
    assert ln2_output_std == data["panels"][1]["values"][3]

    # the saved drawing: an SVG document with every line and label
    page.locator("[data-testid=figure-save]").click()
    with page.expect_download() as saving:
        page.locator("[data-format=svg]").click()
    tree = ElementTree.parse(saving.value.path()).getroot()
    drawn = [e.text for e in tree.iter("{http://www.w3.org/2000/svg}text")]
    assert set(labels) <= set(drawn) and "ln2 output" in drawn

    sizes = root.evaluate(FONT_SIZES_JS)
    assert sizes and min(sizes) >= 12, min(sizes)
    assert not errors, errors
    page.screenshot(path="/tmp/token_lines_offline.png")
    page.close()


def test_in_arabic_the_first_token_is_on_the_right(browser, tmp_path, norm_data):
    data = spoken_in(norm_data, "ar", browser_words("ar"), "rtl")
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=token-lines]")
    assert root.get_attribute("dir") == "rtl" and root.get_attribute("lang") == "ar"
    ticks = root.evaluate(TICKS_JS)
    assert [x for _p, x in ticks] == sorted((x for _p, x in ticks), reverse=True)
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowLeft")  # toward the end of the sentence, drawn on the left
    page.keyboard.press("ArrowLeft")
    assert root.get_attribute("data-token") == "1"
    assert "الموضع 1" in page.locator("[data-role=readout]").inner_text()
    assert page.locator("[data-testid=figure-table-toggle]").inner_text() != "Show as a table"
    assert not errors, errors
    page.screenshot(path="/tmp/token_lines_arabic.png")
    page.close()


def test_bad_data_is_a_message_not_an_error(browser, tmp_path, norm_data):
    broken = {**norm_data, "panels": [{**norm_data["panels"][0], "values": [[1.0]]}]}
    page, errors = page_of(browser, tmp_path, broken)
    message = page.locator("[data-role=message]")
    assert message.inner_text() == (
        f'the plot "mean" does not have 4 x {len(norm_data["tokens"])} values'
    )
    assert page.locator("[data-role=line]").count() == 0 and not errors
    page.close()


def test_the_layernorm_view_draws_its_norms_as_token_lines(open_page):
    page, _ = open_page(view="LayerNorm", text="The cat sat on the mat.", num_layers="2")
    first = " ".join(["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"])
    page.wait_for_function(f"expected => ({PAGE_TICKS_JS})() === expected", arg=first)
    assert page.locator(".js-plotly-plot").count() == 0  # the tab draws no Plotly chart
    box = page.locator("[data-testid=stSidebar] .st-key-text textarea")
    box.fill("A dog ran.")
    box.press("Control+Enter")
    page.wait_for_function(
        f"expected => ({PAGE_TICKS_JS})() === expected", arg="[CLS] a dog ran . [SEP]"
    )
    page.screenshot(path="/tmp/token_lines_page.png")
