"""The offline explorer file works opened from file:// with the network off: it draws, a tile
opens its head, the readout names it, and user text stays text."""

from __future__ import annotations

import pytest
import torch

from encoder.web.offline import explorer_html
from encoder.web.payload import build_setup, encode
from tests.e2e.harness import PageProblems

pytestmark = pytest.mark.browser

TOKENS = ["[CLS]", "<img src=x onerror=alert(1)>", "</script>", "שלום", "🙂", "[SEP]"]


def attention(seed: int) -> torch.Tensor:
    """2 layers x 3 heads over the tokens: [layers, heads, T, T] softmax weights."""
    scores = torch.randn(
        2, 3, len(TOKENS), len(TOKENS), generator=torch.Generator().manual_seed(seed)
    )
    return torch.softmax(scores, dim=-1)


def test_the_offline_file_works_from_file_with_the_network_off(browser, tmp_path):
    weights = attention(0)
    payload = encode(
        [build_setup(weights, TOKENS, name="A"), build_setup(attention(1), TOKENS, name="B")]
    )
    path = tmp_path / "explorer.html"
    path.write_text(explorer_html(payload, "Offline <explorer>"), encoding="utf-8")

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_offline(True)
    requests: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            requests.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    page = context.new_page()
    problems = PageProblems(page)
    page.goto(path.as_uri())
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
    assert readout == f'layer 1 head 2: "{TOKENS[3]}" attends most to "{TOKENS[best]}" {weight:.3f}'

    page.locator("[data-role=setup][data-setup=B-A]").click()
    assert explorer.get_attribute("data-setup") == "B-A"
    context.close()
    assert requests == [] and problems.errors == [] and problems.dialogs == []
