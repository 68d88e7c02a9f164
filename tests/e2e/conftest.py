"""One streamlit server and one Chromium per test session; a fresh browser context per test.

Without Chromium the browser tests skip, and without nginx the proxy tests, except under CI=true
where they fail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import (
    LOAD_TIMEOUT_MS,
    PageProblems,
    StreamlitServer,
    chromium_path,
    launch_chromium,
    missing,
    wait_ready,
)
from tests.e2e.proxy import nginx_path


@pytest.fixture(scope="session")
def browser():
    if chromium_path() is None:
        missing("chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def nginx() -> str:
    """Debian's nginx binary."""
    found = nginx_path()
    if found is None:
        missing("nginx")
    return found


@pytest.fixture(scope="session")
def server(browser) -> Iterator[StreamlitServer]:
    running = StreamlitServer()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def open_page(browser, server):
    """open_page(**query) -> (page, problems): a new session at the URL, ready for a click.

    `browsing`: the browser context's options (by default a 1400 x 1000 window; a projector's
    or a phone's viewport, its user agent); `timeout_ms`: the page's default timeout. After the
    test, no page may have logged a console error or opened a dialog.
    """
    contexts, seen = [], []

    def opener(browsing: dict | None = None, timeout_ms: float = 30_000, **query):
        context = browser.new_context(**(browsing or {"viewport": {"width": 1400, "height": 1000}}))
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(timeout_ms)
        problems = PageProblems(page)
        seen.append(problems)
        page.goto(server.page_url(**query))
        wait_ready(page, LOAD_TIMEOUT_MS)
        return page, problems

    yield opener
    for context in contexts:
        context.close()
    for problems in seen:
        assert problems.errors == []
        assert problems.dialogs == []
