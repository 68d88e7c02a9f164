"""block_diagram.js from an offline file in Chromium, on block_diagram_data of a small model: a box
a step and a ⊕ an add, the shape leaving each step beside its arrow, the residual paths and the
frames, the keyboard and the mouse choose a step whose output the readout gives, the table and
the saved SVG hold the steps, no label under 14 px, nothing outside the drawing or on another
label at a phone's width and a wide page's, Arabic mirrors the figure, and bad data is a
message."""

from __future__ import annotations

from xml.etree import ElementTree

import pytest

from app.i18n.browser import browser_words
from encoder.core.block import block_ops
from encoder.core.config import EncoderConfig
from encoder.web import spoken_in
from encoder.web.block_diagram import block_diagram_data
from encoder.web.hosts import DIAGRAM
from tests.e2e.module_pages import SMALL, module_page

pytestmark = pytest.mark.browser

T = 11
SVG = "{http://www.w3.org/2000/svg}"
# a ModernBERT-like block on a long input: RoPE, a gate, no first norm, notes, wide shapes
MODERN = EncoderConfig(
    d_model=768, num_heads=12, d_ff=1152, num_layers=22, positional="rope", activation="geglu",
    linear_bias=False, norm_bias=False, attention_window=128, global_every=3,
    first_attention_norm=False,
)  # fmt: skip
# every text's computed font size in the figure, in px
FONT_SIZES_JS = """root => [...root.querySelectorAll("text, .bdg-title, .bdg-readout")]
  .filter(node => node.textContent.trim())
  .map(node => parseFloat(getComputedStyle(node).fontSize))"""
# the plot's box, and every text's box as drawn on the page: [role, step, left, top, right, bottom]
TEXT_BOXES_JS = """root => {
  const plot = root.querySelector("[data-role=plot]").getBoundingClientRect();
  const texts = [...root.querySelectorAll("[data-role=plot] text")].map(t => {
    const r = t.getBoundingClientRect();
    const role = t.closest("[data-role]").dataset.role;
    const step = t.closest("[data-step]") ? t.closest("[data-step]").dataset.step : "";
    return [role, step, r.left, r.top, r.right, r.bottom];
  });
  return {plot: [plot.left, plot.top, plot.right, plot.bottom], texts,
          scroll: [root.scrollWidth, root.clientWidth]};
}"""
# each box's rect and its text's box: [step, [rect l, t, r, b], [text l, t, r, b]]
BOX_TEXTS_JS = """root => [...root.querySelectorAll("[data-role=box]")].map(b => {
  const r = b.querySelector("rect").getBoundingClientRect();
  const t = b.querySelector("text").getBoundingClientRect();
  return [b.dataset.step, [r.left, r.top, r.right, r.bottom], [t.left, t.top, t.right, t.bottom]];
})"""
# each edge label's texts, as drawn: a line's texts (one y) joined by two spaces, lines by " / "
EDGE_TEXTS_JS = """root => [...root.querySelectorAll("[data-role=edge-label]")].map(e => {
  const lines = new Map();
  for (const t of e.querySelectorAll("text")) {
    const y = t.getAttribute("y");
    lines.set(y, [...(lines.get(y) || []), t.textContent]);
  }
  return [+e.dataset.step, [...lines.values()].map(parts => parts.join("  ")).join(" / ")];
})"""


def data_of(cfg: EncoderConfig = SMALL, length: int = T) -> dict:
    return block_diagram_data(block_ops(cfg, 0, 1, length), cfg)


def page_of(browser, tmp_path, data: dict, width: int = 900):
    return module_page(browser, tmp_path, DIAGRAM, data, "block-diagram", width)


def words(text: str) -> str:
    """`text` as a box draws it: its words, one space apart (a line a tspan)."""
    return " ".join(text.split())


def edge_words(node: dict) -> str:
    return f"{node['label']}  {node['shape']}" if node["label"] else node["shape"]


def assert_fits(page) -> None:
    """Every label inside the plot, none on another, every box's text inside its box, and no
    sideways scroll."""
    root = page.locator("[data-testid=block-diagram]")
    found = root.evaluate(TEXT_BOXES_JS)
    left, top, right, bottom = found["plot"]
    texts = found["texts"]
    assert texts
    for role, step, x0, y0, x1, y1 in texts:
        assert x0 >= left - 0.5 and x1 <= right + 0.5, (role, step, x0, x1, left, right)
        assert y0 >= top - 0.5 and y1 <= bottom + 0.5, (role, step, y0, y1, top, bottom)
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            apart = a[4] <= b[2] + 0.5 or b[4] <= a[2] + 0.5 or a[5] <= b[3] + 0.5
            apart = apart or b[5] <= a[3] + 0.5
            assert apart, (a, b)
    for step, rect, text in root.evaluate(BOX_TEXTS_JS):
        assert rect[0] < text[0] and text[2] < rect[2], (step, rect, text)
        assert rect[1] < text[1] and text[3] < rect[3], (step, rect, text)
    scroll, client = found["scroll"]
    assert scroll <= client, (scroll, client)


def test_the_steps_are_drawn_and_read_back(browser, tmp_path):
    data = data_of()
    nodes = data["nodes"]
    n = len(nodes)
    page, errors = page_of(browser, tmp_path, data)
    root = page.locator("[data-testid=block-diagram]")
    assert root.get_attribute("role") == "figure"
    assert root.get_attribute("aria-label") == data["title"]
    assert page.locator(".bdg-title").inner_text() == data["title"]
    assert root.get_attribute("data-steps") == str(n) == "12"
    assert float(root.get_attribute("data-draw-ms")) < 100
    assert root.get_attribute("data-width") == "900"

    plot = page.locator("[data-role=plot]")
    assert plot.get_attribute("tabindex") == "0" and plot.get_attribute("role") == "application"
    assert plot.get_attribute("aria-roledescription") == "block diagram"
    assert plot.get_attribute("aria-label").startswith(
        "A block diagram of 12 steps, top to bottom, from the block's input to its output;"
    )

    # a box a step (the input's and the output's dotted), a ⊕ an add, top to bottom
    boxes = page.locator("[data-role=box]")
    adds = page.locator("[data-role=add]")
    assert boxes.count() == n - 2 and adds.count() == 2
    kinds = {
        int(s): k
        for s, k in boxes.evaluate_all("bs => bs.map(b => [b.dataset.step, b.dataset.kind])")
    }
    assert kinds == {i: node["kind"] for i, node in enumerate(nodes) if node["kind"] != "add"}
    assert [int(s) for s in adds.evaluate_all("as => as.map(a => a.dataset.step)")] == [
        i for i, node in enumerate(nodes) if node["kind"] == "add"
    ]
    tops = boxes.evaluate_all("bs => bs.map(b => +b.querySelector('rect').getAttribute('y'))")
    assert tops == sorted(tops)
    texts = boxes.evaluate_all(
        "bs => bs.map(b => [...b.querySelectorAll('tspan')].map(t => t.textContent).join(' '))"
    )
    assert texts == [words(node["text"]) for node in nodes if node["kind"] != "add"]
    assert texts[0] == "block input x" and texts[-1] == "block output"
    dashes = boxes.evaluate_all(
        "bs => bs.map(b => b.querySelector('rect').getAttribute('stroke-dasharray'))"
    )
    assert dashes[0] == dashes[-1] == "2 4" and dashes[1] == "none"
    fills = boxes.evaluate_all("bs => bs.map(b => b.querySelector('rect').getAttribute('fill'))")
    assert fills[1] == data["fills"]["norm"] and fills[2] == data["fills"]["attn"]

    # the shape leaving each step but the last, beside its arrow
    edges = root.evaluate(EDGE_TEXTS_JS)
    assert [step for step, _text in edges] == list(range(n - 1))
    assert [text for _step, text in edges] == [edge_words(node) for node in nodes[:-1]]
    assert edges[2][1] == "Q, K, V  [1, 2, 11, 16]" and edges[3][1] == "weights  [1, 2, 11, 11]"
    assert page.locator("[data-role=arrow]").count() == n - 1

    # the residual paths, the frames and their names
    skips = page.locator("[data-role=skip]")
    assert (
        skips.evaluate_all("ss => ss.map(s => [+s.dataset.from, +s.dataset.into])") == data["skips"]
    )
    assert skips.locator("text").all_text_contents() == ["residual", "residual"]
    assert skips.locator("path").first.get_attribute("stroke") == "#0072B2"
    groups = page.locator("[data-role=group]")
    assert groups.evaluate_all("gs => gs.map(g => g.dataset.kind)") == ["attn", "ffn"]
    names = page.locator("[data-role=group-name]").all_text_contents()
    assert names == ["multi-head self-attention", "feed-forward network"]
    assert page.locator("[data-role=note]").count() == 0  # a plain block: no notes

    # the keyboard: one Tab stop; ↓ and ↑ step, Home and End, Escape clears
    readout = page.locator("[data-role=readout]")
    assert readout.inner_text().startswith("Hover a step")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.role") == "plot"
    page.keyboard.press("ArrowDown")
    assert root.get_attribute("data-step") == "0"
    assert readout.inner_text() == "Step 1 of 12, block input x: [1, 11, 32]"
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert root.get_attribute("data-step") == "3"
    assert readout.inner_text() == (
        "Step 4 of 12, softmax(Q Kᵀ / √dₖ): its output, weights [1, 2, 11, 11]"
    )
    ring = page.locator("[data-role=ring]")
    assert ring.get_attribute("visibility") == "visible"
    chosen = page.locator("[data-role=edge-label][data-step='3']")
    assert chosen.get_attribute("font-weight") == "700"
    assert page.locator("[data-role=edge-label][data-step='2']").get_attribute("font-weight") == (
        "400"
    )
    page.keyboard.press("ArrowUp")
    assert root.get_attribute("data-step") == "2"
    page.keyboard.press("End")
    assert root.get_attribute("data-step") == "11"
    assert readout.inner_text() == "Step 12 of 12, block output: [1, 11, 32]"
    page.keyboard.press("ArrowDown")  # the last stays
    assert root.get_attribute("data-step") == "11"
    add = data["skips"][0][1]
    for _ in range(11 - add):
        page.keyboard.press("ArrowUp")
    assert readout.inner_text() == f"Step {add + 1} of 12, residual add: its output, [1, 11, 32]"
    page.keyboard.press("Home")
    assert root.get_attribute("data-step") == "0"
    page.keyboard.press("Escape")
    assert root.get_attribute("data-step") == "" and ring.get_attribute("visibility") == "hidden"
    assert readout.inner_text().startswith("Hover a step")

    # the mouse over a box, over an add
    for step in (7, add):
        target = page.locator(f"[data-step='{step}']:is([data-role=box], [data-role=add])")
        target.hover()
        assert root.get_attribute("data-step") == str(step)

    # the table: a row a step, its number, what it does, its output
    page.locator("[data-testid=figure-table-toggle]").click()
    table = page.locator("[data-testid=figure-table]")
    assert table.locator("thead th").all_text_contents() == ["step", "what it does",
                                                             "output shape"]  # fmt: skip
    body = table.locator("tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert body == [
        [str(i + 1), node["text"], f"{node['label']} {node['shape']}".strip()]
        for i, node in enumerate(nodes)
    ]

    # the saved drawing: an SVG document with its title, every box's text and every shape
    page.locator("[data-testid=figure-save]").click()
    with page.expect_download() as saving:
        page.locator("[data-format=svg]").click()
    tree = ElementTree.parse(saving.value.path()).getroot()
    drawn = {"".join(e.itertext()) for e in tree.iter(f"{SVG}text")}
    assert data["title"] in drawn
    assert {words(node["text"]) for node in nodes if node["kind"] != "add"} <= drawn
    assert {edge_words(node) for node in nodes[:-1]} <= drawn

    sizes = root.evaluate(FONT_SIZES_JS)
    assert sizes and min(sizes) >= 14, min(sizes)
    assert_fits(page)
    assert not errors, errors
    page.close()


@pytest.mark.parametrize("width", [350, 900])
def test_a_long_modern_block_fits_a_phone_and_a_wide_page(browser, tmp_path, width):
    data = data_of(MODERN, 512)
    page, errors = page_of(browser, tmp_path, data, width)
    root = page.locator("[data-testid=block-diagram]")
    assert root.get_attribute("data-width") == str(width)
    assert page.locator("[data-role=box]").count() == len(data["nodes"]) - 2
    # the notes: each architecture note under the block, wrapped where it is long
    notes = page.locator("[data-role=note]").evaluate_all(
        "ns => ns.map(n => [+n.dataset.note, n.textContent])"
    )
    joined = [
        " ".join(text for k, text in notes if k == index) for index in range(len(data["notes"]))
    ]
    assert joined == [" ".join(note.split()) for note in data["notes"]] and len(joined) == 4
    assert page.locator("[data-role=bullet]").count() == 4
    # the gate's edge: its label and shape, on one line or two
    edges = dict(root.evaluate(EDGE_TEXTS_JS))
    gate = next(i for i, node in enumerate(data["nodes"]) if node["label"] == "input, gate")
    assert edges[gate] in ("input, gate  [1, 512, 2304]", "input, gate / [1, 512, 2304]")
    sizes = root.evaluate(FONT_SIZES_JS)
    assert min(sizes) >= 14, min(sizes)
    assert_fits(page)
    page.screenshot(path=f"/tmp/block_diagram_{width}.png", full_page=True)
    assert not errors, errors
    page.close()


def test_in_arabic_the_figure_is_mirrored(browser, tmp_path):
    data = spoken_in(data_of(MODERN, 512), "ar", browser_words("ar"), "rtl")
    for width in (350, 900):
        page, errors = page_of(browser, tmp_path, data, width)
        root = page.locator("[data-testid=block-diagram]")
        assert root.get_attribute("dir") == "rtl" and root.get_attribute("lang") == "ar"
        plot = page.locator("[data-role=plot]").bounding_box()
        middle = plot["x"] + plot["width"] / 2
        # the boxes toward the right, the residual paths right of them, their word on the right
        boxes = [
            page.locator(f"[data-role=box][data-step='{i}'] rect").bounding_box()
            for i in (0, len(data["nodes"]) - 1)
        ]
        box_right = boxes[0]["x"] + boxes[0]["width"]
        assert abs(plot["x"] + plot["width"] - 56 - box_right) <= 1.5  # its stroke: 1 px out
        words = page.locator("[data-role=skip] text").first.bounding_box()
        assert words["x"] > box_right
        assert page.locator("[data-role=skip] text").first.text_content() == data["residual"]
        # the shapes left of the arrows: each edge's texts end left of the arrow's line
        arrow = page.locator("[data-role=arrow]").first.bounding_box()
        for edge in page.locator("[data-role=edge-label]").all():
            found = edge.bounding_box()
            assert found["x"] + found["width"] <= arrow["x"], found
        # the notes anchored on the right
        note = page.locator("[data-role=note]").first.bounding_box()
        if width == 900:
            assert note["x"] + note["width"] > middle
        assert page.locator("[data-testid=figure-table-toggle]").inner_text() != "Show as a table"
        # the keyboard: ↓ still goes down the block
        page.keyboard.press("Tab")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        assert root.get_attribute("data-step") == "1"
        # the readout's shape isolated left to right (else read "[64 ,512 ,12 ,1]")
        readout = page.locator("[data-role=readout]").text_content()
        assert f"\u2066{data['nodes'][1]['shape']}\u2069" in readout, readout
        assert_fits(page)
        page.screenshot(path=f"/tmp/block_diagram_arabic_{width}.png", full_page=True)
        assert not errors, errors
        page.close()


def test_bad_data_is_a_message_not_an_error(browser, tmp_path):
    data = data_of()
    page, errors = page_of(browser, tmp_path, {**data, "nodes": []})
    message = page.locator("[data-role=message]")
    assert message.inner_text() == "nothing to draw"
    assert page.locator("[data-role=box]").count() == 0
    for bad, said in [
        ({**data, "skips": [[0, 3]]}, "the residual path [0,3] does not end in an add below it"),
        ({**data, "groups": [{"kind": "attn", "first": 4, "last": 40}]},
         "the group attn does not frame steps of the diagram"),
        ({**data, "nodes": [{"kind": "box"}]}, "the step 0 is not a box of the diagram"),
    ]:  # fmt: skip
        page.evaluate("data => window.figure.update(data)", bad)
        assert message.inner_text() == said
        assert page.locator("[data-role=box]").count() == 0
    page.evaluate("data => window.figure.update(data)", data)  # and back
    assert message.inner_text() == "" and page.locator("[data-role=box]").count() == 10
    assert not errors, errors
    page.close()
