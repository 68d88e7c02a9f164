"""The explorer's neuron view in the page (the explorer's test page, tests/e2e/explorer_page.py):
opened by the key N and by a click on a matrix cell, its q, k, sum and weight against the
library's (encoder.inspect.neuron on MiniLM, and on a RoPE model whose q and k are the turned
ones), its weight equal to the explorer's for that cell, a new key drawn within one frame with
nothing sent, and its pickers reached by the keyboard with their focus visible."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.inspect.neuron import neuron_cell
from encoder.io.tokenize import tokenize
from tests.e2e.harness import LOAD_TIMEOUT_MS, PageProblems, StreamlitServer, wait_ready
from tests.e2e.harness import explorer_state as state
from tests.shared import SENTENCE

pytestmark = pytest.mark.browser

EXPLORER = "[data-testid=attention-explorer]"
NEURON = "[data-testid=neuron-view]"
FRAME_MS = 1000 / 60
WINDOWED = dict(  # explorer_page.py's random model with window=4 (importing it runs the page)
    d_model=64, num_heads=4, num_layers=3, d_ff=96, positional="rope", activation="geglu",
    global_every=3, attention_window=4,
)  # fmt: skip
# q and k travel as float16: a value within 2^-11 of itself, their product's sum within this
HALF = dict(rtol=2e-3, atol=2e-3)
SUM_ATOL = 0.05

# a new key: from the key event to the next frame, and to the end of its synchronous redraw
KEY_FRAME_JS = """async (root) => {
  const draws = [], frames = [], keys = [];
  for (let i = 0; i < 20; i++) {
    const before = root.querySelector('[data-testid=neuron-view]').dataset.key;
    const t0 = performance.now();
    root.dispatchEvent(new KeyboardEvent('keydown', {key: ']', bubbles: true}));
    draws.push(performance.now() - t0);
    await new Promise(requestAnimationFrame);
    frames.push(performance.now() - t0);
    keys.push([before, root.querySelector('[data-testid=neuron-view]').dataset.key]);
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[10];
  return {draw: median(draws), frame: median(frames), worstDraw: Math.max(...draws), keys};
}"""


@pytest.fixture(scope="module")
def explorer_server(browser) -> Iterator[StreamlitServer]:
    running = StreamlitServer("tests/e2e/explorer_page.py")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def explorer(browser, explorer_server):
    """explorer(**query) -> (page, sent): the test page drawn, and the websocket frames the page
    sends from then on."""
    contexts, seen = [], []

    def opener(**query):
        context = browser.new_context(viewport={"width": 1280, "height": 720})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(30_000)
        seen.append(PageProblems(page))
        sent: list = []
        page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
        page.goto(explorer_server.page_url(**query))
        wait_ready(page, LOAD_TIMEOUT_MS)
        page.locator(EXPLORER).wait_for()
        sent.clear()
        return page, sent

    yield opener
    for context in contexts:
        context.close()
    for problems in seen:
        assert problems.errors == [] and problems.dialogs == []


def reported(page, sent: list) -> None:
    """Until the explorer has told the page (its first neuron view asks at once) and the rerun
    that followed is drawn; then nothing sent is counted."""
    for _ in range(300):
        if sent:
            break
        page.wait_for_timeout(100)
    assert sent, "the explorer told the page nothing"
    wait_ready(page, LOAD_TIMEOUT_MS)
    sent.clear()


def readout_weight(page) -> float:
    """The weight the explorer's readout ends with ('… "it" → "cat" 0.715')."""
    return float(page.locator("[data-role=readout]").text_content().split()[-1])


def drawn(page) -> dict:
    """The neuron view as drawn: its cell, its rows' values by dimension, sum, score, weight."""
    return page.locator(NEURON).evaluate(
        """(root) => {
          const row = (id) => [...root.querySelectorAll(`[data-testid=${id}] [data-dim]`)]
            .map((c) => [Number(c.dataset.dim), Number(c.dataset.value), c.textContent]);
          const value = (id) => Number(root.querySelector(`[data-testid=${id}]`).dataset.value);
          return {...root.dataset, q: row('neuron-q'), k: row('neuron-k'),
            product: row('neuron-product'), sum: value('neuron-sum'),
            score: value('neuron-score'), weight: value('neuron-weight')};
        }"""
    )


def check_against(cell, seen: dict) -> None:
    """The drawn rows, sum and weight against the library's cell."""
    for name, reference in (("q", cell.q), ("k", cell.k), ("product", cell.product)):
        dims = [dim for dim, _value, _text in seen[name]]
        assert dims == list(range(cell.head_dim))  # every dimension once, in order
        values = np.array([value for _dim, value, _text in seen[name]])
        np.testing.assert_allclose(values, reference, **HALF)
        printed = np.array([float(text.replace("−", "-")) for _dim, _value, text in seen[name]])
        np.testing.assert_allclose(printed, reference, atol=0.006)  # its number, not a colour
    assert abs(seen["sum"] - cell.dot) <= SUM_ATOL
    assert abs(seen["score"] - cell.dot * cell.scale) <= SUM_ATOL * cell.scale
    assert abs(seen["weight"] - cell.weight) <= 1e-5  # the explorer's own weight (uint16)


def test_key_n_opens_minilms_cell_and_a_new_key_draws_within_a_frame(explorer, minilm) -> None:
    page, sent = explorer(text=SENTENCE)
    trace = minilm.trace_of(SENTENCE)
    tokens = minilm.batch(SENTENCE).tokens[0]
    it = tokens.index("it")
    page.locator(EXPLORER).focus()
    for _ in range(13):  # layer 1, head 1
        page.keyboard.press("ArrowRight")
    for _ in range(it + 1):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("n")
    assert state(page)["mode"] == "neuron"
    reported(page, sent)  # head 1 of layer 1, and the view's first opening
    seen = drawn(page)
    best = int(trace.attention[1, 0, 1, it].argmax())  # the query's largest weight first
    assert (seen["layer"], seen["head"], seen["query"], seen["key"]) == (
        "1",
        "1",
        str(it),
        str(best),
    )
    check_against(neuron_cell(trace, 0, 1, 1, it, best), seen)
    readout = page.locator("[data-role=readout]").text_content()
    assert readout.startswith(f'layer 1, head 1: "it" → "{tokens[best]}": q·k = ')
    assert readout.endswith(f"after the softmax over {len(tokens)} keys: {seen['weight']:.3f}.")

    timing = page.locator(EXPLORER).evaluate(KEY_FRAME_JS)
    print(f"neuron view, a new key: draw {timing['draw']:.2f} ms (worst {timing['worstDraw']:.2f})"
          f", to the next frame {timing['frame']:.2f} ms (medians of 20)")  # fmt: skip
    n = len(tokens)
    assert all(int(after) == (int(before) + 1) % n for before, after in timing["keys"])
    assert timing["draw"] <= FRAME_MS and timing["frame"] <= 2 * FRAME_MS
    key = int(drawn(page)["key"])
    check_against(neuron_cell(trace, 0, 1, 1, it, key), drawn(page))
    assert sent == []  # a new key stays in the browser
    page.keyboard.press("ArrowRight")  # the next head, the same cell: drawn at once
    check_against(neuron_cell(trace, 0, 1, 2, it, key), drawn(page))


def test_a_click_on_a_matrix_cell_opens_it_with_the_explorers_weight(explorer, minilm) -> None:
    page, sent = explorer(text=SENTENCE, layer=4, head=7)
    trace = minilm.trace_of(SENTENCE)
    n = len(minilm.batch(SENTENCE).tokens[0])
    page.locator("[data-role=mode][data-mode=matrix]").click()
    grid = page.locator("[data-role=matrix]")
    box = grid.bounding_box()
    q, k = 3, 6
    where = {"x": (k + 0.5) * box["width"] / n, "y": (q + 0.5) * box["height"] / n}
    grid.hover(position=where)
    explorers_weight = readout_weight(page)
    grid.click(position=where)
    reported(page, sent)  # the view's first opening
    seen = drawn(page)
    assert (state(page)["mode"], seen["query"], seen["key"]) == ("neuron", str(q), str(k))
    assert f"{seen['weight']:.3f}" == f"{explorers_weight:.3f}"
    cell = neuron_cell(trace, 0, 4, 7, q, k)
    check_against(cell, seen)
    # its numbers as a table (figure_tools.js): a row a dimension, then the sum, score, weight
    page.locator(f"{EXPLORER} [data-testid=figure-table-toggle]").click()
    rows = page.locator(f"{EXPLORER} [data-testid=figure-table] tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.children].map(c => c.textContent))"
    )
    assert [row[0] for row in rows] == [*map(str, range(32)), "sum (q·k)", "score", "weight"]
    np.testing.assert_allclose([float(row[1]) for row in rows[:32]], cell.q, rtol=5e-3, atol=5e-3)
    assert float(rows[-1][3]) == pytest.approx(cell.weight, abs=5e-3)  # three digits
    page.locator(f"{EXPLORER} [data-testid=figure-table-toggle]").click()  # closed again
    # the keyboard reaches its pickers, with a visible focus ring; a picked key draws at once
    page.locator(f"{NEURON} [data-role=neuron-query]").focus()
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => { let a = document.activeElement;"  # into the component's shadow root
        " while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;"
        " const s = getComputedStyle(a);"
        " return [a.dataset.role, s.outlineStyle, s.outlineWidth, s.outlineColor]; }"
    )
    assert focused[:3] == ["neuron-key", "solid", "3px"] and focused[3] == "rgb(0, 114, 178)"
    page.keyboard.press("ArrowDown")  # the select's own key: the next key token
    assert drawn(page)["key"] == str(k + 1)
    from axe_playwright_python.sync_playwright import Axe  # axe-core: WCAG 2.2 A and AA

    toggle = page.locator(f"{EXPLORER} [data-testid=figure-table-toggle]")
    toggle.click()  # open, the table scrolls (36 rows): the keyboard must reach it to scroll it

    tags = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
    found = Axe().run(page, options={"runOnly": {"type": "tag", "values": tags}})
    assert [(rule["id"], [n["target"] for n in rule["nodes"]]) for rule in
            found.response["violations"]] == []  # fmt: skip
    toggle.click()
    page.locator(EXPLORER).focus()
    page.keyboard.press("n")  # closes it: back to the matrix
    assert state(page)["mode"] == "matrix"
    assert sent == []


def test_a_rope_models_cell_is_made_of_the_turned_q_and_k(explorer, minilm) -> None:
    page, _sent = explorer(text="The animal was too tired to cross.", window=4)
    cfg = EncoderConfig(vocab_size=minilm.tokenizer.get_vocab_size(), **WINDOWED)
    model = TransformerEncoder(cfg).eval()
    batch = tokenize(["The animal was too tired to cross."], minilm.tokenizer, cfg.max_len)
    with torch.no_grad():
        trace = model.trace(batch.input_ids, batch.attention_mask)
    page.locator(EXPLORER).focus()
    page.keyboard.press("PageDown")  # layer 1: local (global_every=3 keeps layer 0 global)
    page.keyboard.press("ArrowDown")  # query 0
    page.keyboard.press("n")
    while drawn(page)["key"] != "5":  # a key 5 positions away: outside the window of 4
        page.keyboard.press("]")
    seen = drawn(page)
    cell = neuron_cell(trace, 0, 1, 0, 0, 5)
    assert cell.rotated and cell.masked
    for name, reference in (("q", cell.q), ("k", cell.k)):
        np.testing.assert_allclose([v for _d, v, _t in seen[name]], reference, **HALF)
    assert seen["score"] == -math.inf and seen["weight"] == 0
    assert "masked" in page.locator(f"{NEURON} [data-testid=neuron-score]").text_content()
    for _ in range(4):
        page.keyboard.press("[")  # key 1: within the window
    check_against(neuron_cell(trace, 0, 1, 0, 0, 1), drawn(page))


def test_the_attention_view_sends_q_and_k_once_its_neuron_view_opens(open_page, minilm) -> None:
    """The page's explorer offers the view before its payload holds any q and k (its first
    payload as before: the attention alone); N asks for them at once, and from then on a new key,
    query or head sends nothing."""
    page, _ = open_page(view="Attention", source="pretrained", text=SENTENCE)
    sent: list = []
    received: list = []

    def watch(socket) -> None:
        socket.on("framesent", lambda frame: sent.append(frame))
        socket.on("framereceived", lambda frame: received.append(frame))

    page.on("websocket", watch)
    page.reload()
    wait_ready(page, LOAD_TIMEOUT_MS)
    trace = minilm.trace_of(SENTENCE)
    tokens = minilm.batch(SENTENCE).tokens[0]
    first = sum(len(frame) for frame in received)
    sent.clear()
    received.clear()
    page.locator(EXPLORER).focus()
    for _ in range(2):
        page.keyboard.press("ArrowDown")  # query 1
    page.keyboard.press("n")
    assert state(page)["mode"] == "neuron"
    page.locator(f"{NEURON} [data-testid=neuron-weight]").wait_for(timeout=60_000)
    wait_ready(page, LOAD_TIMEOUT_MS)
    asked = sum(len(frame) for frame in received)
    print(
        f"first visit received {first / 1000:.0f} kB; opening the neuron view {asked / 1000:.0f} kB"
    )
    assert 6 * 12 * 2 * len(tokens) * 32 * 2 < asked  # every head's q and k, float16
    seen = drawn(page)
    key = int(trace.attention[0, 0, 0, 1].argmax())
    assert (seen["query"], seen["key"]) == ("1", str(key))
    check_against(neuron_cell(trace, 0, 0, 0, 1, key), seen)
    sent.clear()
    page.locator(EXPLORER).focus()
    for press in ("]", "]", "ArrowDown", "["):
        page.keyboard.press(press)
    assert sent == []  # a new key or query stays in the browser
    page.keyboard.press("ArrowRight")  # head 1: in the payload already, drawn at once
    seen = drawn(page)
    check_against(neuron_cell(trace, 0, 0, 1, int(seen["query"]), int(seen["key"])), seen)
