"""axe-core's WCAG 2.0, 2.1 and 2.2 A and AA rules on every view, in a real browser: at a
projector's 1280 x 720 alone and in compare mode, every lesson step in presenter mode, and the
views a student opens on a phone. axe ships inside axe-playwright-python (no network).

A failure lists each broken rule with the elements that break it (axe's selectors and HTML).
"""

from __future__ import annotations

import pytest

from app.lesson.steps import STEPS
from app.registry import VIEWS
from tests.e2e.harness import LOAD_TIMEOUT_MS, PHONE_BROWSING, PROJECTOR, missing, wait_ready

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]
ALL_VIEWS = tuple(view.title for view in VIEWS)
PHONE_VIEWS = ("Lesson", "Tokens", "Attention", "Attention steps", "LayerNorm", "Shapes")
MODEL = {"source": "pretrained"}  # MiniLM: its sidebar, its real tokens


@pytest.fixture(scope="module")
def axe():
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        missing("axe-playwright-python")
    return Axe()


def violations(axe, page) -> list[str]:
    """Each broken rule: its id, then each element that breaks it (selector, HTML)."""
    wait_ready(page, LOAD_TIMEOUT_MS)
    page.wait_for_timeout(500)  # plotly and the page's script finish their layout
    found = axe.run(page, options={"runOnly": {"type": "tag", "values": WCAG_AA}})
    return [
        f"{rule['id']}: {node['target']} {node['html'][:120]}"
        for rule in found.response["violations"]
        for node in rule["nodes"]
    ]


def views_violations(page, server, axe, views: tuple[str, ...], **query) -> dict:
    """The violations of each view opened from its link with `query`, by view; none: {}."""
    found = {}
    for view in views:
        page.goto(server.page_url(view=view, **MODEL, **query))
        broken = violations(axe, page)
        if broken:
            found[view] = broken
    return found


def test_every_view_alone_at_a_projector(open_page, server, axe) -> None:
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Lesson", **MODEL)
    assert views_violations(page, server, axe, ALL_VIEWS) == {}


def test_every_view_in_compare_mode(open_page, server, axe) -> None:
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Lesson", **MODEL)
    assert views_violations(page, server, axe, ALL_VIEWS, compare=1) == {}


def test_every_lesson_step_in_presenter_mode(open_page, axe) -> None:
    page, _ = open_page({"viewport": PROJECTOR}, 60_000, view="Lesson", lesson=1, present=1)
    found = {}
    for step in range(1, len(STEPS) + 1):
        page.locator("h2").filter(has_text=f"{step}. ").wait_for()
        broken = violations(axe, page)
        if broken:
            found[step] = broken
        if step < len(STEPS):
            page.locator(".st-key-lesson_next button").click()
    assert found == {}


def test_a_students_views_on_a_phone(open_page, server, axe) -> None:
    page, _ = open_page(PHONE_BROWSING, 60_000, view="Lesson", **MODEL)
    assert views_violations(page, server, axe, PHONE_VIEWS) == {}
