"""What it is for in Chromium, on a tiny random BERT with its masked-LM head (found through
ENCODER_EXPLORER_MODELS): the similarity matrix and the lens grid drawn with the page's numbers,
a depth change drawn in the browser with nothing sent to the server, the keyboard reaching a
cell of each figure, and each figure's table opening."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.harness import LOAD_TIMEOUT_MS, StreamlitServer, wait_ready
from tests.encoder.family_checkpoints import build_checkpoint

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

TEXT = "the cat [MASK] on the mat.\nthe cat sat on the mat.\nles chats dorment sur le tapis."
MATRIX = "[data-testid=similarity-matrix]"
LENS = "[data-testid=lens-grid]"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> StreamlitServer:
    pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("models")
    build_checkpoint("bert", Path(folder) / "tiny-bert", head=True)
    env = {**os.environ, "ENCODER_EXPLORER_MODELS": str(folder)}
    env["HF_HUB_CACHE"] = str(tmp_path_factory.mktemp("empty-cache"))
    running = StreamlitServer(env=env)
    yield running
    running.stop()


def test_the_matrix_and_the_lens_are_drawn_read_by_keyboard_and_tabled(browser, server) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(60_000)
    sent: list = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda frame: sent.append(frame)))
    page.goto(f"{server.url}/meaning?source=disk%3Atiny-bert&text={TEXT.replace(chr(10), '%0A')}")
    wait_ready(page, LOAD_TIMEOUT_MS)
    matrix, lens = page.locator(MATRIX), page.locator(LENS)
    matrix.wait_for()
    lens.wait_for()
    cells = matrix.locator("[data-testid=similarity-cell][data-panel=a]")
    assert cells.count() == 9  # three sentences
    diagonal = matrix.locator("[data-testid=similarity-cell][data-row='1'][data-col='1']")
    assert float(diagonal.first.get_attribute("data-value")) == pytest.approx(1, abs=1e-3)
    assert lens.locator("[data-testid=lens-cell]").count() == 3  # 3 layers x 1 mask

    page.wait_for_timeout(500)
    sent.clear()
    slider = matrix.locator("[data-testid=depth-slider]")
    before = matrix.get_attribute("data-depth")
    slider.focus()
    page.keyboard.press("Home")  # the embeddings
    assert matrix.get_attribute("data-depth") == "0" != before
    page.wait_for_timeout(300)
    assert sent == []  # drawn in the browser: no rerun asked

    matrix.locator("[data-role=plot]").focus()  # one stop, arrows choose a pair
    page.keyboard.press("ArrowRight")
    assert matrix.get_attribute("data-cell")
    lens.locator("[data-role=plot]").focus()  # the prediction of the first mask, then a layer up
    page.keyboard.press("ArrowUp")
    assert lens.get_attribute("data-cell")
    assert lens.locator("[data-testid=lens-top] [data-role=top-word]").count() == 5

    for figure in (matrix, lens):
        toggle = figure.locator("[data-testid=figure-table-toggle]")
        toggle.click()
        assert toggle.get_attribute("aria-expanded") == "true"
        assert figure.locator("[data-testid=figure-table] tr").count() > 1
    assert sent == []
    context.close()
