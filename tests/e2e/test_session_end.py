"""A browser session's models leave the server with it (a real server, headless Chromium).

Streamlit keeps a session whose websocket closed for server.disconnectedSessionTTL seconds (here
TTL_S), so that it can reconnect, and has no hook for its end (app.session_end). A session uploads
MiniLM (91 MB of weights) and closes its page; while it could still come back its model stays,
counted; once it cannot, the next rerun of any session lets the model go: the memory budget's
count of what sessions keep and the server's resident memory both fall by the model's size.
"""

from __future__ import annotations

import os
import re
import time

import pytest

from app.memory import BUDGET_ENV, size_text
from encoder.io.checkpoints import load_checkpoint
from tests.e2e.harness import (
    KEPT_MEMORY,
    UPLOAD_INPUT,
    StreamlitServer,
    drawn_with,
    minilm_archive,
    sentence_of,
    type_text,
    wait_ready,
    wait_settled,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

TTL_S = 6
SETTLE_S = 1  # after a rerun, before reading the server's memory


@pytest.fixture(scope="module")
def short_ttl(browser):
    server = StreamlitServer(
        env={**os.environ, BUDGET_ENV: "1GB"},
        options=("--server.disconnectedSessionTTL", str(TTL_S)),
    )
    try:
        yield server
    finally:
        server.stop()


def minilm_bytes() -> int:
    """What the page counts for MiniLM: its tensors and 16 bytes per byte of its tokenizer."""
    checkpoint = load_checkpoint()
    tensors = [*checkpoint.encoder.parameters(), *checkpoint.encoder.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors) + 16 * len(
        checkpoint.tokenizer.to_str()
    )


def kept(page) -> tuple[str, str]:
    """(this session keeps, all sessions keep), as the sidebar says."""
    text = page.locator(KEPT_MEMORY).text_content()
    found = re.search(r"this session keeps (.+?) of models.*all sessions keep (.+?), of", text)
    assert found, text
    return found[1], found[2]


def rerun(page, tag: str) -> None:
    """A rerun of the page with a new text, waited for until drawn."""
    text = sentence_of(6, tag)
    type_text(page, text)
    drawn_with(page, text)


def test_a_closed_sessions_models_leave_the_budget_and_the_servers_memory(
    browser, short_ttl, tmp_path
):
    nbytes = minilm_bytes()
    archive = minilm_archive(tmp_path / "minilm.zip")
    pages = {}
    for name in ("leaving", "staying"):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        pages[name] = context.new_page()
        pages[name].goto(short_ttl.page_url(view="Attention"))
        wait_ready(pages[name], 60_000)
    leaving, staying = pages["leaving"], pages["staying"]
    before = short_ttl.rss_mb() * 2**20
    leaving.locator(UPLOAD_INPUT).set_input_files(archive)
    option = leaving.locator(".st-key-source [data-testid=stRadioOption]")
    option.filter(has_text="uploaded minilm.zip").wait_for(timeout=120_000)
    wait_settled(leaving, 60_000)
    assert kept(leaving) == (size_text(nbytes), size_text(nbytes))
    time.sleep(SETTLE_S)
    holding = short_ttl.rss_mb() * 2**20
    print(f"upload: {(holding - before) / 1e6:.0f} MB more resident; the model {nbytes / 1e6:.0f}")
    assert holding - before >= 0.8 * nbytes

    leaving.context.close()
    closed = time.monotonic()
    rerun(staying, "soon")  # within the TTL the closed session could come back: it keeps all
    assert time.monotonic() - closed < TTL_S
    assert kept(staying) == ("0 MB", size_text(nbytes))

    time.sleep(max(0.0, closed + TTL_S + 1 - time.monotonic()))
    rerun(staying, "later")  # it cannot come back now: this rerun lets its model go
    assert kept(staying) == ("0 MB", "0 MB")
    time.sleep(SETTLE_S)
    after = short_ttl.rss_mb() * 2**20
    print(f"session gone: {(holding - after) / 1e6:.0f} MB less resident")
    assert holding - after >= 0.8 * nbytes
    staying.context.close()
