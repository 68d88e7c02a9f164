"""value_histogram.js from an offline file in Chromium, on a random model's values before GELU:
a bar a bin, as tall as its count, the bins below 0 in their colour, the x = 0 line where 0 is,
f(x) drawn through its points; the keyboard and the mouse choose a bin whose range, count and f
at its middle the readout gives as the data has them, the table and the saved SVG hold the data,
no label under 12 px, Arabic draws the most negative bin on the right, and bad data is a
message."""

from __future__ import annotations

from xml.etree import ElementTree

import numpy as np
import pytest

from app.i18n.browser import browser_words
from encoder.core.options import GATED_INNER
from encoder.inspect.activations import activation_curve, pre_activation_histogram
from encoder.web import spoken_in
from encoder.web.hosts import HISTOGRAM
from encoder.web.value_histogram import value_histogram_data
from tests.e2e.harness import js_number
from tests.e2e.module_pages import module_page, small_trace

pytestmark = pytest.mark.browser

TEXT = "The <b>cat</b> sat & the dog ran."
LAYER = 1
WIDTH = 640  # px: about the Activations view's column
# every text's computed font size in the figure, in px
FONT_SIZES_JS = """root => [...root.querySelectorAll("text, .vhs-title, .vhs-note, .vhs-readout *")]
  .filter(node => node.textContent.trim())
  .map(node => parseFloat(getComputedStyle(node).fontSize))"""
# each bar's [x, width, y, height, fill], by bin
BARS_JS = """root => [...root.querySelectorAll("[data-role=bar]")]
  .sort((a, b) => a.dataset.bin - b.dataset.bin)
  .map(r => [...["x", "width", "y", "height"].map(n => Number(r.getAttribute(n))),
    r.getAttribute("fill")])"""
# the x axis's labels: [value, x]
TICKS_JS = """root => [...root.querySelectorAll("[data-role=tick]")]
  .map(t => [Number(t.dataset.value), Number(t.getAttribute("x"))])"""


@pytest.fixture(scope="module")
def model_histogram() -> tuple[dict, int]:
    """The value histogram's data of block LAYER, and how many values it counts."""
    cfg, batch, trace = small_trace(TEXT)
    histogram = pre_activation_histogram(trace, 0, LAYER)
    curve_x, curve_y = activation_curve(
        "gelu", float(histogram.edges[0]), float(histogram.edges[-1])
    )
    name = GATED_INNER.get(cfg.activation, "GELU")
    title = f"Block {LAYER}: {len(batch.tokens[0])} tokens x {cfg.d_ff} units before {name}"
    notes = [f"{100 * histogram.share_negative:.1f}% of these values are below 0"]
    data = value_histogram_data(
        histogram.edges, histogram.counts, curve_x, curve_y, name, title, notes
    )
    return data, len(batch.tokens[0]) * cfg.d_ff


@pytest.fixture
def histogram_data(model_histogram) -> dict:
    return model_histogram[0]


def page_of(browser, tmp_path, data: dict, width: int = WIDTH):
    return module_page(browser, tmp_path, HISTOGRAM, data, "value-histogram",
                       width)  # fmt: skip


def bin_of(data: dict, at: float) -> int:
    """The bin holding `at` (its low edge included)."""
    return int(np.searchsorted(data["edges"], at, side="right")) - 1


def readout_of(data: dict, k: int) -> list[str]:
    """The readout's lines for bin `k`, computed here from the data."""
    low, high, count = data["edges"][k], data["edges"][k + 1], data["counts"][k]
    middle = (low + high) / 2
    value = float(np.interp(middle, data["curve"]["x"], data["curve"]["y"]))
    noun = "value" if count == 1 else "values"
    return [
        f"x from {js_number(low)} to {js_number(high)}: {count:,} {noun}",
        f"GELU(x) at {js_number(middle)}: {js_number(value)}",
    ]


def test_the_bars_and_the_curve_draw_the_data_and_read_it_back(browser, tmp_path, model_histogram):
    data, values = model_histogram
    edges, counts = data["edges"], data["counts"]
    bins = len(counts)
    assert bins == 60 and sum(counts) == values and min(edges) < 0 < max(edges)
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=value-histogram]")
    assert root.get_attribute("role") == "figure"
    assert root.get_attribute("aria-label") == data["title"]
    assert root.get_attribute("data-bins") == str(bins)
    assert float(root.get_attribute("data-draw-ms")) < 100
    assert page.locator("[data-role=note]").all_inner_texts() == data["notes"]
    plot = page.locator("[data-role=plot]")
    assert plot.get_attribute("tabindex") == "0" and plot.get_attribute("role") == "application"
    assert plot.get_attribute("aria-roledescription") == "histogram"
    below = sum(c for k, c in enumerate(counts) if (edges[k] + edges[k + 1]) / 2 < 0)
    assert plot.get_attribute("aria-label").startswith(
        f"Histogram of {sum(counts):,} values in {bins} bins, x from {js_number(edges[0])} to "
        f"{js_number(edges[-1])}; {below:,} of them in the bins below 0"
    )

    # a bar a bin, left to right, side by side, as tall as its count, coloured by its side of 0
    bars = root.evaluate(BARS_JS)
    assert len(bars) == bins
    xs = [x for x, _w, _y, _h, _f in bars]
    assert xs == sorted(xs)
    for (x, w, *_rest), (next_x, *_more) in zip(bars, bars[1:], strict=False):
        assert next_x == pytest.approx(x + w, abs=0.02)
    tallest = max(range(bins), key=lambda k: counts[k])
    per_count = bars[tallest][3] / counts[tallest]
    assert per_count > 1
    for k, (_x, _w, y, h, fill) in enumerate(bars):
        assert h == pytest.approx(counts[k] * per_count, abs=0.02), k
        assert y + h == pytest.approx(bars[0][2] + bars[0][3], abs=0.02)  # one base
        middle = (edges[k] + edges[k + 1]) / 2
        assert fill == (data["colours"]["below"] if middle < 0 else data["colours"]["above"]), k
    assert {f for *_r, f in bars} == {"#D55E00", "#0072B2"}

    # the x = 0 line within the bar that holds 0, where 0 falls between its edges
    zero = page.locator("[data-role=zero]")
    zero_x = float(zero.get_attribute("x1"))
    assert zero.get_attribute("x2") == zero.get_attribute("x1")
    k = bin_of(data, 0.0)
    x, w = bars[k][0], bars[k][1]
    assert x - 0.02 <= zero_x <= x + w + 0.02
    assert zero_x == pytest.approx(x + w * (0 - edges[k]) / (edges[k + 1] - edges[k]), abs=0.05)

    # the curve: a point each, left to right; f's 0 on the bars' base
    path = page.locator("[data-role=curve]").get_attribute("d")
    points = [tuple(map(float, p.split(","))) for p in path[1:].split("L")]
    assert len(points) == len(data["curve"]["x"])
    assert [px for px, _py in points] == sorted(px for px, _py in points)
    low_x, high_x = min(edges[0], data["curve"]["x"][0]), max(edges[-1], data["curve"]["x"][-1])
    plot_left, plot_right = points[0][0], points[-1][0]
    assert low_x == edges[0] and plot_left == pytest.approx(x_of := xs[0], abs=0.1), x_of
    assert plot_right == pytest.approx(bars[-1][0] + bars[-1][1], abs=0.1) and high_x
    base = bars[0][2] + bars[0][3]
    curve_y = data["curve"]["y"]
    zero_index = min(range(len(curve_y)), key=lambda i: abs(curve_y[i]))
    lowest, highest = data["ranges"]["curve"]
    pixels = (base - points[-1][1]) / curve_y[-1]  # px per unit of f
    assert points[zero_index][1] == pytest.approx(base - curve_y[zero_index] * pixels, abs=0.2)
    assert pixels == pytest.approx(300 / (highest - lowest), rel=1e-3)

    # the keyboard: one Tab stop; → twice, End, ←; the readout gives the data's numbers
    readout = page.locator("[data-role=readout]")
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-bin") == "1"
    assert readout.locator("div").all_inner_texts() == readout_of(data, 1)
    page.keyboard.press("End")
    page.keyboard.press("ArrowLeft")
    assert root.get_attribute("data-bin") == str(bins - 2)
    assert readout.locator("div").all_inner_texts() == readout_of(data, bins - 2)
    outline = page.locator("[data-role=outline]")
    assert outline.get_attribute("visibility") == "visible"
    assert float(outline.get_attribute("x")) == pytest.approx(bars[bins - 2][0], abs=0.02)
    page.keyboard.press("Home")
    assert root.get_attribute("data-bin") == "0"
    page.keyboard.press("Escape")
    assert root.get_attribute("data-bin") == ""
    assert outline.get_attribute("visibility") == "hidden"

    # the mouse: over the bar that holds 0, then over the tallest
    box = plot.bounding_box()
    for chosen in (k, tallest):
        page.mouse.move(box["x"] + bars[chosen][0] + bars[chosen][1] / 2, box["y"] + 200)
        assert root.get_attribute("data-bin") == str(chosen)
        assert readout.locator("div").all_inner_texts() == readout_of(data, chosen)

    # the table: a row a bin, its edges and count
    page.locator("[data-testid=figure-table-toggle]").click()
    body = page.locator("[data-testid=figure-table] tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [[float(a), float(b), int(c)] for a, b, c in body] == [
        [edges[k], edges[k + 1], counts[k]] for k in range(bins)
    ]
    head = page.locator("[data-testid=figure-table] thead th").all_inner_texts()
    assert head == ["from", "to", "how many values"]

    # the saved drawing: an SVG document with its title, notes, bars, curve and labels
    page.locator("[data-testid=figure-save]").click()
    with page.expect_download() as saving:
        page.locator("[data-format=svg]").click()
    tree = ElementTree.parse(saving.value.path()).getroot()
    svg = "{http://www.w3.org/2000/svg}"
    drawn = " ".join(e.text or "" for e in tree.iter(f"{svg}text"))
    for words in [data["title"], *data["notes"], *data["labels"].values()]:
        assert words in drawn, words
    assert len([r for r in tree.iter(f"{svg}rect") if r.get("data-role") == "bar"]) == bins
    assert any(p.get("data-role") == "curve" for p in tree.iter(f"{svg}path"))
    assert any(g.get("font-family") for g in tree.iter(f"{svg}g"))

    sizes = root.evaluate(FONT_SIZES_JS)
    assert sizes and min(sizes) >= 12, min(sizes)
    assert page.locator("b").count() == 0
    assert not errors, errors
    page.mouse.move(box["x"] + bars[k][0] + 1, box["y"] + 200)
    page.screenshot(path="/tmp/value_histogram_offline.png", full_page=True)
    page.close()


def test_in_arabic_the_most_negative_bin_is_on_the_right(browser, tmp_path, histogram_data):
    data = spoken_in(histogram_data, "ar", browser_words("ar"), "rtl")
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=value-histogram]")
    assert root.get_attribute("dir") == "rtl" and root.get_attribute("lang") == "ar"
    bars = root.evaluate(BARS_JS)
    xs = [x for x, _w, _y, _h, _f in bars]
    assert xs == sorted(xs, reverse=True)
    ticks = root.evaluate(TICKS_JS)
    assert len(ticks) >= 3
    assert [x for _v, x in ticks] == sorted((x for _v, x in ticks), reverse=True)
    zero_x = float(page.locator("[data-role=zero]").get_attribute("x1"))
    k = bin_of(histogram_data, 0.0)
    assert bars[k][0] - 0.02 <= zero_x <= bars[k][0] + bars[k][1] + 0.02
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowLeft")  # toward the larger values, drawn on the left
    page.keyboard.press("ArrowLeft")
    assert root.get_attribute("data-bin") == "1"
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-bin") == "0"
    assert page.locator("[data-testid=figure-table-toggle]").inner_text() != "Show as a table"
    sizes = root.evaluate(FONT_SIZES_JS)
    assert sizes and min(sizes) >= 12, min(sizes)
    assert not errors, errors
    page.screenshot(path="/tmp/value_histogram_arabic.png", full_page=True)
    page.close()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda d: {**d, "counts": d["counts"][:-1]}, "the histogram has 59 counts for 61 edges"),
        (
            lambda d: {**d, "curve": {"x": d["curve"]["x"], "y": d["curve"]["y"][:5]}},
            "the curve has 201 x and 5 y values",
        ),
        (lambda d: {**d, "counts": []}, "nothing to draw"),
    ],
)
def test_bad_data_is_a_message_not_an_error(browser, tmp_path, histogram_data, change, said):
    page, errors = page_of(browser, tmp_path, change(histogram_data))
    message = page.locator("[data-role=message]")
    assert message.inner_text().startswith(said)
    assert page.locator("[data-role=bar]").count() == 0 and not errors
    assert page.locator("[data-testid=value-histogram]").get_attribute("data-bins") == "0"
    page.close()
