"""Refresh the README's picture of the page: the Attention view at 1400 x 900, headless Chromium.

Run from the repo root: `python scripts/screenshot.py [--out docs/images/attention.png]`. Starts
the app on a free loopback port (tests/e2e/harness.py's StreamlitServer), opens the Attention
view on the pretrained MiniLM and the example sentence, waits until the page is drawn and idle,
writes the PNG and stops the server.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from tests.e2e.harness import (  # noqa: E402
    EXPLORER,
    LOAD_TIMEOUT_MS,
    REPO,
    StreamlitServer,
    launch_chromium,
    wait_settled,
)

VIEWPORT = {"width": 1400, "height": 900}
QUERY = {"view": "Attention", "source": "pretrained"}


def screenshot(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    server = StreamlitServer()
    try:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(server.page_url(**QUERY))
            wait_settled(page, LOAD_TIMEOUT_MS)
            page.locator(f"{EXPLORER} [data-side=query]").first.wait_for(timeout=LOAD_TIMEOUT_MS)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
            browser.close()
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "attention.png")
    out = parser.parse_args().out
    screenshot(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
