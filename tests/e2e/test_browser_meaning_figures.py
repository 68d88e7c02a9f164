"""similarity_matrix.js and lens_grid.js in their offline files (encoder.web.offline.figure_html)
in Chromium: the cells drawn with the payload's values, the depth slider redrawing them in the
browser alone (no request, no socket; timed with performance.now and requestAnimationFrame), the
keyboard moving the chosen cell with the plot's focus visible, the table holding the numbers, the
lens's top five on focus, and no text on another or outside the drawing at a projector's and a
phone's width (screenshots in SHOTS)."""

from __future__ import annotations

import os
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from encoder.web.hosts import LENS, SIMILARITY
from encoder.web.lens_grid import lens_payload
from encoder.web.similarity_matrix import similarity_payload
from tests.e2e.module_pages import LAID_OUT_JS, channels, offline_page, overlapping, viridis

pytestmark = pytest.mark.browser

SVG = "{http://www.w3.org/2000/svg}"
SHOTS = Path(os.environ.get("ENCODER_SHOTS", "/tmp"))  # where the screenshots go
SENTENCES = [
    "The cat sat on the mat.",
    "A cat was sitting on a rug by the door.",
    "Stock markets fell sharply today.",
    "El gato duerme en la alfombra.",
]
DEPTHS = ["embeddings", *(f"after block {b}" for b in range(6))]
VIEWPORTS = {"projector": {"width": 1280, "height": 720}, "phone": {"width": 390, "height": 844}}
# the slider moved to `depth` as a reader's input does; the cells' values read at once, and the
# time to then (sync) and to the next frame (frame), in ms
SLIDE_JS = """([slider, depth]) => new Promise(done => {
  const t0 = performance.now();
  slider.value = String(depth);
  slider.dispatchEvent(new Event("input", { bubbles: true }));
  const sync = performance.now() - t0;
  const cells = [...document.querySelectorAll("[data-testid=similarity-cell][data-panel=a]")];
  const values = cells.map(c => [+c.dataset.row, +c.dataset.col, +c.dataset.value]);
  requestAnimationFrame(() => done({ sync, frame: performance.now() - t0, values }));
})"""
# in a drawing: the cells' rightmost edge, the first panel's row labels' leftmost, the first two
# cells' left edges
MIRRORED_JS = """(p, cell) => {
  const box = (node) => node.getBoundingClientRect();
  const cells = [...p.querySelectorAll(cell)].map(box);
  const first = "[data-role=row-label]:not([data-panel=b], [data-panel=difference])";
  const labels = [...p.querySelectorAll(first)].map(box);
  return { cells: Math.max(...cells.map(b => b.right)),
    labels: Math.min(...labels.map(b => b.left)), first: cells[0].left, second: cells[1].left };
}"""
CELLS_JS = """cs => cs.map(c => [+c.dataset.row, +c.dataset.col, +c.dataset.value,
  c.getAttribute("fill"), c.nextSibling.textContent])"""


def cosines(depths: int, seed: int) -> np.ndarray:
    """[depths, 4, 4] cosines of unit vectors; sentences 0 and 1 grow alike with depth."""
    x = np.random.default_rng(seed).normal(size=(depths, 4, 16))
    x[:, 1] += np.linspace(0, 3, depths)[:, None] * x[:, 0]
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return np.einsum("dik,djk->dij", x, x)


def diverging(value: float) -> tuple[int, ...]:
    """shared.js's blue-white-red at `value` in [-1, 1]."""
    end = (33, 102, 172) if value < 0 else (178, 24, 43)
    f = min(abs(value), 1.0)
    return tuple(int(np.floor(255 + f * (e - 255) + 0.5)) for e in end)


def similarity_data(compare: bool = False) -> dict:
    alike = np.full((4, 4), -1)
    alike[0, 1] = 3
    b = similarity_payload(cosines(7, 1), SENTENCES, DEPTHS, name="B") if compare else None
    return similarity_payload(cosines(7, 0), SENTENCES, DEPTHS, alike=alike, b=b)


def lens_data(layers: int = 6, masks: int = 3) -> dict:
    vocab = ["paris", "london", "the", "city", "france", "rome", "berlin", "a", "capital", "it"]
    p = np.random.default_rng(0).dirichlet(np.full(len(vocab), 0.3), size=(layers, masks))
    words = [
        [
            [{"token": vocab[i], "id": int(i), "probability": float(p[layer, m, i])} for i in o[:5]]
            for layer, o in enumerate(np.argsort(-p[:, m], axis=-1))
        ]
        for m in range(masks)
    ]
    fills = [{"position": 3 + 2 * m, "top": w[-1], "by_layer": w} for m, w in enumerate(words)]
    tokens = ["[CLS]", "the", "capital", "[MASK]", "of", "[MASK]", "is", "[MASK]", "[SEP]"]
    return lens_payload(fills, p, tokens, [f"after block {b}" for b in range(layers)])


def assert_laid_out(page, plot) -> None:
    """No text outside the drawing or on another, no sideways scroll, no text under 14 px."""
    laid = plot.evaluate(LAID_OUT_JS)
    assert overlapping(laid) == []
    root = page.locator(".svg-figure")
    assert root.evaluate("r => r.scrollWidth <= r.clientWidth + 1")
    sizes = plot.evaluate(
        "p => [...p.querySelectorAll('text')].map(t => +t.getAttribute('font-size'))"
    )
    assert min(sizes) >= 14


def focus_ring(page) -> dict:
    """The focused element's outline as drawn."""
    return page.evaluate(
        "() => { const s = getComputedStyle(document.activeElement);"
        " return { style: s.outlineStyle, width: s.outlineWidth, role: document.activeElement"
        ".dataset.role || document.activeElement.dataset.testid }; }"
    )


def test_the_similarity_matrix_draws_each_depth_in_the_browser_alone(browser, tmp_path, capsys):
    data = similarity_data()
    values = np.array(data["values"])
    page, errors, requests = offline_page(
        browser, tmp_path, SIMILARITY, data, "similarity-matrix", VIEWPORTS["projector"]
    )
    root = page.locator("[data-testid=similarity-matrix]")
    assert root.get_attribute("data-depth") == "6"  # it opens at the output
    cells = page.locator("[data-testid=similarity-cell][data-panel=a]").evaluate_all(CELLS_JS)
    assert len(cells) == 16
    for r, c, value, fill, printed in cells:
        assert value == values[6, r, c]
        want = diverging(value)
        assert all(abs(a - w) <= 1 for a, w in zip(channels(fill), want, strict=True)), (r, c)
        assert printed == f"{value:.2f}"  # 72 px cells: every value printed
    assert page.locator("[data-role=caption]").inner_text() == data["captions"][6]

    # the slider: each depth drawn at once, before the next frame, nothing sent anywhere
    slider = page.locator("[data-testid=depth-slider]")
    times = []
    for depth in (0, 3, 5):
        moved = page.evaluate(SLIDE_JS, [slider.element_handle(), depth])
        for r, c, value in moved["values"]:
            assert value == values[depth, r, c]
        assert root.get_attribute("data-depth") == str(depth)
        assert page.locator("[data-role=caption]").inner_text() == data["captions"][depth]
        times.append((moved["sync"], moved["frame"]))
    assert max(sync for sync, _ in times) < 16.7
    with capsys.disabled():
        print(f"\nsimilarity depth change: drawn in {[round(s, 2) for s, _ in times]} ms, next "
              f"frame at {[round(f, 2) for _, f in times]} ms")  # fmt: skip

    # the slider from the keyboard: a Tab stop, its arrows a depth each, its focus visible
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.testid") == "depth-slider"
    assert focus_ring(page)["style"] == "solid"
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-depth") == "1"
    assert slider.get_attribute("aria-valuetext") == "after block 0"

    # the plot: the next Tab stop; arrows move the chosen cell, a ring on it, its focus visible
    page.keyboard.press("Tab")
    assert focus_ring(page) == {"style": "solid", "width": "3px", "role": "plot"}
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    assert root.get_attribute("data-cell") == "1,1"
    page.keyboard.press("ArrowLeft")
    assert root.get_attribute("data-cell") == "1,0"
    readout = page.locator("[data-role=readout]").inner_text()
    assert readout == (
        f"Sentences 2 and 1, after block 0: cosine {values[1, 1, 0]:.3f}. "
        "It settles at depth 3 (after block 2)."
    )
    ring = page.locator("[data-role=ring] [data-edge=inner]")
    cell = page.locator("[data-panel=a][data-row='1'][data-col='0']")
    assert float(ring.get_attribute("x")) == pytest.approx(float(cell.get_attribute("x")) + 1)
    line = page.locator("[data-role=pair-line][data-a='0'][data-b='1']")
    assert line.get_attribute("stroke") == "#0072B2"  # the chosen pair's line

    # the table: a row a pair, a column a depth, the payload's numbers
    page.locator("[data-testid=figure-table-toggle]").click()
    table = page.locator("[data-testid=figure-table]")
    assert table.locator("thead th").all_text_contents() == ["pair", *DEPTHS]
    body = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    pairs = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    assert [row[0] for row in body] == [f"{a + 1} – {b + 1}" for a, b in pairs]
    for row, (a, b) in zip(body, pairs, strict=True):
        assert [float(v) for v in row[1:]] == values[:, a, b].tolist()
    # the saved drawing: the title, the depth's caption, every cell with its printed value
    page.locator("[data-testid=figure-save]").click()
    with page.expect_download() as saving:
        page.locator("[data-format=svg]").click()
    tree = ElementTree.parse(saving.value.path()).getroot()
    drawn = [e.text for e in tree.iter(f"{SVG}text")]
    assert data["title"] in drawn and data["captions"][1] in " ".join(t or "" for t in drawn)
    assert [e.get("data-row") for e in tree.iter(f"{SVG}rect")].count("1") == 4
    assert f"{values[1, 1, 0]:.2f}" in drawn
    assert_laid_out(page, page.locator("[data-role=plot]"))
    assert requests == [] and errors == []
    page.close()


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
@pytest.mark.parametrize("compare", [False, True], ids=["A", "compare"])
def test_the_similarity_matrix_lays_out_at_a_projectors_and_a_phones_width(
    browser, tmp_path, viewport, compare
):
    data = similarity_data(compare)
    page, errors, _ = offline_page(
        browser, tmp_path, SIMILARITY, data, "similarity-matrix", VIEWPORTS[viewport]
    )
    plot = page.locator("[data-role=plot]")
    assert_laid_out(page, plot)
    panels = page.locator("[data-testid=similarity-cell]").evaluate_all(
        "cs => [...new Set(cs.map(c => c.dataset.panel))]"
    )
    assert panels == (["a", "b", "difference"] if compare else ["a"])
    if compare:  # B − A drawn from the two payloads at the output
        a, b = np.array(data["values"][6]), np.array(data["b"]["values"][6])
        drawn = page.locator("[data-panel=difference][data-testid=similarity-cell]")
        for r, c, value, _fill, _printed in drawn.evaluate_all(CELLS_JS):
            assert value == pytest.approx(b[r, c] - a[r, c], abs=1e-9)
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    name = f"similarity{'-compare' if compare else ''}-{VIEWPORTS[viewport]['width']}.png"
    page.screenshot(path=str(SHOTS / name), full_page=True)
    assert errors == []
    page.close()


def test_the_lens_grid_draws_each_cells_top_word_and_its_top_five_on_focus(browser, tmp_path):
    data = lens_data()
    page, errors, requests = offline_page(
        browser, tmp_path, LENS, data, "lens-grid", VIEWPORTS["projector"]
    )
    root = page.locator("[data-testid=lens-grid]")
    cells = page.locator("[data-testid=lens-cell]").evaluate_all(
        "cs => cs.map(c => [+c.dataset.layer, +c.dataset.mask, c.dataset.token,"
        " +c.dataset.probability, c.getAttribute('fill'), c.nextSibling.textContent,"
        " c.nextSibling.nextSibling.textContent])"
    )
    assert len(cells) == 6 * 3
    for layer, mask, token, p, fill, word, printed in cells:
        assert token == data["top_tokens"][layer][mask][0] == word
        assert p == data["top_p"][layer][mask][0]
        assert printed == f"{p:.2f}"  # the number printed: colour is never the only carrier
        want = viridis(p)
        assert all(abs(a - w) <= 1 for a, w in zip(channels(fill), want, strict=True))
    last = page.locator("[data-role=row-label][data-prediction]")
    assert last.text_content() == "after block 5"
    assert page.locator("[data-role=prediction-label]").text_content() == "the prediction"

    # focus: the prediction of the first mask and its top five, with their probabilities
    page.keyboard.press("Tab")
    assert focus_ring(page) == {"style": "solid", "width": "3px", "role": "plot"}
    assert root.get_attribute("data-cell") == "5,0"

    def top_five() -> list:
        return page.locator("[data-testid=lens-top] [data-role=top-word]").evaluate_all(
            "items => items.map(i => [i.dataset.token, +i.dataset.probability,"
            " i.querySelector('.lens-p').textContent])"
        )

    def wanted(layer: int, mask: int) -> list:
        return [
            [t, p, f"{p:.3f}"]
            for t, p in zip(
                data["top_tokens"][layer][mask], data["top_p"][layer][mask], strict=True
            )
        ]

    assert top_five() == wanted(5, 0)
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowRight")
    assert root.get_attribute("data-cell") == "3,1"
    assert top_five() == wanted(3, 1)
    final = page.locator("[data-role=final]")
    predicted = data["top_tokens"][5][1][0]
    if predicted not in data["top_tokens"][3][1]:
        assert final.inner_text() == (
            f"The prediction, “{predicted}”, has {data['final'][3][1]:.4f} here."
        )
    page.keyboard.press("End")
    assert root.get_attribute("data-cell") == "5,1"

    # the table: a row a layer and a mask, its top five with their probabilities
    page.locator("[data-testid=figure-table-toggle]").click()
    body = page.locator("[data-testid=figure-table] tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert len(body) == 18
    layer, mask = 2, 1
    said = "; ".join(
        f"{t} {p:.4f}"
        for t, p in zip(data["top_tokens"][layer][mask], data["top_p"][layer][mask], strict=True)
    )
    assert body[layer * 3 + mask] == ["after block 2", "2", str(data["masks"][mask]), said]
    assert_laid_out(page, page.locator("[data-role=plot]"))
    assert requests == [] and errors == []
    page.close()


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_the_lens_grid_lays_out_at_a_projectors_and_a_phones_width(browser, tmp_path, viewport):
    page, errors, _ = offline_page(
        browser, tmp_path, LENS, lens_data(), "lens-grid", VIEWPORTS[viewport]
    )
    assert_laid_out(page, page.locator("[data-role=plot]"))
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowUp")
    assert page.locator("[data-testid=lens-top] li").count() == 5
    page.screenshot(path=str(SHOTS / f"lens-{VIEWPORTS[viewport]['width']}.png"), full_page=True)
    assert errors == []
    page.close()


@pytest.mark.parametrize("module", [SIMILARITY, LENS])
def test_in_arabic_each_figure_is_mirrored_and_laid_out(browser, tmp_path, module):
    """Right to left: the rows named on the right of their cells, the first column on the right,
    the module's own words in Arabic, nothing overlapping."""
    from app import i18n
    from app.i18n.browser import browser_words
    from app.page.figures import told_all
    from encoder.web import spoken_in

    i18n.speak_with(lambda: "ar")
    try:
        data = similarity_data(True) if module == SIMILARITY else lens_data()
        data = spoken_in(told_all(data), "ar", browser_words("ar"), "rtl")
    finally:
        i18n.speak_with(lambda: "en")
    testid = "similarity-matrix" if module == SIMILARITY else "lens-grid"
    page, errors, _ = offline_page(browser, tmp_path, module, data, testid, VIEWPORTS["projector"])
    plot = page.locator("[data-role=plot]")
    assert_laid_out(page, plot)
    cell = (
        "[data-panel=a][data-testid=similarity-cell]"
        if module == SIMILARITY
        else "[data-testid=lens-cell]"
    )
    boxes = plot.evaluate(MIRRORED_JS, cell)
    assert boxes["labels"] >= boxes["cells"] and boxes["first"] > boxes["second"]
    assert (
        page.locator("[data-testid=figure-table-toggle]").inner_text()
        == browser_words("ar")["Show as a table"]
    )
    assert errors == []
    page.close()
