"""The explorer in the page's language, offline (encoder.web.payload.with_words): in Spanish its
mode buttons and readout are Spanish, the readout's weight written "0,715" and equal to the
payload's, and so is its table's ("0,0906"; its CSV keeps "0.0906"); in Arabic it is right to
left (the queries' column right of the keys', the matrix's row labels right of its cells); in
English, without words, as before."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from app.i18n.browser import browser_words
from encoder.web.offline import explorer_html
from encoder.web.payload import build_setup, encode, full_weights, with_words
from tests.e2e.harness import KEYS_STEP, PROJECTOR, js_number, open_step

pytestmark = pytest.mark.browser

TOKENS = ["[CLS]", "the", "cat", "sat", "because", "it", "was", "tired", "القطة", "[SEP]"]
QUERY = 5  # "it"


def payload() -> bytes:
    scores = np.random.default_rng(3).normal(size=(2, 3, len(TOKENS), len(TOKENS))) * 2
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    return encode([build_setup(weights.astype(np.float32), TOKENS, name="A")])


def opened(browser, tmp_path, data: bytes, name: str):
    path = tmp_path / f"{name}.html"
    path.write_text(explorer_html(data, "Explorer"), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.as_uri())
    page.locator("[data-testid=attention-explorer]").wait_for()
    return context, page, errors


def pinned_readout(page) -> str:
    page.locator(f"[data-side=query][data-index='{QUERY}']").click()
    return page.locator("[data-role=readout]").inner_text()


def largest(data: bytes) -> tuple[int, float]:
    row = full_weights(data)[(0, 0)][QUERY]
    return int(np.argmax(row)), float(row.max())


def test_spanish_buttons_and_numbers(browser, tmp_path) -> None:
    data = payload()
    key, weight = largest(data)
    context, page, errors = opened(
        browser, tmp_path, with_words(data, "es", browser_words("es")), "es"
    )
    assert page.locator("[data-role=mode][data-mode=matrix]").inner_text() == "Matriz"
    assert page.locator("[data-testid=figure-table-toggle]").inner_text() == "Mostrar como tabla"
    readout = pinned_readout(page)
    spanish = f"{weight:.3f}".replace(".", ",")
    assert (
        readout == f'capa 0, cabeza 0: "it" atiende sobre todo a "{TOKENS[key]}" {spanish} (fijada)'
    )
    weight_shown = page.locator(f"[data-side=key][data-index='{key}'] [data-role=weight]")
    assert weight_shown.inner_text() == spanish
    page.wait_for_timeout(400)  # the figure's sentence, once the look settles
    sentence = page.locator("[data-role=figure]").get_attribute("aria-label")
    assert sentence.startswith(f'Capa 0, cabeza 0 de A: "it" (fijado) da {spanish} a ')
    page.get_by_test_id("figure-table-toggle").click()  # the look's matrix, in Spanish too
    row = page.get_by_test_id("figure-table").locator("tbody tr").nth(QUERY)
    cell = row.locator("td").nth(key).inner_text()
    assert cell == js_number(weight).replace(".", ",") and "," in cell
    page.get_by_test_id("figure-save").click()
    with page.expect_download() as saving:
        page.locator("[role=menuitem][data-format=csv]").click()
    rows = list(csv.reader(io.StringIO(Path(saving.value.path()).read_text(encoding="utf-8"))))
    assert rows[1 + QUERY][1 + key] == js_number(weight)  # as any program reads a CSV's numbers
    assert errors == []
    context.close()


def test_arabic_is_right_to_left(browser, tmp_path) -> None:
    data = with_words(payload(), "ar", browser_words("ar"), "rtl")
    context, page, errors = opened(browser, tmp_path, data, "ar")
    root = page.locator("[data-testid=attention-explorer]")
    assert root.get_attribute("dir") == "rtl" and root.get_attribute("lang") == "ar"
    assert page.locator("[data-role=mode][data-mode=lines]").inner_text() == "الخطوط"
    query = page.locator("[data-side=query][data-index='1']").bounding_box()
    key = page.locator("[data-side=key][data-index='1']").bounding_box()
    assert query["x"] > key["x"] + key["width"]  # the queries' column right of the keys'
    token = page.locator("[data-side=query][data-index='8']")
    assert token.get_attribute("dir") == "auto"  # each token in its own direction
    page.locator("[data-role=mode][data-mode=matrix]").click()
    row = page.locator(".aex-label[data-side=query][data-index='0']").bounding_box()
    cells = page.locator("[data-role=matrix]").bounding_box()
    assert row["x"] >= cells["x"] + cells["width"] - 1  # the rows' labels right of the cells
    first = page.locator(".aex-label[data-side=key][data-index='0']").bounding_box()
    last = page.locator(".aex-label[data-side=key][data-index='9']").bounding_box()
    assert first["x"] < last["x"]  # keys still run left to right over the cells
    assert errors == []
    context.close()


def test_english_without_words_is_unchanged(browser, tmp_path) -> None:
    data = payload()
    key, weight = largest(data)
    context, page, errors = opened(browser, tmp_path, data, "en")
    root = page.locator("[data-testid=attention-explorer]")
    assert root.get_attribute("dir") == "ltr"
    assert page.locator("[data-role=mode][data-mode=matrix]").inner_text() == "Matrix"
    readout = pinned_readout(page)
    assert readout == f'layer 0, head 0: "it" attends most to "{TOKENS[key]}" {weight:.3f} (pinned)'
    query = page.locator("[data-side=query][data-index='1']").bounding_box()
    key_box = page.locator("[data-side=key][data-index='1']").bounding_box()
    assert query["x"] + query["width"] < key_box["x"]
    assert errors == []
    context.close()


@pytest.mark.timeout(300)
def test_the_page_in_spanish_gives_the_explorer_and_the_figure_tools_its_words(open_page):
    page, _ = open_page(
        {"viewport": PROJECTOR}, 60_000, view="Attention", source="pretrained", lang="es"
    )
    explorer = page.locator("[data-testid=attention-explorer]").first
    explorer.wait_for(timeout=60_000)
    assert explorer.get_attribute("lang") == "es"
    assert explorer.locator("[data-role=mode][data-mode=matrix]").inner_text() == "Matriz"
    page, _ = open_page(
        {"viewport": PROJECTOR}, 60_000, view="Attention steps", source="pretrained", lang="es"
    )
    open_step(page, KEYS_STEP)
    page.wait_for_selector(".st-key-step_keys .js-plotly-plot[aria-label]")
    tools = page.locator(".st-key-step_keys [data-testid=figure-table-toggle]")
    tools.filter(has_text="Mostrar como tabla").wait_for(timeout=30_000)
    label = page.locator(".st-key-step_keys .js-plotly-plot").get_attribute("aria-label")
    assert "mapa de calor de" in label
