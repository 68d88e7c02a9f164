"""The offline files work opened from file:// with the network off: the explorer file draws, a
tile opens its head, the readout names it, and user text stays text; the lesson handout's
attention steps hold the same explorer, opened on the step's head."""

from __future__ import annotations

import csv
import io
import os
import re
import struct
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest
import torch

from app.lesson.handout import lesson_html
from app.lesson.steps import STEPS, TITLES
from app.lesson.steps.block import COST, FEED_FORWARD, LAYERNORM
from app.lesson.steps.training import RACE
from app.lesson.text import Lesson
from app.page.figures import Drawn, told_all
from app.run_cache import run_for
from app.sources import built_in, pretrained_config
from encoder.web import hosts
from encoder.web.offline import explorer_html
from encoder.web.payload import SCALE, build_setup, encode, quantise
from tests.e2e.harness import PageProblems
from tests.shared import SENTENCE

pytestmark = pytest.mark.browser

SVG = "http://www.w3.org/2000/svg"
TOKENS = ["[CLS]", "<img src=x onerror=alert(1)>", "</script>", "שלום", "🙂", "[SEP]"]


def attention(seed: int) -> torch.Tensor:
    """2 layers x 3 heads over the tokens: [layers, heads, T, T] softmax weights."""
    scores = torch.randn(
        2, 3, len(TOKENS), len(TOKENS), generator=torch.Generator().manual_seed(seed)
    )
    return torch.softmax(scores, dim=-1)


class OfflinePage:
    """A page opened from a file in a browser context with the network off; every request that
    is not for a file is refused and recorded."""

    def __init__(self, browser, path: Path) -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.context.set_offline(True)
        self.requests: list[str] = []
        self.context.route("**/*", self._only_files)
        self.page = self.context.new_page()
        self.problems = PageProblems(self.page)
        self.page.goto(path.as_uri())

    def _only_files(self, route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.requests.append(route.request.url)
            route.abort()

    def close(self) -> None:
        """Close it; nothing was fetched, logged as an error or opened as a dialog."""
        self.context.close()
        assert self.requests == []
        assert self.problems.errors == [] and self.problems.dialogs == []


def test_the_offline_file_works_from_file_with_the_network_off(browser, tmp_path):
    weights = attention(0)
    payload = encode(
        [build_setup(weights, TOKENS, name="A"), build_setup(attention(1), TOKENS, name="B")]
    )
    path = tmp_path / "explorer.html"
    path.write_text(explorer_html(payload, "Offline <explorer>"), encoding="utf-8")

    offline = OfflinePage(browser, path)
    page = offline.page
    explorer = page.locator("[data-testid=attention-explorer]")
    explorer.wait_for()
    assert page.title() == "Offline <explorer>"
    drawn = page.locator("[data-side=query]").all_text_contents()
    assert [token.strip() for token in drawn] == TOKENS  # every token as text, none as markup

    page.locator("[data-role=mode][data-mode=heads]").click()
    page.locator("[data-role=tile][data-layer='1'][data-head='2']").click()
    assert (explorer.get_attribute("data-layer"), explorer.get_attribute("data-head")) == ("1", "2")

    page.locator("[data-role=mode][data-mode=lines]").click()
    page.locator("[data-side=query][data-index='3']").hover()
    readout = page.locator("[data-role=readout]").text_content()
    best = int(weights[1, 2, 3].argmax())
    weight = float(weights[1, 2, 3, best])
    assert (
        readout == f'layer 1, head 2: "{TOKENS[3]}" attends most to "{TOKENS[best]}" {weight:.3f}'
    )

    page.locator("[data-role=setup][data-setup=B-A]").click()
    assert explorer.get_attribute("data-setup") == "B-A"
    offline.close()


def step_element(title: str) -> str:
    """The handout's element of a step's explorer (steps are numbered from 1)."""
    return f"#step-{TITLES.index(title) + 1}"


def test_the_lesson_handout_explores_attention_from_file_with_the_network_off(browser, tmp_path):
    run = run_for(
        pretrained_config(), built_in("pretrained", pretrained_config()), "cpu", [SENTENCE], None
    )
    lesson = Lesson(run, 0)
    path = tmp_path / "lesson.html"
    path.write_text(lesson_html(lesson), encoding="utf-8")

    offline = OfflinePage(browser, path)
    page = offline.page
    attention_step = page.locator(step_element("One query's attention"))
    heads_step = page.locator(step_element("Heads differ"))
    first = attention_step.locator("[data-testid=attention-explorer]")
    first.wait_for()
    assert first.get_attribute("data-mode") == "lines"  # opened on the step's head and query
    chosen = [first.get_attribute(f"data-{name}") for name in ("layer", "head", "query", "pinned")]
    assert chosen == [str(lesson.layer), str(lesson.head), "10", "true"]  # "it", pinned
    weight = float(run.attention[lesson.layer, 0, lesson.head, 10, lesson.key])
    head = f"layer {lesson.layer}, head {lesson.head}"
    readout = first.locator("[data-role=readout]").text_content()
    assert readout == f'{head}: "it" attends most to "tired" {weight:.3f} (pinned)'

    explorer = heads_step.locator("[data-testid=attention-explorer]")
    assert explorer.get_attribute("data-mode") == "heads"
    readout = explorer.locator("[data-role=readout]")
    before = readout.text_content()
    explorer.locator("[data-role=tile][data-layer='4'][data-head='3']").click()
    assert (explorer.get_attribute("data-layer"), explorer.get_attribute("data-head")) == ("4", "3")
    explorer.locator("[data-role=mode][data-mode=lines]").click()
    explorer.locator("[data-side=query][data-index='10']").hover()  # "it"
    after = readout.text_content()
    assert after != before and after.startswith('layer 4, head 3: "it" attends most to')
    shots = Path(os.environ.get("ENCODER_SHOTS_DIR", tmp_path))
    explorer.screenshot(path=str(shots / "handout_explorer.png"))
    assert page.locator(".plotly-graph-div").count() > 0  # the other figures still draw

    # the figures a browser module draws on the page: that module, from its data, here too
    for listed in (LAYERNORM, FEED_FORWARD, COST, RACE):
        number = STEPS.index(listed) + 1
        for key, figure in listed.build(lesson).figures:
            if not isinstance(figure, Drawn):
                continue
            data = told_all(figure.data)
            drawn = page.locator(f"#step-{number}-{key} [role=figure]")
            assert drawn.get_attribute("aria-label").startswith(data["title"]), key
            for tool in ("Show as a table", "Save as…"):  # its numbers, its files
                assert drawn.get_by_role("button", name=tool).count() == 1, (key, tool)
            if figure.module == hosts.DIAGRAM:
                boxes = [node for node in data["nodes"] if node["kind"] != "add"]
                assert drawn.locator("[data-role=box]").count() == len(boxes), key
            if figure.module == hosts.LINES:
                assert drawn.locator("[data-role=tick]").count() == len(data["tokens"]), key
    offline.close()


# ---------------------------------------------------------------- the explorer as a figure

FIGURE = "[data-role=figure]"
NUMBER = r"(\d+\.\d{3})"
SIGNED = r"([+−]\d+\.\d{3})"
QUANTUM = 1e-4  # the payload's uint16 steps (1/65535), with room for the sentence's rounding


def as_sent(weights: torch.Tensor) -> np.ndarray:
    """The weights as the payload carries them: uint16 steps of 1/SCALE."""
    return quantise(weights.numpy()) / SCALE


def weights_sentence(matrix: np.ndarray, pinned: int | None = None) -> tuple:
    """What the figure's sentence must say of one head's [query, key] weights, found here:
    (the query with the largest single weight, or the pinned one; its top key; that weight;
    the key most queries put their largest weight on; how many)."""
    best = matrix.argmax(axis=1)  # each query's top key (the first of equals, as numpy)
    query = pinned if pinned is not None else int(matrix.max(axis=1).argmax())
    chosen = np.bincount(best, minlength=len(matrix))
    return (
        query,
        int(best[query]),
        float(matrix[query, best[query]]),
        int(chosen.argmax()),
        int(chosen.max()),
    )


def figure_label(page, before: str | None = None) -> str:
    """The figure's sentence once the look has settled (after `before`, if given)."""
    page.wait_for_function(
        "([selector, before]) => { const label = document.querySelector(selector)"
        ".getAttribute('aria-label'); return label !== before && label !== 'Attention explorer'; }",
        arg=[FIGURE, before],
    )
    return page.locator(FIGURE).get_attribute("aria-label")


def check_weights_sentence(label: str, matrix: np.ndarray, pinned: int | None = None) -> None:
    query, key, weight, most, count = weights_sentence(matrix, pinned)
    word = "puts" if count == 1 else "put"
    found = re.fullmatch(
        rf'Layer (\d+), head (\d+) of A: "(.*)"( \(pinned\))? gives {NUMBER} to "(.*)"; '
        rf'(\d+) of (\d+) tokens {word} most weight on "(.*)"\.',
        label,
        re.DOTALL,
    )
    assert found, label
    assert found.group(3) == TOKENS[query] and found.group(6) == TOKENS[key], label
    assert bool(found.group(4)) == (pinned is not None)
    assert abs(float(found.group(5)) - weight) <= QUANTUM + 5e-4
    assert (int(found.group(7)), int(found.group(8)), found.group(9)) == (
        count,
        len(TOKENS),
        TOKENS[most],
    )


@pytest.fixture
def compared(browser, tmp_path):
    """An offline explorer of two random setups, A and B: (page, A's weights, B's)."""
    a, b = attention(0), attention(1)
    payload = encode([build_setup(a, TOKENS, name="A"), build_setup(b, TOKENS, name="B")])
    path = tmp_path / "explorer.html"
    path.write_text(explorer_html(payload, "Offline explorer"), encoding="utf-8")
    offline = OfflinePage(browser, path)
    offline.page.locator("[data-testid=attention-explorer]").wait_for()
    yield offline.page, a, b
    offline.close()


def save_look(page, format: str) -> tuple[str, bytes]:
    """Save the explorer's look as `format` from its "Save as…" menu, by keyboard."""
    page.get_by_test_id("figure-save").press("Enter")  # the menu opens on its first item
    with page.expect_download() as saving:
        page.locator(f"[role=menuitem][data-format={format}]").press("Enter")
    assert page.get_by_test_id("figure-save-menu").is_hidden()
    return saving.value.suggested_filename, Path(saving.value.path()).read_bytes()


def test_the_explorers_figure_is_named_by_the_sentence_of_its_numbers(compared) -> None:
    page, a, b = compared
    figure = page.locator(FIGURE)
    assert figure.get_attribute("role") == "figure"
    label = figure_label(page)
    check_weights_sentence(label, as_sent(a[0, 0]))  # opened on layer 0, head 0
    page.locator("[data-testid=attention-explorer]").focus()
    for _ in range(5):  # layer 1, head 2
        page.keyboard.press("ArrowRight")
    page.wait_for_function(  # the last key's look, not one settled on the way under load
        "([selector, start]) => document.querySelector(selector).getAttribute('aria-label')"
        ".startsWith(start)",
        arg=[FIGURE, "Layer 1, head 2 of A: "],
    )
    label = page.locator(FIGURE).get_attribute("aria-label")
    check_weights_sentence(label, as_sent(a[1, 2]))
    hovered = page.locator(FIGURE).get_attribute("aria-label")
    page.locator("[data-side=query][data-index='4']").hover()  # a hover names nothing anew
    page.wait_for_timeout(400)
    assert page.locator(FIGURE).get_attribute("aria-label") == hovered
    page.locator("[data-side=query][data-index='4']").click()  # a pin does
    label = figure_label(page, label)
    check_weights_sentence(label, as_sent(a[1, 2]), pinned=4)

    page.locator("[data-role=setup][data-setup=B-A]").click()
    page.keyboard.press("Escape")  # no pin: the whole head
    page.wait_for_function(
        "s => (label => label.includes('increase') && !label.includes('pinned'))"
        "(document.querySelector(s).getAttribute('aria-label'))",
        arg=FIGURE,
    )
    label = page.locator(FIGURE).get_attribute("aria-label")
    change = as_sent(b[1, 2]) - as_sent(a[1, 2])
    up = np.unravel_index(change.argmax(), change.shape)
    down = np.unravel_index(change.argmin(), change.shape)
    found = re.fullmatch(
        rf"Layer 1, head 2 of B − A: the largest increase {SIGNED} at (.*), the largest "
        rf"decrease {SIGNED} at (.*)\.",
        label,
        re.DOTALL,
    )
    assert found, label
    assert found.group(2) == f'"{TOKENS[up[0]]}" → "{TOKENS[up[1]]}"'
    assert found.group(4) == f'"{TOKENS[down[0]]}" → "{TOKENS[down[1]]}"'
    for text, value in ((found.group(1), change[up]), (found.group(3), change[down])):
        assert abs(float(text.replace("−", "-")) - value) <= QUANTUM + 5e-4


def test_the_looks_table_is_a_key_away_and_saves_as_csv_svg_and_png(compared) -> None:
    page, a, _ = compared
    explorer = page.locator("[data-testid=attention-explorer]")
    explorer.focus()
    for _ in range(5):  # layer 1, head 2
        page.keyboard.press("ArrowRight")
    page.locator("[data-role=mode][data-mode=matrix]").click()
    toggle = page.get_by_test_id("figure-table-toggle")
    for _ in range(30):  # Tab, from the explorer's last button, to "Show as a table"
        page.keyboard.press("Tab")
        if toggle.evaluate("node => node === node.getRootNode().activeElement"):
            break
    else:
        raise AssertionError("Tab never reached 'Show as a table'")
    page.keyboard.press("Enter")
    table = page.get_by_test_id("figure-table")
    assert toggle.get_attribute("aria-expanded") == "true" and table.is_visible()
    n = len(TOKENS)
    assert table.locator("tbody tr").count() == n
    assert table.locator("thead th").count() == n + 1  # the row headers' column, then the keys
    assert [t.strip() for t in table.locator("tbody th").all_text_contents()] == [
        f"{i} {token}" for i, token in enumerate(TOKENS)
    ]
    sent = as_sent(a[1, 2])
    shown = [
        [float(cell) for cell in row]
        for row in table.locator("tbody tr").evaluate_all(
            "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.textContent))"
        )
    ]
    assert np.allclose(shown, sent, rtol=5e-3, atol=1e-9)

    name, saved = save_look(page, "csv")
    assert name.endswith(".csv") and "layer 1 head 2" in name
    rows = list(csv.reader(io.StringIO(saved.decode("utf-8"))))
    assert rows[0][1:] == [f"{i} {token}" for i, token in enumerate(TOKENS)]
    assert np.allclose([[float(c) for c in row[1:]] for row in rows[1:]], sent, rtol=5e-3)

    name, svg = save_look(page, "svg")
    root = ElementTree.fromstring(svg)  # parses as XML
    title = root.findtext(f"{{{SVG}}}title")
    assert "layer 1, head 2" in title and title.startswith("A, ")
    drawn = [t.text for t in root.iter(f"{{{SVG}}}text")]
    assert "A, layer 1, head 2, matrix" in drawn and TOKENS[3] in drawn  # tokens as text
    name, png = save_look(page, "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    size = (2 * int(root.get("width")), 2 * int(root.get("height")))
    assert struct.unpack(">II", png[16:24]) == size  # IHDR: twice the SVG's size


def test_overlaid_heads_differ_by_dash_and_b_minus_a_says_its_signs(compared) -> None:
    page, a, b = compared
    for head in ("1", "2"):
        page.locator(f"[data-role=chip][data-head='{head}']").click()
    chips = page.locator("[data-role=chip][aria-pressed=true]")
    assert chips.count() == 3
    dashes = chips.locator("svg line").evaluate_all(
        "lines => lines.map(l => l.getAttribute('stroke-dasharray'))"
    )
    assert len(set(dashes)) == 3  # each head its own dash, shown in its chip
    _, svg = save_look(page, "svg")
    paths = ElementTree.fromstring(svg).iter(f"{{{SVG}}}path")
    by_head = {}
    for path in paths:
        by_head.setdefault(path.get("data-head"), set()).add(path.get("stroke-dasharray"))
    assert set(by_head) == {"0", "1", "2"} and all(len(d) == 1 for d in by_head.values())
    assert len(set.union(*by_head.values())) == 3

    page.locator("[data-role=setup][data-setup=B-A]").click()
    page.locator("[data-side=query][data-index='2']").click()  # pinned: its weights beside keys
    change = as_sent(b[0, 0]) - as_sent(a[0, 0])
    weights = page.locator("[data-role=weight]").all_text_contents()
    for text, value in zip(weights, change[2], strict=True):
        if abs(value) >= 5e-4:  # any difference to three decimals says its sign
            assert text[0] == ("+" if value > 0 else "−"), (text, value)
    readout = page.locator("[data-role=readout]").text_content()
    assert re.search(r"[+−]\d\.\d{3} \(pinned\)$", readout), readout

    page.locator("[data-role=mode][data-mode=matrix]").click()
    signs = page.locator("[data-role=signs]")
    scale = np.abs(change).max()
    assert signs.get_attribute("data-signs") == str(int((np.abs(change) >= 0.25 * scale).sum()))
    legend = page.locator("[data-role=legend]").text_content()
    assert "B less" in legend and "B more" in legend and f"+{scale:.3f}" in legend
