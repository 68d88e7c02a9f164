"""The page served at a view's path (/attention) names the app's root as the server's address
(app.streamlit_private.NameTheRootOnViewPaths, the middleware of app/main.py's st.App); every
other request and answer passes untouched. The browser's side: tests/e2e/test_browser_page.py
(a view opened at its path asks for nothing that is not there)."""

from __future__ import annotations

import asyncio

import pytest

from app.streamlit_private import SERVER_AT_THE_ROOT, NameTheRootOnViewPaths

PAGE = b"<!doctype html><html><head><title>Streamlit</title></head><body></body></html>"


def served(path: str) -> tuple[dict, bytes, dict]:
    """The answer's headers and body for GET `path`, and the headers Streamlit was asked with:
    Streamlit's answer stands in as index.html for a page's path (in two pieces), a PNG for a
    file's."""
    asked, sent = {}, []

    async def streamlit(scope, receive, send) -> None:
        asked.update(scope["headers"])
        kind = b"image/png" if path.endswith(".png") else b"text/html; charset=utf-8"
        length = str(len(PAGE)).encode()
        headers = [(b"content-type", kind), (b"content-length", length)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": PAGE[:20], "more_body": True})
        await send({"type": "http.response.body", "body": PAGE[20:]})

    async def send(message) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request"}

    headers = [(b"accept-encoding", b"gzip"), (b"if-none-match", b'"1"'), (b"host", b"x")]
    scope = {"type": "http", "method": "GET", "path": path, "headers": headers}
    asyncio.run(NameTheRootOnViewPaths(streamlit)(scope, receive, send))
    return dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:]), asked


def test_a_view_s_page_names_the_app_s_root_before_anything_runs() -> None:
    headers, body, asked = served("/attention")
    assert body == PAGE.replace(b"<head>", b"<head>" + SERVER_AT_THE_ROOT)
    assert int(headers[b"content-length"]) == len(body)
    assert asked == {b"host": b"x"}  # the page whole (not gzipped) and fresh (not a 304)


@pytest.mark.parametrize("path", ["/", "/favicon.png", "/attention/_stcore/health"])
def test_the_root_files_and_deeper_paths_pass_untouched(path: str) -> None:
    headers, body, asked = served(path)
    assert body == PAGE and int(headers[b"content-length"]) == len(PAGE)
    assert b"accept-encoding" in asked
