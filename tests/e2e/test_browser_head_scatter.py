"""head_scatter.js from an offline file in Chromium: every point of a corpus drawn, hover shows
the token and its sentence as text, colourings switch in the browser; draw and hover timed."""

from __future__ import annotations

import json

import pytest

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.corpus import MAX_TOKENS, bundled_corpus, corpus_of, corpus_statistics
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web import asset
from encoder.web.hosts import SCATTER, joined
from encoder.web.scatter import scatter_data
from tests.e2e.harness import scatter_hover_ms

pytestmark = pytest.mark.browser

DRAW_MS, HOVER_MS = 200, 50  # the targets

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
    path = tmp_path_factory.mktemp("scatter") / "scatter.html"
    text = json.dumps(data).replace("</", "<\\/")
    path.write_text(
        PAGE.format(css=asset("head_scatter.css"), data=text, module=joined(SCATTER)),
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
    point drawn, hover shows a token of the corpus."""
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
    page.screenshot(path="/tmp/head_scatter_page.png")
