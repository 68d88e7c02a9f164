"""head_scatter.js from an offline file in Chromium: every point of a corpus drawn, hover shows
the token and its sentence as text, colourings switch in the browser; by keyboard the plane is one
Tab stop whose arrow keys move to the point the data says is nearest that way, named by a sentence
of its data; draw, hover and a key's move timed."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.corpus import MAX_TOKENS, bundled_corpus, corpus_of, corpus_statistics
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web.hosts import SCATTER, joined, scatter_style
from encoder.web.scatter import scatter_data
from tests.e2e.harness import scatter_hover_ms

pytestmark = pytest.mark.browser

DRAW_MS, HOVER_MS, KEY_MS = 200, 50, 50  # the targets
PROMPT = "Hover a point, or Tab to the plane"  # the readout when no point is shown

# a key's move, from the keydown to the next frame with the readout updated (median of 20)
KEY_MOVE_JS = """async (canvas) => {
    const times = [];
    for (let k = 0; k < 20; k++) {
      const t0 = performance.now();
      canvas.dispatchEvent(new KeyboardEvent("keydown", {
        key: k % 2 ? "ArrowLeft" : "ArrowRight", bubbles: true}));
      await new Promise(requestAnimationFrame);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return times[10];
}"""

# ArrowRight until the selection stops moving: [steps taken, where it stopped]
WALK_RIGHT_JS = """(canvas) => {
    const root = canvas.closest("[data-testid=head-scatter]");
    for (let steps = 0; ; steps++) {
      const before = root.dataset.selected;
      canvas.dispatchEvent(new KeyboardEvent("keydown", {key: "ArrowRight", bubbles: true}));
      if (root.dataset.selected === before) return [steps, Number(before)];
    }
}"""

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head><body>
<script type="application/json" id="data">{data}</script>
<script type="module">
{module}
const data = JSON.parse(document.getElementById("data").textContent);
window.scatter = mount(document.body, data, {{colour: "kind"}});
</script></body></html>"""


@pytest.fixture(scope="module")
def corpus_page(tmp_path_factory):
    sentences = bundled_corpus()
    sentences[0] = "<b>bold?</b> & <img src=x onerror=alert(1)>"  # user text stays text
    cfg = EncoderConfig(vocab_size=30522, d_model=32, num_heads=2, num_layers=1, d_ff=32)
    corpus = corpus_of(tokenize(sentences, load_tokenizer(), MAX_TOKENS))
    stats = corpus_statistics(TransformerEncoder(cfg).eval(), corpus)
    data = scatter_data(stats, corpus.sentences, 0, 1)
    # and where the keyboard starts (Home: the first point), a sentence that is markup too
    data["sentences"][data["sentence"][0]] = '<img src=y onerror="alert(2)"> & <i>first</i>'
    path = tmp_path_factory.mktemp("scatter") / "scatter.html"
    text = json.dumps(data).replace("</", "<\\/")
    path.write_text(
        PAGE.format(css=scatter_style(), data=text, module=joined(SCATTER)),
        encoding="utf-8",
    )
    return path, data


def test_the_scatter_draws_every_point_and_hovers_fast(browser, corpus_page):
    path, data = corpus_page
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: errors.append(dialog.message))
    page.goto(path.as_uri())
    root = page.locator("[data-testid=head-scatter]")
    root.wait_for()
    n = len(data["x"])
    assert n >= 5000
    assert all(len(str(v).partition(".")[2]) <= 4 for v in data["x"] + data["y"])  # 4 decimals
    assert root.get_attribute("data-points") == str(n)
    assert root.get_attribute("data-colour") == "kind"
    draw_ms = float(root.get_attribute("data-draw-ms"))
    assert draw_ms <= DRAW_MS, draw_ms

    hover_ms = scatter_hover_ms(page)
    assert hover_ms <= HOVER_MS, hover_ms
    print(f"\nscatter of {n} points: draw {draw_ms:.1f} ms, hover (median) {hover_ms:.1f} ms")

    # hover finds points: sweep until one is under the mouse, then check its text
    box = page.locator("[data-role=plane]").bounding_box()
    found = None
    for step in range(40):
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 12 + step * 13)
        found = root.get_attribute("data-hover")
        if found:
            break
    assert found, "no point under a vertical sweep through the middle"
    i = int(found)
    assert root.get_attribute("data-hover-token") == data["tokens"][i]
    assert root.get_attribute("data-hover-role") == ("query", "key")[data["role"][i]]
    shown = page.locator("[data-role=hover]").inner_text()
    assert data["sentences"][data["sentence"][i]] in shown

    page.locator("[data-role=colour][data-colour=position]").click()
    assert root.get_attribute("data-colour") == "position"
    assert (
        page.locator("[data-role=colour][data-colour=position]").get_attribute("aria-pressed")
        == "true"
    )
    assert page.locator("[data-role=legend]").inner_text().startswith("first token")
    assert page.locator("img").count() == 0 and not errors
    page.screenshot(path="/tmp/head_scatter_offline.png")
    page.close()


def test_bad_data_is_a_message_not_an_error(browser, tmp_path):
    path = tmp_path / "bad.html"
    path.write_text(
        PAGE.format(css="", data=json.dumps({"x": [1, 2], "y": [1]}), module=joined(SCATTER)),
        encoding="utf-8",
    )
    page = browser.new_page()
    page.goto(path.as_uri())
    message = page.locator("[data-role=message]")
    message.wait_for()
    assert message.inner_text() == "the scatter's y does not match its 2 points"
    assert page.locator("[data-testid=head-scatter]").get_attribute("data-points") == "0"
    page.close()


def test_the_corpus_view_hosts_the_scatter(open_page):
    """In the page (Custom Components v2): the bundled corpus on a small random model, every
    point drawn, hover shows a token of the corpus, the keyboard selects and clears a point."""
    query = {"view": "Heads across a corpus", "d_model": "32", "num_heads": "2", "num_layers": "2"}
    page, _ = open_page(**query)
    root = page.locator("[data-testid=head-scatter]")
    root.wait_for()
    assert int(root.get_attribute("data-points")) >= 5000
    assert page.get_by_text("computed in").count() == 1
    page.locator("[data-role=plane]").scroll_into_view_if_needed()
    box = page.locator("[data-role=plane]").bounding_box()
    for step in range(60):
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 12 + step * 9)
        if root.get_attribute("data-hover"):
            break
    token = root.get_attribute("data-hover-token")
    assert token and token in page.locator("[data-role=hover]").inner_text()
    page.locator("[data-role=plane]").focus()  # the keyboard's point, in the page too
    page.keyboard.press("Home")
    assert root.get_attribute("data-selected") == "0"
    page.keyboard.press("Escape")
    assert root.get_attribute("data-selected") == ""
    page.screenshot(path="/tmp/head_scatter_page.png")


def arrow(data: dict, start: int, key: str) -> int | None:
    """The point `key` selects from point `start`, from the data alone: among the points that
    way, the least distance along the arrow plus twice the distance across it (y up, one scale
    for both axes); None at the edge; the first of equals."""
    x, y = np.array(data["x"]), np.array(data["y"])
    dx, dy = x - x[start], y - y[start]
    along, across = {
        "ArrowRight": (dx, dy),
        "ArrowLeft": (-dx, dy),
        "ArrowUp": (dy, dx),
        "ArrowDown": (-dy, dx),
    }[key]
    cost = np.where(along > 0, along + 2 * np.abs(across), np.inf)
    return int(np.argmin(cost)) if np.isfinite(cost).any() else None


def contrast(one: str, other: str) -> float:
    """WCAG's contrast ratio of two CSS rgb() colours."""

    def luminance(colour: str) -> float:
        channels = [int(c) / 255 for c in re.findall(r"\d+", colour)[:3]]
        r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_scatter_is_one_keyboard_stop_named_by_its_data(browser, corpus_page):
    path, data = corpus_page
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("dialog", lambda dialog: (errors.append(dialog.message), dialog.dismiss()))
    page.goto(path.as_uri())
    root = page.locator("[data-testid=head-scatter]")
    root.wait_for()
    plane = page.locator("[data-role=plane]")
    readout = page.locator("[data-role=hover]")
    n = len(data["x"])

    # one Tab stop after the colour buttons, with a visible ring
    for _ in range(4):
        page.keyboard.press("Tab")
    assert plane.evaluate("(canvas) => canvas.getRootNode().activeElement === canvas")
    ring = plane.evaluate(
        "(c) => { const s = getComputedStyle(c); return [s.outlineStyle, s.outlineWidth, "
        "s.outlineColor, getComputedStyle(c.closest('.hsc')).backgroundColor]; }"
    )
    assert ring[0] == "solid" and float(ring[1][:-2]) >= 2, ring
    assert contrast(ring[2], ring[3]) >= 3, ring

    # its name: a sentence of the data's numbers
    assert root.get_attribute("role") == "figure"
    assert root.get_attribute("aria-label") == data["title"]
    assert plane.get_attribute("role") == "application"
    label = plane.get_attribute("aria-label")
    counts = re.search(r"of ([\d,]+) points, ([\d,]+) queries and ([\d,]+) keys", label)
    queries = sum(1 for r in data["role"] if r == 0)
    assert [int(c.replace(",", "")) for c in counts.groups()] == [n, queries, n - queries], label
    number = r"(-?\d+(?:\.\d+)?)"
    ranges = [float(v) for pair in re.findall(f"from {number} to {number}", label) for v in pair]
    expected = [min(data["x"]), max(data["x"]), min(data["y"]), max(data["y"])]
    assert np.allclose(ranges, expected, atol=0.005 + 1e-9), (label, expected)
    assert all(axis in label for axis in data["axes"]), label

    # Home: the first point, its hostile sentence shown as text
    page.keyboard.press("Home")
    assert root.get_attribute("data-selected") == "0"
    assert data["sentences"][data["sentence"][0]] in readout.inner_text()
    page.screenshot(path="/tmp/head_scatter_keyboard.png")
    assert page.locator("[data-role=selected-mark]").is_visible()

    # arrows: the point the data says is nearest that way, its token, sentence and place shown
    at = 0
    for key in ("ArrowRight", "ArrowDown", "ArrowDown", "ArrowLeft", "ArrowUp"):
        nearest = arrow(data, at, key)
        assert nearest is not None and nearest != at, key
        page.keyboard.press(key)
        assert root.get_attribute("data-selected") == str(nearest), key
        at = nearest
        shown = readout.inner_text()
        assert f"“{data['tokens'][at]}”" in shown
        assert data["sentences"][data["sentence"][at]] in shown
        x, y = re.search(r"x (\S+), y (\S+)", shown).groups()
        assert (float(x), float(y)) == pytest.approx((data["x"][at], data["y"][at]), abs=5e-5)

    key_ms = plane.evaluate(KEY_MOVE_JS)
    handler_ms = float(root.get_attribute("data-key-ms"))
    assert key_ms <= KEY_MS, key_ms
    print(
        f"\nkeyboard move over {n} points: {key_ms:.1f} ms to the next frame (median), "
        f"handler {handler_ms:.2f} ms"
    )

    # ArrowRight to the edge: the walk the data makes, then nothing happens
    page.keyboard.press("Home")
    walk, at = 0, 0
    while (nearest := arrow(data, at, "ArrowRight")) is not None:
        walk, at = walk + 1, nearest
    assert plane.evaluate(WALK_RIGHT_JS) == [walk, at]
    assert data["x"][at] == max(data["x"])

    # Escape clears the selection; and a mouse's hover readout with the focus elsewhere
    page.keyboard.press("Escape")
    assert root.get_attribute("data-selected") == ""
    assert readout.inner_text().startswith(PROMPT)
    assert not page.locator("[data-role=selected-mark]").is_visible()
    box = plane.bounding_box()
    for step in range(40):
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 12 + step * 13)
        if root.get_attribute("data-hover"):
            break
    assert root.get_attribute("data-hover")
    assert page.locator("[data-role=hover-mark]").is_visible()
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Escape")
    assert root.get_attribute("data-hover") == ""
    assert readout.inner_text().startswith(PROMPT)

    assert page.locator("img").count() == 0 and not errors
    page.close()


def test_the_scatter_is_a_table_and_saves_its_points(browser, corpus_page, tmp_path):
    path, data = corpus_page
    page = browser.new_page(accept_downloads=True)
    page.goto(path.as_uri())
    page.locator("[data-testid=head-scatter]").wait_for()
    page.locator("[data-role=plane]").focus()
    page.keyboard.press("Tab")  # the next stop after the plane: the table
    toggle = page.get_by_test_id("figure-table-toggle")
    assert toggle.evaluate("(b) => b.getRootNode().activeElement === b")
    page.keyboard.press("Enter")
    table = page.get_by_test_id("figure-table")
    assert toggle.get_attribute("aria-expanded") == "true" and table.is_visible()
    shown = table.locator("tbody tr").count()
    assert 0 < shown < len(data["x"])  # at most 20,000 cells drawn, and the caption says so
    assert table.locator("caption").inner_text().startswith(f"The first {shown} of ")
    first = table.locator("tbody tr").first.locator("th, td").all_inner_texts()
    role = "query" if data["role"][0] == 0 else "key"
    kind, sentence = data["kinds"][data["kind"][0]], data["sentences"][data["sentence"][0]]
    where = [js_float(data["x"][0]), js_float(data["y"][0])]
    assert first == [data["tokens"][0], role, str(data["position"][0]), kind, sentence, *where]
    page.get_by_test_id("figure-save").press("Enter")
    with page.expect_download() as saving:
        page.locator("[role=menuitem][data-format=csv]").press("Enter")
    rows = list(csv.reader(io.StringIO(Path(saving.value.path()).read_text(encoding="utf-8"))))
    assert rows[0] == ["token", "role", "position", "kind", "sentence", "x", "y"]
    assert len(rows) - 1 == len(data["x"])  # the CSV has every point
    assert [float(row[5]) for row in rows[1:]] == data["x"]
    assert [row[0] for row in rows[1:]] == data["tokens"]
    page.get_by_test_id("figure-save").press("Enter")
    with page.expect_download() as saving:
        page.locator("[role=menuitem][data-format=svg]").press("Enter")
    drawing = ElementTree.parse(saving.value.path()).getroot()
    title = drawing.find("{http://www.w3.org/2000/svg}title").text
    assert title == data["title"]
    assert drawing.find(".//{http://www.w3.org/2000/svg}image") is not None  # the plane


def js_float(value: float) -> str:
    """A float as JavaScript's String() writes it."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))
