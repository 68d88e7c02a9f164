"""The offline files work opened from file:// with the network off: the explorer file draws, a
tile opens its head, the readout names it, and user text stays text; the lesson handout's
attention steps hold the same explorer, opened on the step's head."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from app.lesson.handout import lesson_html
from app.lesson.steps import TITLES
from app.lesson.text import Lesson
from app.runs import run_for
from app.sources import built_in, pretrained_config
from encoder.web.offline import explorer_html
from encoder.web.payload import build_setup, encode
from tests.e2e.harness import PageProblems
from tests.shared import SENTENCE

pytestmark = pytest.mark.browser

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
    offline.close()
