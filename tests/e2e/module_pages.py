"""The figure modules (encoder/web's token_lines.js, value_histogram.js, top_units.js,
head_fingerprint.js, block_diagram.js) alone in Chromium: an offline page that mounts one of them
on the numbers of a small random model (or given data), as the page's host does, and collects
what goes wrong in it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.io.tokenize import TokenizedBatch, load_tokenizer, tokenize
from encoder.web.hosts import figure_style, joined
from encoder.web.offline import figure_html

# the module mounted on a host `width` px wide, as window.figure, from the data as JSON
PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head><body>
<div id="host" style="width: {width}px"></div>
<script type="application/json" id="data">{data}</script>
<script type="module">
{module}
const data = JSON.parse(document.getElementById("data").textContent);
window.figure = mount(document.getElementById("host"), data);
</script></body></html>"""
# a rect's box as drawn: [x, y, width, height]
BOX_JS = """rects => rects.map(r => ["x", "y", "width", "height"]
  .map(name => Number(r.getAttribute(name))))"""
# every text of a figure's drawing as the page lays it out, relative to the svg's box: [role,
# left, top, right, bottom, upright (turned)], and the svg's width and height
LAID_OUT_JS = """plot => {
  const at = plot.getBoundingClientRect();
  const texts = [...plot.querySelectorAll("text")].filter(t => t.textContent.trim()).map(t => {
    const box = t.getBoundingClientRect();
    return [t.dataset.role || t.parentNode.dataset.role || "", box.left - at.left, box.top - at.top,
      box.right - at.left, box.bottom - at.top, t.hasAttribute("transform")];
  });
  return { texts, width: at.width, height: at.height };
}"""
# Matplotlib's viridis at ten points, as shared.js has it
VIRIDIS = [
    (68, 1, 84), (72, 40, 120), (62, 74, 137), (49, 104, 142), (38, 130, 142),
    (31, 158, 137), (53, 183, 121), (110, 206, 88), (181, 222, 43), (253, 231, 37),
]  # fmt: skip
SMALL = EncoderConfig(vocab_size=30522, d_model=32, num_heads=2, num_layers=2, d_ff=64)


def small_trace(text: str) -> tuple[EncoderConfig, TokenizedBatch, object]:
    """One sentence through a small random model (seed 0): its config, its batch, its trace."""
    torch.manual_seed(0)
    model = TransformerEncoder(SMALL).eval()
    batch = tokenize([text], load_tokenizer(), 64)
    return SMALL, batch, model.trace(batch.input_ids, batch.attention_mask)


def module_page(browser, folder: Path, module: str, data: dict, testid: str, width: int = 900):
    """`module` (as the hosts join it, encoder/web/hosts.py) with its stylesheet, drawing
    `data` on a host `width` px wide in an offline page; (page, errors): what the page throws,
    logs as an error or opens as a dialog, as it comes. The figure is window.figure."""
    path = folder / f"{testid}.html"
    text = json.dumps(data).replace("</", "<\\/")  # the data cannot end its script element
    path.write_text(
        PAGE.format(css=figure_style(module), data=text, module=joined(module), width=width),
        encoding="utf-8",
    )
    page = browser.new_page(viewport={"width": width + 100, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("dialog", lambda dialog: (errors.append(dialog.message), dialog.dismiss()))
    page.goto(path.as_uri())
    page.locator(f"[data-testid={testid}]").wait_for()
    return page, errors


def offline_page(browser, folder: Path, module: str, data: dict, testid: str, viewport: dict):
    """`data` drawn by `module` in its offline file (encoder.web.offline.figure_html) opened from
    file:// in a page of `viewport`; (page, errors, requests): what goes wrong in it, as
    module_page, and every request and web socket it opens after it has loaded."""
    path = folder / f"{testid}.html"
    path.write_text(figure_html(module, data, testid, lang="en", direction="ltr"), "utf-8")
    page = browser.new_page(viewport=viewport)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    page.locator(f"[data-testid={testid}]").wait_for()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("websocket", lambda socket: requests.append(socket.url))
    return page, errors, requests


def overlapping(laid: dict) -> list:
    """The pairs of LAID_OUT_JS's flat texts that overlap, and the texts outside the drawing."""
    flat = [t for t in laid["texts"] if not t[5]]
    outside = [t for t in flat if t[1] < -0.5 or t[3] > laid["width"] + 0.5 or t[2] < -0.5
               or t[4] > laid["height"] + 0.5]  # fmt: skip
    pairs = [
        (a, b)
        for i, a in enumerate(flat)
        for b in flat[i + 1 :]
        if not (a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2])
    ]
    return outside + pairs


def viridis(value: float) -> tuple[int, int, int]:
    """Viridis at `value` in [0, 1], interpolated between the ten points (a heatmap cell's
    colour, as the modules compute it)."""
    x = min(max(value, 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(x), len(VIRIDIS) - 2)
    f = x - i
    return tuple(
        math.floor(a + f * (b - a) + 0.5) for a, b in zip(VIRIDIS[i], VIRIDIS[i + 1], strict=True)
    )


def channels(fill: str) -> tuple[int, ...]:
    """'rgb(1,2,3)' -> (1, 2, 3)."""
    return tuple(int(c) for c in fill.removeprefix("rgb(").removesuffix(")").split(","))


def cell_boxes(page, row: str, column: str) -> dict[tuple[int, int], list[float]]:
    """A heatmap module's cells ([data-role=cell]) by (data-`row`, data-`column`): each its box
    as drawn."""
    cells = page.locator("[data-role=cell]")
    keys = cells.evaluate_all(f"cs => cs.map(c => [+c.dataset.{row}, +c.dataset.{column}])")
    return {tuple(key): box for key, box in zip(keys, cells.evaluate_all(BOX_JS), strict=True)}
