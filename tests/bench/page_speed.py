"""How fast is the page in a real browser, against the floor? Prints one table from one run.

Run from the repo root: `python tests/bench/page_speed.py [--visits N] [--reruns N] [--only NAMES]`.
Starts the app and its floors on free loopback ports, drives headless Chromium, and measures, by
--only's names (default: visits; "all": every group). The groups but visits run at 6 layers x 8
heads, d_model 512, 32-36 tokens (BENCH_SETUP) against the floor (tests/bench/floor_page.py: the
same elements from precomputed random numbers, no model):
- views: per view (Attention, Attention steps, LayerNorm, Activations, Shapes; a view the app
  lacks is skipped with a line): the rerun after a text change, from committing the text to the
  view drawn with its tokens, median and min-max of N, on the floor before the app, the app, the
  floor after (drift); app / floor against all the floor's reruns; the script's own time ("page
  N ms" in both pages' status caption) and the bytes received per rerun;
- explorer: the Attention view's rerun beside the reference page (tests/bench/
  plotly_attention_page.py: the app with the Plotly figures of before the explorer), measured
  before and after the app in the same run; the explorer's looks (hover, pin, head switches in
  each mode) timed in the page, 20 of each, and the messages the page sent meanwhile (the goal:
  0); bytes received per rerun at 16 tokens of MiniLM, single and compare, app and reference;
- compare: per view, the same rerun on a compare page (setup B = A post-norm, drawn beside A),
  floor and app, and the app's compare rerun over its single-page rerun;
- minilm: MiniLM at 128 and 502 tokens: time to draw, bytes received, then every look;
- first: a fresh server and a fresh browser context (empty cache), from opening the Attention view
  to it drawn with every element loaded; floor before and after the app;
- visits: every view (Lesson ... Training) against the bare page (tests/bench/bare_page.py: two
  heatmaps and a table from precomputed numbers, no app), on warm servers, MiniLM: the first
  visit (a new browser session opening the view's link, until its main figure shows and every
  element has loaded) and the rerun after a text change (from committing a new text until the
  script is idle again with that figure drawn), --visits times each, as ratios to the bare page's
  first render and rerun measured beside them (each of the view's visits paired with one of the
  bare page's, which goes first alternating); after Cost's visits, its background measurement is
  waited for (untimed) before the next view.
Optional: the naive page (one chart per head, tests/bench/naive_page.py) and the capture
overhead (capture_overhead.py). Each page's elements (types, figure and table sizes) are compared
with the floor's per view, so a floor that no longer matches its view shows.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import difflib
import html
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.e2e.harness import (  # noqa: E402
    BENCH_SETUP,
    BY_TITLE,
    DEEP_ALL_JS,
    DEEP_FIND_JS,
    EXPLORER,
    EXPLORER_IN_JS,
    LOADED_JS,
    SCRIPT_MS_JS,
    StreamlitServer,
    click_view,
    drawn_target,
    expected_tokens,
    launch_chromium,
    sentence_of,
)

APP_SCRIPT = "app/main.py"
FLOOR_SCRIPT = "tests/bench/floor_page.py"
NAIVE_SCRIPT = "tests/bench/naive_page.py"
BARE_SCRIPT = "tests/bench/bare_page.py"
REFERENCE_SCRIPT = "tests/bench/plotly_attention_page.py"
MINILM_TOKENS = (128, 502)
TIMEOUT_MS = 120_000
VIEWPORT = {"width": 1400, "height": 1000}
RATIO_GOAL = 1.2  # app / floor, for every view's rerun and for the first render
LONG_GOAL_S, LONG_GOAL_MB = 5, 10
FIRST_TEXT = sentence_of(29, "first")
STARTED = time.perf_counter()


def labels_json(labels: list[str]) -> str:
    """The labels as JSON.stringify writes the tick text array that holds them."""
    return json.dumps(labels, ensure_ascii=False, separators=(",", ":"))


# view -> (chart key, marker) pairs: the view is drawn for `labels` (the text's tokens as plotly
# holds them, HTML-escaped) when each chart's layout, as JSON, contains marker(labels).
# The key EXPLORER_KEY names the attention explorer instead: its marker is its query tokens (as
# text, not HTML-escaped), and in compare mode it is one element for A and B. The key TABLE_KEY
# names a table of the main area whose first rows begin "position token", in order (the
# Attention steps view's scores and weights); its marker is those beginnings, as JSON (the first
# TABLE_ROWS: a long table's grid holds the rows it shows only). A key "module:NAME" names the
# figures an ES module draws as [data-testid=NAME] (app.components.module_figures, one for each
# setup): its marker is the tokens (as text): each such figure must count them (data-positions or
# data-tokens) and its token labels name them at their positions ([data-role=tick]:
# data-position, data-token-text); a key "module-text:NAME", a module without tokens: its marker
# is a text its drawing holds.
EXPLORER_KEY = "explorer"
TABLE_KEY = "table"
MODULE = "module:"
MODULE_TEXT = "module-text:"
TABLE_ROWS = 4


def one_for_both(key: str) -> bool:
    """In compare mode, no twin keyed "..._b" to wait for: one element, or every module's."""
    return key in (EXPLORER_KEY, TABLE_KEY) or key.startswith((MODULE, MODULE_TEXT))


def raw_labels_json(labels: list[str]) -> str:
    """The labels as text (not HTML-escaped), as JSON."""
    return labels_json([html.unescape(label) for label in labels])


def table_rows_json(labels: list[str]) -> str:
    """The first rows' beginnings, "0[CLS]", "1the", ..., as the table's text holds them."""
    first = labels[:TABLE_ROWS]
    return labels_json([f"{j}{html.unescape(label)}" for j, label in enumerate(first)])


DRAWN: dict[str, tuple[tuple[str, Callable[[list[str]], str]], ...]] = {
    "Attention": ((EXPLORER_KEY, raw_labels_json),),
    "Attention steps": ((TABLE_KEY, table_rows_json),),
    "LayerNorm": ((f"{MODULE}token-lines", raw_labels_json),),
    "Activations": ((f"{MODULE}top-units", raw_labels_json),),  # its first tab
    "Shapes": ((f"{MODULE_TEXT}block-diagram", lambda labels: f"[1, {len(labels)}, "),),
}
# The reference page (tests/bench/plotly_attention_page.py) draws the Attention view's attention
# with the Plotly figures of before the explorer.
REFERENCE_DRAWN = DRAWN | {
    "Attention": (
        ("overview", lambda labels: f", {len(labels)} tokens"),
        ("head_detail", labels_json),
    ),
}

# True once the page shows the text: the script is idle, nothing is stale, every chart is drawn,
# and each [chart key, marker] has its marker in that chart's layout (the explorer: its query
# tokens, as JSON, are the marker).
VIEW_DRAWN_JS = """checks => {
  const app = document.querySelector("[data-testid=stApp]");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (document.querySelector("[data-stale=true]")) return false;
  if ([...document.querySelectorAll(".js-plotly-plot")].some(p => !p._fullData)) return false;
  return checks.every(([key, marker]) => {
    if (key === "EXPLORER_KEY") {
      const root = FIND_EXPLORER(document);
      const tokens = root && [...root.querySelectorAll("[data-side=query]")]
        .map(t => t.textContent);
      const span = root && root.querySelector("[data-role=window]"); // a long input's window
      const all = span ? JSON.parse(marker).slice(+span.dataset.start, +span.dataset.end) : null;
      return !!root && JSON.stringify(tokens) === (span ? JSON.stringify(all) : marker);
    }
    if (key === "TABLE_KEY") {
      const rows = JSON.parse(marker);
      const tables = "[data-testid=stMainBlockContainer] [data-testid=stDataFrame] table";
      return [...document.querySelectorAll(tables)].some(table => {
        const text = table.textContent;
        let at = 0;
        return rows.every(row => (at = text.indexOf(row, at)) >= 0 && (at += row.length));
      });
    }
    if (key.startsWith("MODULE_TEXT")) {
      const roots = DEEP_ALL(document, `[data-testid=${key.slice("MODULE_TEXT".length)}]`);
      return roots.length > 0 && roots.every(root => root.textContent.includes(marker));
    }
    if (key.startsWith("MODULE")) {
      const tokens = JSON.parse(marker);
      const roots = DEEP_ALL(document, `[data-testid=${key.slice("MODULE".length)}]`);
      const ticks = root => [...root.querySelectorAll("[data-role=tick]")];
      const count = root => +(root.dataset.positions ?? root.dataset.tokens);
      return roots.length > 0 && roots.every(root => count(root) === tokens.length
        && ticks(root).every(tick => tick.dataset.tokenText === tokens[+tick.dataset.position]));
    }
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    return !!plot && !!plot._fullData && JSON.stringify(plot.layout).includes(marker);
  });
}"""
for name, value in (("EXPLORER_KEY", EXPLORER_KEY), ("TABLE_KEY", TABLE_KEY),
                    ("MODULE_TEXT", MODULE_TEXT), ("MODULE", MODULE),  # the longer name first
                    ("FIND_EXPLORER", EXPLORER_IN_JS), ("DEEP_ALL", DEEP_ALL_JS)):  # fmt: skip
    VIEW_DRAWN_JS = VIEW_DRAWN_JS.replace(name, value)
STATUS_JS = """() => [...document.querySelectorAll("[data-testid=stCaptionContainer]")]
  .map(c => c.textContent).find(t => t.includes("page ")) || ''"""
# Every element on the page, in order: its type, and for charts and tables their sizes.
INVENTORY_JS = """() => [...document.querySelectorAll("[data-testid=stElementContainer]")]
  .map(box => {
    const explorer = FIND_EXPLORER(box);
    if (explorer) {
      const tokens = explorer.querySelectorAll("[data-side=query]").length;
      return `explorer: ${tokens} query tokens, ${explorer.dataset.mode}`;
    }
    const key = (box.className.match(/st-key-(\\S+)/) || ["", ""])[1];
    const plot = box.querySelector(".js-plotly-plot");
    if (plot && plot._fullData) {
      const z = (plot._fullData[0] || {}).z;
      const size = z ? ` ${z.length}x${z[0].length}` : "";
      const notes = (plot.layout.annotations || []).length;
      return `${key} chart: ${plot._fullData.length} traces${size}, ${notes} annotations, `
        + `${plot.layout.height} px`;
    }
    const grid = box.querySelector("table[aria-rowcount]");
    const cells = name => grid && grid.getAttribute(`aria-${name}count`);
    if (grid) return `table ${cells("row")} x ${cells("col")}`;
    const inner = [...box.querySelectorAll("[data-testid]")]
      .map(e => e.getAttribute("data-testid")).find(id => id !== "stFullScreenFrame");
    return `${key} ${inner || "?"}`.trim();
  })""".replace("FIND_EXPLORER", EXPLORER_IN_JS)
VIEW_LINKS_JS = """() => [...document.querySelectorAll("[data-testid=stTopNavLink]")]
  .map(link => link.textContent.trim())"""
NAIVE_DRAWN_JS = """expected => {
  const app = document.querySelector("[data-testid=stApp]");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (document.querySelector("[data-stale=true]")) return false;
  const plots = [...document.querySelectorAll(".js-plotly-plot")];
  return plots.length === expected.charts && plots.every(p => p._fullData
    && (p.layout.xaxis.ticktext || []).join("\\u0000") === expected.labels.join("\\u0000"));
}"""


def progress(message: str) -> None:
    """A line on stderr, so a long run shows where it is."""
    print(f"[{time.perf_counter() - STARTED:4.0f} s] {message}", file=sys.stderr, flush=True)


@dataclass
class Timings:
    """Timed reruns of one page, and what it showed."""

    seconds: list[float] = field(default_factory=list)
    script_ms: list[float] = field(default_factory=list)  # the page's "page N ms"
    received: list[int] = field(default_factory=list)  # websocket bytes per rerun
    inventory: list[str] = field(default_factory=list)
    status: str = ""

    def drop_warmup(self) -> Timings:
        for values in (self.seconds, self.script_ms, self.received):
            del values[:1]
        return self

    def median(self) -> float:
        return statistics.median(self.seconds)

    def spread(self) -> str:
        """'0.52 s (0.47-0.61)'."""
        return f"{self.median():.2f} s ({min(self.seconds):.2f}-{max(self.seconds):.2f})"


@dataclass
class Session:
    """One Streamlit session in one browser page, and the websocket bytes it has received."""

    page: object
    view: str
    text: str
    compare: bool = False  # setup B beside A: B's charts are waited for too
    drawn: dict = field(default_factory=lambda: DRAWN)  # what shows each view drawn
    received: int = 0  # bytes
    sent: int = 0  # messages to the server

    def count(self, payload) -> None:
        self.received += len(payload)

    def count_sent(self, payload) -> None:
        self.sent += 1

    def listen(self, websocket) -> None:
        websocket.on("framereceived", self.count)
        websocket.on("framesent", self.count_sent)


class Browser:
    """One headless Chromium whose pages collect their console errors.

    Pages share one browser context (its HTTP cache holds Streamlit's code, so a page opens in
    seconds), but for first renders, which get a fresh one: a first visitor's empty cache.
    """

    def __init__(self, playwright) -> None:
        self.chromium = launch_chromium(playwright)
        self.shared = self.chromium.new_context(viewport=VIEWPORT)
        self.errors: list[str] = []

    @contextlib.contextmanager
    def session(self, server: StreamlitServer, view: str, text: str, fresh: bool = False,
                drawn: dict = DRAWN, **query: object) -> Iterator[Session]:  # fmt: skip
        """A new session showing `view` with `text` at the bench setup (and `query`), drawn;
        `drawn`: what shows a view drawn on this page (REFERENCE_DRAWN on the reference page)."""
        context = self.chromium.new_context(viewport=VIEWPORT) if fresh else self.shared
        page = context.new_page()
        session = Session(page, view, text, compare=query.get("compare") == "1", drawn=drawn)
        page.on("websocket", session.listen)
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        try:
            page.goto(server.page_url(**BENCH_SETUP, view=view, text=text, timing=1, **query))
            wait_drawn(session)
            yield session
        finally:  # before its server goes, or the page logs reconnection attempts
            page.close()
            if fresh:
                context.close()


def checks_for(session: Session, text: str) -> list[list[str]]:
    """VIEW_DRAWN_JS's argument: the session's view's charts (and in compare mode setup B's
    twins, keyed `..._b`; the explorer draws both) and their markers for this text."""
    labels = drawn_target(expected_tokens(text)[0])["labels"]
    charts = session.drawn[session.view]
    keys = list(charts)
    if session.compare:
        keys += [(f"{key}_b", marker) for key, marker in charts if not one_for_both(key)]
    return [[key, marker(labels)] for key, marker in keys]


def wait_drawn(session: Session) -> None:
    """Until the session's view shows its text and every element's code has loaded."""
    page = session.page
    checks = checks_for(session, session.text)
    page.wait_for_function(VIEW_DRAWN_JS, arg=checks, timeout=TIMEOUT_MS, polling="raf")
    page.wait_for_function(LOADED_JS, timeout=TIMEOUT_MS, polling="raf")


def commit_text(session: Session, text: str) -> float:
    """Seconds from committing `text` (Ctrl+Enter) until the session's view shows it."""
    box = session.page.locator(".st-key-text textarea")
    box.fill(text)
    checks = checks_for(session, text)
    start = time.perf_counter()
    box.press("Control+Enter")
    session.page.wait_for_function(VIEW_DRAWN_JS, arg=checks, timeout=TIMEOUT_MS, polling="raf")
    session.text = text
    return time.perf_counter() - start


def open_view(session: Session, view: str) -> None:
    """Click the view in the navigation and wait until it shows the session's text (not
    timed)."""
    session.page.bring_to_front()
    if view != session.view:
        click_view(session.page, view)
        session.view = view
        wait_drawn(session)


def measure_reruns(session: Session, view: str, texts: list[str]) -> Timings:
    """Open `view`, then commit each text; the first commit only warms up."""
    progress(f"{view}: reruns, {session.page.url.split('/?')[0]}")
    open_view(session, view)
    timings = Timings(inventory=session.page.evaluate(INVENTORY_JS))
    for text in texts:
        before = session.received
        timings.seconds.append(commit_text(session, text))
        timings.script_ms.append(session.page.evaluate(SCRIPT_MS_JS))
        timings.received.append(session.received - before)
    timings.status = session.page.evaluate(STATUS_JS)
    return timings.drop_warmup()


@dataclass
class FirstRender:
    server_start: float
    seconds: float
    views: list[str]  # the page's view links (its navigation)


def measure_first_render(browser: Browser, script: str) -> FirstRender:
    """A fresh server and an empty browser cache: from opening the page to the view drawn."""
    progress(f"first render, {script}")
    server = StreamlitServer(script)
    try:
        start = time.perf_counter()
        with browser.session(server, "Attention", FIRST_TEXT, fresh=True) as session:
            seconds = time.perf_counter() - start
            views = session.page.evaluate(VIEW_LINKS_JS)
        return FirstRender(server.up_s, seconds, views)
    finally:
        server.stop()


# Every look the explorer answers in the browser, `count` times each, timed in the page: from
# just before the event is dispatched to the frame that shows it (the next animation frame's
# callback, then a task after it: that frame's paint is done). Hover: a mouseenter on a query
# token; pin: a click on one; head: ←/→ on the explorer's root, in each of its modes.
LOOKS_JS = """async (root, count) => {
  const painted = () => new Promise(resolve => requestAnimationFrame(() => {
    const channel = new MessageChannel();
    channel.port1.onmessage = resolve;
    channel.port2.postMessage(0);
  }));
  const timed = async act => {
    const start = performance.now();
    act();
    await painted();
    return performance.now() - start;
  };
  const queries = () => [...root.querySelectorAll("[data-side=query]")];
  const key = name => new KeyboardEvent("keydown", {key: name, bubbles: true, cancelable: true});
  const mode = async name => {
    root.querySelector(`[data-role=mode][data-mode=${name}]`).click();
    await painted();
  };
  const times = {hover: [], pin: []};
  await mode("lines");
  const n = queries().length;
  for (let k = 0; k < count; k++) {
    const token = queries()[(k * 7) % n];
    times.hover.push(await timed(() => token.dispatchEvent(new MouseEvent("mouseenter"))));
  }
  for (let k = 0; k < count; k++) {
    const token = queries()[(k * 5 + 1) % n];
    times.pin.push(await timed(() => token.click()));
  }
  root.dispatchEvent(key("Escape"));
  for (const name of ["lines", "matrix", "heads"]) {
    await mode(name);
    const head = times[`head, ${name === "heads" ? "every head" : name}`] = [];
    const next = () => root.dispatchEvent(key("ArrowRight"));
    for (let k = 0; k < count; k++) head.push(await timed(next));
  }
  await mode("lines");
  return times;
}"""
LOOKS = 20  # of each kind
LOOK_GOAL_MS = 50  # the bench setup and 16-128 tokens
LONG_LOOK_GOAL_MS = 100  # MiniLM at 502 tokens
REPORT_WAIT_MS = 1500  # the explorer reports its settled head 1 s after the last change


@dataclass
class Looks:
    """The explorer's looks timed in the page (ms, by kind), and the messages the page sent to
    the server meanwhile."""

    ms: dict[str, list[float]]
    sent: int

    def slowest(self) -> float:
        return max(statistics.median(values) for values in self.ms.values())

    def rows(self, label: str, goal_ms: float) -> list[str]:
        return [
            row(
                f"{label}: {look}",
                f"{spread_ms(values)}, {self.sent} sent",
                "-",
                "-",
                f"<= {goal_ms:g} ms, 0 sent",
                verdict(statistics.median(values) <= goal_ms and self.sent == 0),
                "-",
                "-",
            )  # fmt: skip
            for look, values in self.ms.items()
        ]


def measure_looks(session: Session, count: int = LOOKS) -> Looks:
    """Hover, pin and head switches in the explorer, `count` of each, timed in the page; then
    (not counted) the explorer's report of its settled head, and the rerun it brings."""
    progress(f"explorer looks, {session.page.url.split('/?')[0]}")
    open_view(session, "Attention")
    page = session.page
    before = session.sent
    times = page.locator(EXPLORER).evaluate(LOOKS_JS, count)
    page.wait_for_timeout(100)  # frames sent by then have been reported
    looks = Looks(times, session.sent - before)
    page.wait_for_timeout(REPORT_WAIT_MS)
    wait_drawn(session)
    return looks


def spread_ms(values: list[float]) -> str:
    """'12 ms (9-31)': the median and the range."""
    return f"{statistics.median(values):.0f} ms ({min(values):.0f}-{max(values):.0f})"


MINILM = {"source": "pretrained"}
PAYLOAD_GOAL_MB = 3  # MiniLM at 502 tokens: what one rerun receives, at most


def measure_minilm(browser: Browser, server: StreamlitServer, tokens: int) -> list[str]:
    """MiniLM on a text of `tokens` tokens: time to draw, bytes received, then every look."""
    progress(f"MiniLM, {tokens} tokens")
    text = text_of(tokens, f"minilm{tokens}")
    with browser.session(server, "Attention", FIRST_TEXT, **MINILM) as session:
        before = session.received
        seconds = commit_text(session, text)
        megabytes = (session.received - before) / 1e6
        looks = measure_looks(session)
    goal_ms = LOOK_GOAL_MS if tokens <= 128 else LONG_LOOK_GOAL_MS
    label = f"MiniLM, {len(expected_tokens(text)[0])} tokens"
    return [
        row(
            f"{label}: draw / received",
            f"{seconds:.2f} s / {megabytes:.2f} MB",
            "-",
            "-",
            f"<= {LONG_GOAL_S} s / <= {PAYLOAD_GOAL_MB} MB",
            verdict(seconds <= LONG_GOAL_S and megabytes <= PAYLOAD_GOAL_MB),
            "-",
            "-",
        ),  # fmt: skip
        *looks.rows(label, goal_ms),
    ]


# Bytes a rerun received before the explorer (2026-11-23, 16 tokens of MiniLM, the Attention view
# with Plotly figures), single and compare; the goal is a third of it.
BYTES_BEFORE_KB = {"single": 385, "compare": 1164}


def measure_minilm_bytes(browser, app_server, reference_server, reruns: int) -> list[str]:
    """Bytes received per rerun of the Attention view, 16 tokens of MiniLM, single and compare:
    the app beside the Plotly reference page."""
    rows = []
    for mode, query in (("single", MINILM), ("compare", MINILM | COMPARE)):
        received = {}
        for name, server, drawn in (
            ("app", app_server, DRAWN),
            ("reference", reference_server, REFERENCE_DRAWN),
        ):
            texts = [text_of(16, f"{name}{mode}bytes{i:02d}") for i in range(reruns + 1)]
            with browser.session(server, "Attention", FIRST_TEXT, drawn=drawn, **query) as page:
                received[name] = measure_reruns(page, "Attention", texts).received
        goal = BYTES_BEFORE_KB[mode] / 3
        app_kb = statistics.median(received["app"]) / 1e3
        rows.append(row(
            f"MiniLM, 16 tokens, {mode}: received per rerun", f"{app_kb:.0f} kB", "-", "-",
            f"<= {goal:.0f} kB (a third of {BYTES_BEFORE_KB[mode]:,} kB)", verdict(app_kb <= goal),
            "-", f"{app_kb:.0f} kB / reference {kilobytes(received['reference'])}",
        ))  # fmt: skip
    return rows


def measure_naive(browser: Browser, reruns: int) -> Timings:
    """The naive page (one chart per head, the app's cached runs): rerun after a text change."""
    progress("naive page")
    server = StreamlitServer(NAIVE_SCRIPT)
    timings = Timings()
    page = browser.shared.new_page()
    try:
        page.goto(server.page_url())
        for i in range(reruns + 1):
            text = sentence_of(29 + i % 2, f"naive{i}")
            target = {"charts": 48, "labels": drawn_target(expected_tokens(text)[0])["labels"]}
            box = page.locator(".st-key-text textarea")
            box.fill(text)
            start = time.perf_counter()
            box.press("Control+Enter")
            page.wait_for_function(NAIVE_DRAWN_JS, arg=target, timeout=TIMEOUT_MS)
            timings.seconds.append(time.perf_counter() - start)
    finally:
        page.close()
        server.stop()
    return timings.drop_warmup()


def text_of(tokens: int, tag: str) -> str:
    """A sentence of exactly `tokens` tokens ([CLS] and [SEP] included) that starts with `tag`."""
    words = tokens - 3  # the tag is at least one token, and "." one more
    while len(expected_tokens(text := sentence_of(words, tag))[0]) > tokens:
        words -= 1
    return text


def rerun_texts(tag: str, count: int) -> list[str]:
    """Texts of 31, 32, ... tokens (the first one only warms up), each new to the app's cache of
    runs. Each has a new token count and words of its own: nothing a page sends (a shape, a
    table of shapes, a figure) repeats an earlier rerun's, which Streamlit would send as a mere
    reference to the browser's cached copy."""
    return [text_of(31 + i, f"{tag}{i:02d}") for i in range(count)]


def element_differences(app: list[str], floor: list[str]) -> list[str]:
    """Where the floor's element list differs from the app's ('- ' app, '+ ' floor)."""
    return [line for line in difflib.ndiff(app, floor) if line.startswith(("- ", "+ "))]


def ms(values: list) -> str:
    return f"{statistics.median(values):.0f} ms" if values and None not in values else "-"


def kilobytes(values: list[int]) -> str:
    return f"{statistics.median(values) / 1e3:.0f} kB" if values else "-"


def row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def verdict(ok: bool) -> str:
    return "pass" if ok else "FAIL"


@dataclass
class Comparison:
    """One measure on the floor before the app, on the app, and on the floor after."""

    name: str
    before: Timings
    app: Timings
    after: Timings

    def ratio(self) -> float:
        return self.app.median() / statistics.median(self.before.seconds + self.after.seconds)

    def row(self, goal: str, ok: bool) -> str:
        floor_ms = self.before.script_ms + self.after.script_ms
        floor_received = self.before.received + self.after.received
        return row(
            self.name, self.app.spread(), f"{self.before.spread()} / {self.after.spread()}",
            f"{self.ratio():.2f}x", goal, verdict(ok), f"{ms(self.app.script_ms)} / {ms(floor_ms)}",
            f"{kilobytes(self.app.received)} / {kilobytes(floor_received)}",
        )  # fmt: skip


def compare(measure: Callable[[Session, str], Timings], floor: Session, app: Session) -> tuple:
    """The measure on the floor, the app, then the floor again (drift shows as before / after);
    each gets a tag of its own for its texts."""
    return measure(floor, "before"), measure(app, "app"), measure(floor, "after")


COMPARE = {"compare": "1", "b_norm": "post"}  # setup B: the same model, post-norm
COMPARE_GOAL = 2.0  # a compare page's rerun / the single page's, at most about
COMPARE_GOALS = {"Attention": 1.5}  # the explorer draws A, B and B − A from one payload
REFERENCE_GOAL = 0.8  # the Attention rerun / the Plotly reference page's
GROUPS = ("views", "explorer", "compare", "minilm", "first", "visits")  # --only's names
DEFAULT_GROUPS = ("visits",)  # what a plain run measures (the rest: --only)


def measure_compare(browser, floor_server, app_server, token_counts, single, args) -> list[str]:
    """Per view, the rerun of a compare page (A and B = A post-norm) on the floor and the app;
    the goal: at most about twice the single page's rerun (measured above, in this run; the
    Attention view: 1.5x), over the single page when it was measured."""
    rows = []
    with (
        browser.session(
            floor_server, "Attention", FIRST_TEXT, token_counts=token_counts, **COMPARE
        ) as floor,
        browser.session(app_server, "Attention", FIRST_TEXT, **COMPARE) as app,
    ):
        for view in args.views:
            count = args.reruns + 1

            def measure(session: Session, tag: str, view=view, count=count) -> Timings:
                texts = rerun_texts(f"{tag}compare{view.split()[0].lower()}", count)
                return measure_reruns(session, view, texts)

            reruns = Comparison(f"{view}, compare: rerun", *compare(measure, floor, app))
            goal = COMPARE_GOALS.get(view, COMPARE_GOAL)
            if view not in single:
                rows.append(reruns.row(f"<= {goal:g}x single (not measured)", True))
                continue
            over_single = reruns.app.median() / single[view].app.median()
            rows.append(
                reruns.row(f"<= {goal:g}x single ({over_single:.2f}x)", over_single <= goal)
            )
    return rows


def measure_views(browser, servers, token_counts, args, rows, notes) -> dict[str, Comparison]:
    """Per view, the rerun after a text change on the floor, the app, the floor again (with
    "explorer": the Attention view's beside the Plotly reference page, before and after the
    app, and the explorer's looks); the Attention view alone unless "views" is asked for."""
    single = {}
    with contextlib.ExitStack() as stack:
        floor, app = (
            stack.enter_context(browser.session(servers["floor"], "Attention", FIRST_TEXT,
                                                token_counts=token_counts)),
            stack.enter_context(browser.session(servers["app"], "Attention", FIRST_TEXT)),
        )  # fmt: skip
        reference = None
        if "explorer" in args.only:
            reference = stack.enter_context(
                browser.session(
                    servers["reference"], "Attention", FIRST_TEXT, drawn=REFERENCE_DRAWN
                )
            )
        for view in args.views:
            count = args.reruns + 1

            def measure(session: Session, tag: str, view=view, count=count) -> Timings:
                texts = rerun_texts(f"{tag}{view.split()[0].lower()}", count)
                return measure_reruns(session, view, texts)

            plotly = reference is not None and view == "Attention"
            reference_before = measure(reference, "refbefore") if plotly else None
            reruns = Comparison(f"{view}: rerun after a text change", *compare(measure, floor, app))
            single[view] = reruns
            ratio = reruns.ratio()
            rows.append(reruns.row(f"<= {RATIO_GOAL}x", ratio <= RATIO_GOAL))
            differences = element_differences(reruns.app.inventory, reruns.before.inventory)
            notes.append(
                f"{view}: the floor draws the app's {len(reruns.app.inventory)} elements"
                if not differences
                else f"{view}: elements differ (- app, + floor): " + "; ".join(differences)
            )
            notes.append(f"{view}: app status at its last rerun: {reruns.app.status}")
            if plotly:
                against = Comparison(
                    "Attention: rerun, app / Plotly reference page (before / after)",
                    reference_before, reruns.app, measure(reference, "refafter"),
                )  # fmt: skip
                rows.append(against.row(f"<= {REFERENCE_GOAL}x", against.ratio() <= REFERENCE_GOAL))
                notes.append(f"reference page's status at its last rerun: {against.after.status}")
        if "explorer" in args.only:
            rows.extend(measure_looks(app).rows("explorer, bench setup", LOOK_GOAL_MS))
    return single


VISIT_VIEWS = (
    "Lesson", "Tokens", "Attention", "Attention steps", "LayerNorm", "Activations", "Shapes",
    "Cost", "Heads across a corpus", "Exercises", "Export", "What it is for", "Interventions",
    "Training",
)  # fmt: skip
# views whose main figure needs two sentences (a similarity matrix): their visits' texts have two
# lines, the bare page's beside them too
TWO_LINES = ("What it is for",)
# A view's main figure, as a selector in the main area (or a list: every one), looked for in the
# shadow roots of Custom Components v2 too; a view not named here: a Plotly chart,
# the attention explorer or a table, a grid or HTML (the Lesson's first step, the Tokens view),
# whichever it draws.
MAIN_FIGURE = {
    # inside their components' shadow roots
    "LayerNorm": "[data-testid=token-lines] [data-role=tick]",
    "Activations": [
        "[data-testid=value-histogram] [data-role=bar]",
        "[data-testid=top-units] [data-role=cell]",
    ],
    "Shapes": "[data-testid=block-diagram] [data-role=box]",
    "Heads across a corpus": "[data-testid=head-fingerprint] [data-role=cell]",
    "Exercises": "[data-testid=stTable]",
    "Export": "[data-testid=stDownloadButton]",
    "Training": "[data-testid=stButton]",
    "What it is for": "[data-testid=similarity-matrix] [data-testid=similarity-cell]",
    # its grids, patched before the timed visit (PATCHED_FIRST)
    "Interventions": ".st-key-patch_residual_a .js-plotly-plot",
}
VISIT_SOURCE = {"source": "pretrained"}  # MiniLM, as the measures
# Work a view leaves running on the server after its visits (Cost's measurement, in the
# background): waited for, untimed, before the next view, so that it slows no other view.
SETTLES = {
    "Cost": ".st-key-cost_operations .js-plotly-plot",
    "Interventions": ".st-key-patch_residual_a .js-plotly-plot",
}
SETTLE_TIMEOUT_MS = 300_000
# Views whose visits are timed once their background work for the visit's texts is done
# (Interventions: the goal, "once the grids are computed"): each text opened and waited
# for, untimed, before the pair of visits
PATCHED_FIRST = ("Interventions",)
# True once the page is drawn: the script idle (and, after a commit, it ran since), nothing
# stale, every element's code loaded, every Plotly chart drawn, and the main figure there.
SHOWN_JS = """main => {
  const app = document.querySelector("[data-testid=stApp]");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (window.benchCommitted && !window.benchRan && !(QUIET)()) return false;
  if (document.querySelector("[data-stale=true]")) return false;
  if (!(LOADED)()) return false;
  const area = document.querySelector("[data-testid=stMainBlockContainer]");
  if (!area) return false;
  const plots = [...area.querySelectorAll(".js-plotly-plot")];
  if (plots.some(p => !p._fullData)) return false;
  if (main) return [].concat(main).every(selector => !!DEEP_FIND(area, selector));
  const explorer = FIND_EXPLORER(area);
  return plots.length > 0 || (!!explorer && !!explorer.querySelector("[data-side=query]"))
    || !!area.querySelector("[data-testid=stDataFrame] table[aria-rowcount]")
    || !!area.querySelector("[data-testid=stTable]");
}"""
# A run the page never showed as running: a quick one (the bare page's 11 ms) can start and end
# within one of React's renders, so that the script's state never changes in the document. Once
# the server has answered the request and then been silent for QUIET_MS, that run is over (its
# time then counts the wait: an outlier, here once in about 60 of the bare page's reruns).
QUIET_MS = 1000
QUIET_JS = f"""() => window.benchSentAt !== null && window.benchAnsweredAt > window.benchSentAt
  && performance.now() - window.benchAnsweredAt > {QUIET_MS}"""
for _name, _js in (
    ("QUIET", QUIET_JS),
    ("FIND_EXPLORER", EXPLORER_IN_JS),
    ("DEEP_FIND", DEEP_FIND_JS),
    ("LOADED", LOADED_JS),
):
    SHOWN_JS = SHOWN_JS.replace(_name, _js)
# The page in Spanish: its document's language, which the run's first elements set
# (app/assets/page/language.js); with SHOWN_JS after it, the run that speaks it is drawn
SPANISH_JS = '() => document.documentElement.lang === "es"'
# Before a commit: watch the script's state, so that SHOWN_JS waits for the run it starts; and
# note when the page first sends to the server after it (the commit's request: SINCE_REQUEST_JS)
WATCH_RUN_JS = """() => {
  window.benchCommitted = true;
  window.benchRan = false;
  window.benchSentAt = null;
  if (!window.benchSendWatched) {
    window.benchSendWatched = true;
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
      if (window.benchSentAt === null) window.benchSentAt = performance.now();
      if (!this.benchHeard) {  // when the server last sent anything (QUIET_JS)
        this.benchHeard = true;
        this.addEventListener("message", () => { window.benchAnsweredAt = performance.now(); });
      }
      return send.call(this, data);
    };
  }
  const app = document.querySelector("[data-testid=stApp]");
  // a quick run can be over before the callback reads the attribute: its old values say it ran
  new MutationObserver(records => {
    if (app.getAttribute("data-test-script-state") === "running"
        || records.some(r => r.oldValue === "running")) window.benchRan = true;
  }).observe(app, {attributes: true, attributeOldValue: true,
                   attributeFilter: ["data-test-script-state"]});
}"""


# Seconds from the commit's request (the first message the page sent since WATCH_RUN_JS) to now:
# a rerun's or a language switch's time without the control's own (a key, a dropdown's option)
SINCE_REQUEST_JS = "() => (performance.now() - window.benchSentAt) / 1000"


@dataclass
class Visits:
    """One page's first visits and reruns after a text change, in seconds."""

    first: list[float] = field(default_factory=list)
    rerun: list[float] = field(default_factory=list)
    rerun_script_ms: list[float] = field(default_factory=list)
    rerun_received: list[int] = field(default_factory=list)
    language: list[float] = field(default_factory=list)  # switching the page to Spanish
    language_script_ms: list[float] = field(default_factory=list)
    # the rerun and the switch from their requests (without the key's or the option's time)
    rerun_from_request: list[float] = field(default_factory=list)
    language_from_request: list[float] = field(default_factory=list)


def wait_shown(page, main: str | None, what: str) -> None:
    """Until SHOWN_JS; past TIMEOUT_MS, a screenshot beside the error says what the page showed."""
    try:
        page.wait_for_function(SHOWN_JS, arg=main, timeout=TIMEOUT_MS, polling="raf")
    except PlaywrightTimeout as error:
        shot = Path(os.environ.get("TMPDIR", "/tmp")) / "page_speed_timeout.png"
        page.screenshot(path=str(shot), full_page=True)
        message = f"{what}: not shown in {TIMEOUT_MS} ms ({page.url}; {shot})"
        raise PlaywrightTimeout(message) from error


def visit(browser: Browser, url: str, main: str | None, text: str, visits: Visits,
          switch_language: bool = False) -> None:  # fmt: skip
    """A new browser session opens `url`, timed until its main figure shows; then the text
    changes, timed until the page shows the rerun it brings; then (`switch_language`: the app)
    the sidebar's language control switches the page to Spanish, timed until it shows in it."""
    page = browser.shared.new_page()
    session = Session(page, "", "")
    page.on("websocket", session.listen)
    page.on("console", lambda m: browser.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: browser.errors.append(str(e)))
    try:
        start = time.perf_counter()
        page.goto(url)
        wait_shown(page, main, "first visit")
        visits.first.append(time.perf_counter() - start)
        box = page.locator("[data-testid=stSidebar] .st-key-text textarea")
        box.fill(text)
        page.evaluate(WATCH_RUN_JS)
        before = session.received
        start = time.perf_counter()
        box.press("Control+Enter")
        wait_shown(page, main, "rerun")
        visits.rerun.append(time.perf_counter() - start)
        visits.rerun_from_request.append(page.evaluate(SINCE_REQUEST_JS))
        visits.rerun_script_ms.append(page.evaluate(SCRIPT_MS_JS))
        visits.rerun_received.append(session.received - before)
        if switch_language:
            page.locator(".st-key-_language input").click()
            option = page.get_by_role("option", name="Español", exact=True)
            page.evaluate(WATCH_RUN_JS)
            start = time.perf_counter()
            option.click()
            page.wait_for_function(SPANISH_JS, timeout=TIMEOUT_MS, polling="raf")
            wait_shown(page, main, "language switch")
            visits.language.append(time.perf_counter() - start)
            visits.language_from_request.append(page.evaluate(SINCE_REQUEST_JS))
            visits.language_script_ms.append(page.evaluate(SCRIPT_MS_JS))
    finally:
        page.close()


def settle(browser: Browser, url: str, done: str) -> None:
    """Open `url` and wait (untimed) until `done` shows: the view's background work has ended."""
    progress(f"visits: waiting for {url.split('?')[0]} to finish its background work")
    page = browser.shared.new_page()
    try:
        page.goto(url)
        page.wait_for_selector(done, timeout=SETTLE_TIMEOUT_MS)
    finally:
        page.close()


def ratio_spread(values: list[float], base: float) -> str:
    """'1.05x (0.91-1.30)': each value over `base`, the median and the range."""
    ratios = [value / base for value in values]
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def seconds_spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def measure_visits(browser: Browser, args, notes: list[str]) -> list[str]:
    """Every view's first visit and rerun after a text change (MiniLM, warm servers), over the
    bare page's, each of the view's visits beside one of the bare page's (which goes first
    alternates), so that what slows the machine for a while slows both sides of a ratio."""
    app, bare = StreamlitServer(APP_SCRIPT), StreamlitServer(BARE_SCRIPT)
    views = args.visit_views or list(VISIT_VIEWS)
    try:
        by_view = {view: Visits() for view in views}
        bare_by_view = {view: Visits() for view in views}

        def app_url(view: str, text: str) -> str:
            query = urlencode({**VISIT_SOURCE, "text": text, "timing": 1})  # its status line
            return f"{app.url}/{BY_TITLE[view].path}?{query}"

        progress("visits: warming the servers")  # the model loaded, Streamlit's code cached
        visit(browser, app_url("Lesson", FIRST_TEXT), None, "warm up.", Visits())
        visit(browser, bare.page_url(text=FIRST_TEXT), None, "warm up.", Visits())
        for view in views:
            progress(f"visits: {view}, each visit beside one of the bare page's")
            for k in range(args.visits):
                first, second = (sentence_of(29 + k % 2, f"{view[:4]}{k}{i}") for i in (0, 1))
                if view in TWO_LINES:
                    two = sentence_of(12, "two")
                    first, second = (f"{text}\n{two}" for text in (first, second))
                for text in (first, second) if view in PATCHED_FIRST else ():
                    settle(browser, app_url(view, text), SETTLES[view])
                pair = [
                    (bare.page_url(text=first), None, bare_by_view[view], False),
                    (app_url(view, first), MAIN_FIGURE.get(view), by_view[view], True),
                ]
                for url, main, into, switch in pair if k % 2 == 0 else pair[::-1]:
                    visit(browser, url, main, second, into, switch_language=switch)
            if view in SETTLES:
                settle(browser, app_url(view, FIRST_TEXT), SETTLES[view])
    finally:
        app.stop()
        bare.stop()
    rows = []
    for view, measured in by_view.items():
        paired = bare_by_view[view]
        for what, values, base in (
            ("first visit", measured.first, paired.first),
            ("rerun after a text change", measured.rerun, paired.rerun),
        ):
            ratio = statistics.median(values) / statistics.median(base)
            rerun = what.startswith("rerun")
            rows.append(row(
                f"{view}: {what}", seconds_spread(values), seconds_spread(base),
                ratio_spread(values, statistics.median(base)), f"<= {RATIO_GOAL}x (bare page)",
                verdict(ratio <= RATIO_GOAL),
                f"{ms(measured.rerun_script_ms)} / {ms(paired.rerun_script_ms)}" if rerun else "-",
                f"{kilobytes(measured.rerun_received)} / {kilobytes(paired.rerun_received)}"
                if rerun else "-",
            ))  # fmt: skip
        own_rerun = statistics.median(measured.rerun_from_request)
        rows.append(row(
            f"{view}: switching the language (to Spanish), from its request",
            seconds_spread(measured.language_from_request),
            seconds_spread(measured.rerun_from_request),
            ratio_spread(measured.language_from_request, own_rerun),
            f"<= {RATIO_GOAL}x (the view's rerun, from its request)",
            verdict(statistics.median(measured.language_from_request) / own_rerun <= RATIO_GOAL),
            f"{ms(measured.language_script_ms)} / {ms(measured.rerun_script_ms)}",
            f"whole switch {seconds_spread(measured.language)}",
        ))  # fmt: skip
    firsts = [statistics.median(paired.first) for paired in bare_by_view.values()]
    reruns = [statistics.median(paired.rerun) for paired in bare_by_view.values()]
    notes.append(
        f"visits: the bare page's medians beside each view: first render {min(firsts):.2f}-"
        f"{max(firsts):.2f} s, rerun {min(reruns):.2f}-{max(reruns):.2f} s; each view's visit "
        f"opens its link with a new text (MiniLM)"
    )
    return rows


def measure_on_servers(browser: Browser, args, rows: list[str], notes: list[str]) -> dict:
    """The groups measured on one app server (and the floor and reference servers they need):
    views, explorer, compare, minilm; returns the single views' reruns by view."""
    only = args.only
    scripts = {"floor": FLOOR_SCRIPT, "app": APP_SCRIPT, "reference": REFERENCE_SCRIPT}
    needed = ["app"] + ["floor"] * bool({"views", "explorer", "compare"} & set(only))
    needed += ["reference"] * ("explorer" in only)
    servers = {name: StreamlitServer(scripts[name]) for name in dict.fromkeys(needed)}
    try:
        counts = {len(expected_tokens(FIRST_TEXT)[0]), *range(31, 32 + args.reruns)}
        token_counts = ",".join(str(count) for count in sorted(counts))
        args.views = list(DRAWN) if "views" in only or "compare" in only else ["Attention"]
        with browser.session(servers["app"], "Attention", FIRST_TEXT) as app:
            present = app.page.evaluate(VIEW_LINKS_JS)
        for view in [v for v in args.views if v not in present]:
            notes.append(f"{view}: skipped, the app has no such view")
        args.views = [v for v in args.views if v in present]
        single = {}
        if {"views", "explorer"} & set(only):
            single = measure_views(browser, servers, token_counts, args, rows, notes)
        if "compare" in only:
            rows += measure_compare(
                browser, servers["floor"], servers["app"], token_counts, single, args
            )
        if "explorer" in only:
            rows += measure_minilm_bytes(browser, servers["app"], servers["reference"], args.reruns)
        if "minilm" in only:
            for tokens in MINILM_TOKENS:
                rows += measure_minilm(browser, servers["app"], tokens)
        return single
    finally:
        for server in servers.values():
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=5, help="timed reruns per page and view")
    parser.add_argument("--naive", type=int, default=0, help="reruns of the naive page (0: none)")
    parser.add_argument("--capture", action="store_true", help="also time model.trace vs torch")
    parser.add_argument(
        "--only",
        type=lambda names: names.split(","),
        default=list(DEFAULT_GROUPS),
        help=f"the rows to measure, comma separated, of: {', '.join(GROUPS)} or all (default: "
        f'{",".join(DEFAULT_GROUPS)}; "explorer" alone measures the Attention view of the views)',
    )
    parser.add_argument("--visits", type=int, default=3, help="first visits and reruns per view")
    parser.add_argument(
        "--visit-views",
        type=lambda names: names.split(","),
        default=None,
        help="visits: only these views, comma separated (default: every view)",
    )
    args = parser.parse_args()
    if args.only == ["all"]:
        args.only = list(GROUPS)
    unknown = set(args.only) - set(GROUPS)
    if unknown:
        parser.error(f"--only: no such rows {sorted(unknown)}; choose from {', '.join(GROUPS)}")
    rows, notes = [], []
    only = args.only
    with sync_playwright() as playwright:
        browser = Browser(playwright)
        if "visits" in only:
            rows += measure_visits(browser, args, notes)
        first = {}
        if "first" in only:
            first["before"] = measure_first_render(browser, FLOOR_SCRIPT)
            first["app"] = measure_first_render(browser, APP_SCRIPT)
        single = {}
        if set(only) - {"first", "visits"}:
            single = measure_on_servers(browser, args, rows, notes)
        if "first" in only:
            first["after"] = measure_first_render(browser, FLOOR_SCRIPT)
        naive = measure_naive(browser, args.naive) if args.naive else None
        browser.shared.close()
        browser.chromium.close()

    if first:
        before, app_first, after = first["before"], first["app"], first["after"]
        first_ratio = app_first.seconds / statistics.mean([before.seconds, after.seconds])
        rows.append(row(
            "first render: fresh server, empty cache", f"{app_first.seconds:.2f} s",
            f"{before.seconds:.2f} s / {after.seconds:.2f} s", f"{first_ratio:.2f}x",
            f"<= {RATIO_GOAL}x", verdict(first_ratio <= RATIO_GOAL), "-", "-",
        ))  # fmt: skip
        notes.append(
            f"server start before the first render: app {app_first.server_start:.1f} s, floor "
            f"{before.server_start:.1f} / {after.server_start:.1f} s"
        )
    attention = single.get("Attention")
    if naive is not None and attention is not None:
        naive_ratio = naive.median() / attention.app.median()
        rows.append(row(
            "naive page (one chart per head): rerun, / the app's Attention rerun", naive.spread(),
            "-", f"{naive_ratio:.1f}x", ">= 8x", verdict(naive_ratio >= 8), "-", "-",
        ))  # fmt: skip
    if args.capture:
        progress("capture overhead")
        from tests.bench.capture_overhead import GOAL_RATIO, measure_capture_overhead

        capture = measure_capture_overhead(tokens=32, repeats=20)
        overhead = capture["trace_ratio"]
        rows.append(row(
            f"capture overhead (trace / nn.TransformerEncoder, {capture['tokens']} tokens)",
            f"{overhead:.2f}x ({capture['trace_ms']:.1f} / {capture['torch_ms']:.1f} ms)", "-",
            "-", f"<= {GOAL_RATIO}x", verdict(overhead <= GOAL_RATIO), "-", "-",
        ))  # fmt: skip

    setup = BENCH_SETUP
    parts = [f"Page speed, {datetime.date.today().isoformat()}: headless Chromium"]
    if set(only) - {"visits"}:
        parts.append(
            f"{setup['num_layers']} layers x {setup['num_heads']} heads, d_model "
            f"{setup['d_model']}, 32-{31 + args.reruns} tokens (a new count each rerun); median "
            f"(min-max) of {args.reruns} reruns, of {LOOKS} looks; floor = the same elements from "
            "random numbers, no model, measured before / after the app"
        )
    if "visits" in only:
        parts.append(
            f"visits: MiniLM, {args.visits} first visits and reruns per view, median (min-max); "
            "floor = the bare page (two heatmaps and a table), visited beside each of the view's "
            "visits (the floor column: those beside the row's view)"
        )
    parts.append(f"rows: {', '.join(only)}; {time.perf_counter() - STARTED:.0f} s in all")
    print("; ".join(parts))
    print(row("measure", "app", "floor before / after", "app / floor", "goal", "verdict",
              "script: app / floor", "received: app / floor"))  # fmt: skip
    print(row(*["---"] * 8))
    print("\n".join(rows))
    for note in notes:
        print(f"- {note}")
    errors = browser.errors
    print(f"- browser console errors: {len(errors)}" + "".join(f"\n  {e}" for e in errors[:10]))


if __name__ == "__main__":
    main()
