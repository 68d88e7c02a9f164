"""The explorer's still picture: one head's attention matrix as an SVG heatmap drawn in Python,
for where no browser-side module runs (a notebook saved with its outputs, opened on GitHub, in
nbviewer, or without its kernel).

Rows are queries, columns keys, each cell coloured by its weight on viridis over [0, 1] (the
stops of encoder/web/shared.js's VIRIDIS, read from that file: one home for the scale). Several
panels (A and B to compare) sit side by side, each titled. A matrix of more than MAX_DRAWN tokens
is drawn for its first MAX_DRAWN, and its caption says so. Every piece of user text (tokens,
titles, the sentence) is escaped; the SVG is plain XML with no script and no style sheet.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from encoder.web import asset

MAX_DRAWN = 64  # tokens a side drawn at most (64 x 64 = 4096 cells)
LABEL_CHARS = 14  # a token label's characters at most (longer ones end in "…")
FONT = 11  # px, titles and captions; a token label at most (no larger than its cell)
CHAR = 0.6  # an estimate of one character's width, in font sizes
MIN_CELL = 8  # px, a cell's side at least (64 tokens: 512 px a side)
MATRIX = 320  # px, the side a matrix aims at
GAP = 32  # px between panels
_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _viridis_stops() -> np.ndarray:
    """shared.js's VIRIDIS stops, [stops, 3] RGB."""
    found = re.search(r"const VIRIDIS = \[(.*?)\];", asset("shared.js"), re.S)
    if not found:
        raise RuntimeError("encoder/web/shared.js holds no VIRIDIS")
    numbers = [int(n) for n in re.findall(r"\d+", found.group(1))]
    return np.array(numbers, dtype=np.float64).reshape(-1, 3)


VIRIDIS = _viridis_stops()


def viridis(value: float) -> str:
    """Viridis at `value` in [0, 1] (clamped) as "#rrggbb", as shared.js's viridis()."""
    x = min(max(float(value), 0.0), 1.0) * (len(VIRIDIS) - 1)
    i = min(int(x), len(VIRIDIS) - 2)
    rgb = VIRIDIS[i] + (x - i) * (VIRIDIS[i + 1] - VIRIDIS[i])
    return "#" + "".join(f"{int(np.floor(c + 0.5)):02x}" for c in rgb)  # Math.round


def text(value: object) -> str:
    """User text for XML or HTML: escaped, with characters XML cannot hold as U+FFFD."""
    return html.escape(_INVALID_XML.sub("\ufffd", str(value)), quote=True)


def _label(token: str) -> str:
    token = str(token)
    return token if len(token) <= LABEL_CHARS else token[: LABEL_CHARS - 1] + "…"


@dataclass(frozen=True)
class Panel:
    """One matrix to draw: [query, key] weights over `tokens`, titled."""

    weights: np.ndarray
    tokens: Sequence[str]
    title: str


def heatmap_svg(panels: Sequence[Panel], title: str, description: str) -> str:
    """The panels side by side as one SVG: `title` as its <title>, `description` (a sentence
    of the numbers) as its aria-label, each panel with its title and its token labels."""
    if not panels:
        raise ValueError("a still picture needs at least one panel")
    drawn = [min(len(panel.tokens), MAX_DRAWN) for panel in panels]
    cell = max(MIN_CELL, min(24, MATRIX // max(drawn)))
    size = min(FONT, cell)  # the token labels' font size: one label per row, none overlapping
    longest = max(len(_label(t)) for panel in panels for t in panel.tokens[:MAX_DRAWN])
    label = CHAR * size * longest
    margin = int(label) + 8  # room for the row labels (left) and column labels (top)
    top = 22 + margin  # the panel's title, then the column labels
    titled = [margin + int(CHAR * (FONT + 2) * len(panel.title)) for panel in panels]
    widths = [max(margin + n * cell, t) for n, t in zip(drawn, titled, strict=True)]
    total = max(len(panel.tokens) for panel in panels)
    caption = "Rows: queries; columns: keys; colour: weight, 0 (dark purple) to 1 (yellow)."
    cut = f"The first {MAX_DRAWN} of {total} tokens are drawn." if total > MAX_DRAWN else ""
    captions = [line for line in (caption, cut) if line]
    width = sum(widths) + GAP * (len(panels) - 1) + 8
    width = max(width, 8 + int(CHAR * FONT * max(len(line) for line in captions)))
    height = top + max(drawn) * cell + 8 + 14 * len(captions)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{text(description)}" '
        f'font-family="system-ui, sans-serif" font-size="{FONT}">',
        f"<title>{text(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
    ]
    left = 0
    for panel, n, panel_width in zip(panels, drawn, widths, strict=True):
        parts.append(_panel(panel, n, cell, size, left + margin, top))
        left += panel_width + GAP
    for line, words in enumerate(captions):
        y = top + max(drawn) * cell + 16 + 14 * line
        parts.append(f'<text x="4" y="{y}" fill="#222222">{text(words)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _panel(panel: Panel, n: int, cell: int, size: int, x0: int, y0: int) -> str:
    weights = np.asarray(panel.weights, dtype=np.float64)[:n, :n]
    tokens = [_label(t) for t in panel.tokens[:n]]
    parts = [
        f'<text x="{x0}" y="14" font-size="{FONT + 2}" font-weight="bold" fill="#222222">'
        f"{text(panel.title)}</text>"
    ]
    for i, token in enumerate(tokens):
        middle = i * cell + cell / 2
        parts.append(  # the query's label, left of its row
            f'<text x="{x0 - 4}" y="{y0 + middle + size / 3:.1f}" text-anchor="end" '
            f'font-size="{size}" fill="#222222">{text(token)}</text>'
        )
        parts.append(  # the key's label, above its column, read bottom to top
            f'<text transform="translate({x0 + middle + size / 3:.1f},{y0 - 4}) rotate(-90)" '
            f'font-size="{size}" fill="#222222">{text(token)}</text>'
        )
    parts.append(
        f'<g class="cells" transform="translate({x0},{y0}) scale({cell})" '
        'shape-rendering="crispEdges">'
    )
    for q in range(n):
        for k in range(n):
            parts.append(
                f'<rect x="{k}" y="{q}" width="1" height="1" fill="{viridis(weights[q, k])}"/>'
            )
    parts.append("</g>")
    return "\n".join(parts)


def still_html(svg: str, sentences: Sequence[str]) -> str:
    """The still picture for an HTML output: the sentences, then the SVG inline; no script."""
    said = "".join(f"<p>{text(sentence)}</p>" for sentence in sentences)
    note = (
        "<p><small>A still picture of the attention explorer: run the cell to explore every "
        "layer and head.</small></p>"
    )
    return f'<div class="encoder-explorer-still">{said}\n{svg}\n{note}</div>'
