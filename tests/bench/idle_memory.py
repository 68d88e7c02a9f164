"""The server's idle size: resident memory of a fresh server of the app with one page loaded.

Run from the repo root: `python tests/bench/idle_memory.py [--runs 3]`. Each run starts the app
(`streamlit run app/main.py`), opens the page once in headless Chromium (a first visit: the
Lesson on the pretrained MiniLM, drawn), closes it, and reads the server's resident memory (its
process and children, from /proc). ENCODER_EXPLORER_MEMORY_BUDGET is what a server may grow over
this size, so a replica needs this plus the budget: deploy/kubernetes/deployment.yaml's
`encoder-explorer/idle-memory` must be at least the largest of these.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from tests.e2e.harness import StreamlitServer, launch_chromium, wait_settled  # noqa: E402

SETTLE_S = 2  # after the page closes, before reading


def idle_rss_mb(browser) -> float:
    """Resident memory in MiB (as StreamlitServer.rss_mb counts) of a fresh server once one
    page has been drawn and closed: the page a student lands on (the Lesson, on the pretrained
    MiniLM)."""
    server = StreamlitServer()
    try:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(server.page_url())
        wait_settled(page, 60_000)
        page.wait_for_selector(".st-key-lesson_next button")
        context.close()
        time.sleep(SETTLE_S)
        return server.rss_mb()
    finally:
        server.stop()


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        sizes = [idle_rss_mb(browser) for _ in range(args.runs)]
        browser.close()
    print(
        f"idle server, one page loaded: {statistics.median(sizes):.0f} MiB "
        f"(median of {len(sizes)}; {min(sizes):.0f}-{max(sizes):.0f})"
    )


if __name__ == "__main__":
    main()
