"""deploy/nginx on loopback: Debian's nginx in front of two replicas of the app keeps each browser
on one replica, websocket included, so each browser session keeps its own state.

What would break without the sticky route: a Streamlit session lives in one replica's memory. The
browser's websocket reconnects after any interruption (here: an nginx reload, whose old worker
closes open connections after a second), and a reconnect that lands on the other replica finds
no session there. Each browser here uploads a checkpoint of its own (through
/_stcore/upload_file, which must reach the session's replica too): the uploaded model is a model
source held only by the session, so after the reconnect its radio option is there only if the
session is (the browser re-sends its widget values on a rerun, so a widget alone could survive a
change of replica). Its text is longer than what the page keeps in its URL
(app.controls.url.MAX_URL_TEXT), so that too lives only in the session.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import parse_qs, urlparse

import pytest

from app.controls.setup_keys import DEFAULTS
from app.controls.url import MAX_URL_TEXT
from encoder.io.checkpoint_files import checkpoint_archive
from encoder.train.config import TrainConfig
from encoder.train.trainer import train
from tests.e2e.harness import drawn_with, sentence_of, wait_ready, wait_settled
from tests.e2e.proxy import Nginx, Request, replicas_behind_nginx

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ROUTE = "ee_route"
STREAM = "/_stcore/stream"
T = TypeVar("T")
APP = "document.querySelector('[data-testid=stApp]')"
# From now on, note whether the page's connection to its server drops.
WATCH_CONNECTION_JS = f"""() => {{
  window.dropped = false;
  new MutationObserver(() => {{
    if ({APP}.getAttribute("data-test-connection-state") !== "CONNECTED") window.dropped = true;
  }}).observe({APP}, {{attributes: true, attributeFilter: ["data-test-connection-state"]}});
}}"""
RECONNECTED_JS = f"""() => window.dropped
  && {APP}.getAttribute("data-test-connection-state") === 'CONNECTED'"""


@pytest.fixture(scope="module")
def proxied(nginx, tmp_path_factory):
    with replicas_behind_nginx(2, tmp_path_factory.mktemp("nginx")) as (nginx, replicas):
        yield nginx, {f"127.0.0.1:{server.port}" for server in replicas}


@pytest.fixture(scope="module")
def checkpoint() -> bytes:
    """A tiny model trained for a few steps, as the zip of its three files (its skill is not
    needed, only files the page accepts)."""
    cfg = TrainConfig(task="reverse", steps=20, held_out_examples=50).with_model(
        d_model=32, num_layers=1
    )
    return checkpoint_archive(train(cfg).task_model().files())


def get(url: str, cookie: str | None = None, data: bytes | None = None) -> tuple[int, str | None]:
    """(status, the route cookie set by the answer) of one request, without a cookie jar."""
    request = urllib.request.Request(url, data=data, method="PUT" if data else "GET")
    if cookie is not None:
        request.add_header("Cookie", f"{ROUTE}={cookie}")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            status, headers = reply.status, reply.headers
    except urllib.error.HTTPError as error:
        status, headers = error.code, error.headers
    routes = [c for c in headers.get_all("Set-Cookie") or [] if c.startswith(f"{ROUTE}=")]
    return status, routes[0].split(";")[0].removeprefix(f"{ROUTE}=") if routes else None


def replicas_by_route(nginx: Nginx) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for request in nginx.requests():
        found.setdefault(request.route, set()).add(request.replica)
    return found


def poll(found: Callable[[], T], timeout_s: float = 15) -> T:
    """found() once it is true (nginx logs a request just after answering it, a websocket once
    it has closed), or its last value after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while not (value := found()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def replica_of(nginx: Nginx, route: str) -> str:
    """The one replica that answered this route's requests."""
    (replica,) = poll(lambda: replicas_by_route(nginx).get(route))
    return replica


def new_route(nginx: Nginx, avoid: set[str] = frozenset()) -> tuple[str, str]:
    """(route, replica) that nginx gives a new browser, on a replica not in `avoid`."""
    for _ in range(64):  # each new route picks a replica at random: 2**-64 to miss
        status, route = get(nginx.url + "/")
        assert status == 200 and route is not None
        replica = replica_of(nginx, route)
        if replica not in avoid:
            return route, replica
    raise AssertionError(f"no new route away from {avoid}")


def test_new_browsers_spread_over_both_replicas_and_each_stays_on_its_own(proxied):
    nginx, replicas = proxied
    routes = [new_route(nginx) for _ in range(16)]
    assert {replica for _, replica in routes} == replicas  # 2**-15 to fail by chance
    assert len({route for route, _ in routes}) == len(routes)
    paths = ("/", "/_stcore/health", "/_stcore/host-config")
    for route, _ in routes:
        for path in paths:
            assert get(nginx.url + path, cookie=route) == (200, route)  # the cookie is kept
    ours = {route for route, _ in routes}

    def all_logged() -> list[Request]:
        found = [r for r in nginx.requests() if r.route in ours]
        return found if len(found) == len(routes) * (1 + len(paths)) else []

    logged = poll(all_logged)
    assert logged
    for route, replica in routes:
        assert {r.replica for r in logged if r.route == route} == {replica}


def test_refused_uploads_stay_on_their_replica_and_take_no_replica_out(proxied):
    """Uploads of 5 MB (over nginx's default 1 MB) reach the replica, which refuses them (no
    session) without reading them and resets the connection (so the answer is its 403, or
    nginx's 502 where the reset came first). nginx must neither resend them to the other
    replica nor count them against the replica: the class keeps both replicas."""
    nginx, replicas = proxied
    route, replica = new_route(nginx)
    url = f"{nginx.url}/_stcore/upload_file/none/none"
    statuses = [get(url, route, data=bytes(5_000_000))[0] for _ in range(6)]
    assert set(statuses) <= {403, 502}, statuses  # no 413: nginx let them through
    others = [new_route(nginx, avoid={replica}) for _ in range(3)]  # the other replica still up
    assert {other for _, other in others} == replicas - {replica}

    def uploads() -> list[Request]:
        found = [r for r in nginx.requests() if r.method == "PUT" and r.route == route]
        return found if len(found) == len(statuses) else []

    assert {upload.replica for upload in poll(uploads)} == {replica}  # never "a, b"
    assert get(nginx.url + "/", route) == (200, route)


def long_text(name: str) -> str:
    """More than the URL keeps (so only the session holds it); the first line is the longest,
    so the head detail shows its tokens unpadded."""
    lines = [sentence_of(45, name)] + [sentence_of(28, f"{name} {i}") for i in range(15)]
    text = "\n".join(lines)
    assert len(text) > MAX_URL_TEXT
    return text


def choose(page, key: str, label_start: str, value: str) -> None:
    """Click a radio option, then wait for its run: the URL says `key=value` (or names no `key`
    where `value` is its default, which a link leaves out), the page settles."""
    page.locator(f".st-key-{key} [data-testid=stRadioOption]").filter(has_text=label_start).click()
    default = DEFAULTS.get(key)
    page.wait_for_url(lambda url: parse_qs(urlparse(url).query).get(key, [default]) == [value])
    wait_settled(page, 60_000)


def uploaded_sources(page) -> list[str]:
    """The labels of the model sources this session holds from uploads."""
    options = page.locator(".st-key-source [data-testid=stRadioOption]").filter(has_text="uploaded")
    return options.all_inner_texts()


def upload(page, name: str, archive: bytes) -> None:
    """Upload a checkpoint as `name`, then go back to random weights (the upload stays in the
    session as a model source)."""
    page.locator(".st-key-upload_0 input[type=file]").set_input_files(
        files=[{"name": name, "mimeType": "application/zip", "buffer": archive}]
    )
    option = page.locator(".st-key-source [data-testid=stRadioOption]")
    option.filter(has_text=f"uploaded {name}").wait_for(timeout=60_000)
    wait_settled(page, 60_000)
    choose(page, "source", "Random weights", "random")


def test_two_browsers_keep_their_own_state_on_their_own_replica(proxied, browser, checkpoint):
    nginx, replicas = proxied
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(2)]
    try:
        first = contexts[0].new_page()
        first.goto(nginx.page_url(view="Attention"))  # a new browser: nginx gives it a route
        wait_ready(first, 60_000)
        (route_a,) = [c["value"] for c in contexts[0].cookies() if c["name"] == ROUTE]
        replica_a = replica_of(nginx, route_a)
        route_b, replica_b = new_route(nginx, avoid={replica_a})
        contexts[1].add_cookies([{"name": ROUTE, "value": route_b, "url": nginx.url}])
        second = contexts[1].new_page()
        second.goto(nginx.page_url(view="Attention"))
        wait_ready(second, 60_000)
        pages = {"alpha": first, "bravo": second}
        texts = {name: long_text(name) for name in pages}
        for name, page in pages.items():
            upload(page, f"{name}.zip", checkpoint)
            box = page.locator(".st-key-text textarea")
            box.fill(texts[name])
            box.press("Control+Enter")
        for label, value in (
            ("Post-norm", "post"),
            ("Pre-norm", "pre"),
        ):  # reruns by another control
            for name, page in pages.items():
                drawn_with(page, texts[name])
                choose(page, "norm", label, value)
        for name, page in pages.items():
            drawn_with(page, texts[name])
            assert "text" not in parse_qs(urlparse(page.url).query)  # only the session has it

        for page in pages.values():
            page.evaluate(WATCH_CONNECTION_JS)
        nginx.reload()  # closes both websockets after a second; the browsers reconnect
        for page in pages.values():
            page.wait_for_function(RECONNECTED_JS, timeout=30_000)
            choose(page, "norm", "Post-norm", "post")  # a rerun over the new websocket
        for name, page in pages.items():
            drawn_with(page, texts[name])
            (label,) = uploaded_sources(page)  # the session's own upload, and only that
            assert label.endswith(f"(uploaded {name}.zip)")
    finally:
        for context in contexts:
            context.close()

    def streams(route: str) -> int:
        return sum(r.path == STREAM and r.route == route for r in nginx.requests())

    assert poll(lambda: streams(route_a) >= 2 and streams(route_b) >= 2)  # reconnected
    seen = replicas_by_route(nginx)
    assert seen[route_a] == {replica_a} and seen[route_b] == {replica_b}
    assert {replica_a, replica_b} == replicas
