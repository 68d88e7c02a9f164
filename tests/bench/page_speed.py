"""How fast is the page in a real browser, against the floor? Prints one table from one run.

Run from the repo root: `python tests/bench/page_speed.py [--reruns N]`. Starts the app and the
floor (tests/bench/floor_page.py: the same elements from precomputed random numbers, no model) on
free loopback ports, drives headless Chromium at 6 layers x 8 heads, d_model 512, 32-36 tokens
(BENCH_SETUP), and measures:
- per view (Attention, Attention steps, LayerNorm, Activations, Shapes; a view the app lacks is
  skipped with a line): the rerun after a text change, from committing the text to the view drawn
  with its tokens, median and min-max of N, on the floor before the app, the app, the floor
  after (drift); app / floor against all the floor's reruns; the script's own time ("page N ms"
  in both pages' status caption) and the bytes received per rerun;
- a click on another head in the Attention view (the fragment rerun), floor, app, floor;
- per view, the same rerun on a compare page (setup B = A post-norm, drawn beside A), floor and
  app, and the app's compare rerun over its single-page rerun (the goal: about 2x at most);
- first render: a fresh server and a fresh browser context (empty cache), from opening the
  Attention view to it drawn with every element loaded; floor before and after the app;
- the pretrained model on a 500-token text: time to draw and bytes received.
Optional: the naive page (one chart per head, tests/bench/naive_page.py) and the capture
overhead (capture_overhead.py). Each page's elements (types, figure and table sizes) are compared
with the floor's per view, so a floor that no longer matches its view shows.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import difflib
import json
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.e2e.harness import (  # noqa: E402
    BENCH_SETUP,
    LOADED_JS,
    SCRIPT_MS_JS,
    StreamlitServer,
    drawn_target,
    expected_tokens,
    launch_chromium,
    sentence_of,
)

APP_SCRIPT = "app/main.py"
FLOOR_SCRIPT = "tests/bench/floor_page.py"
NAIVE_SCRIPT = "tests/bench/naive_page.py"
TIMEOUT_MS = 120_000
VIEWPORT = {"width": 1400, "height": 1000}
RATIO_GOAL = 1.2  # app / floor, for every view's rerun and for the first render
CLICK_GOAL_S = 0.3
LONG_GOAL_S, LONG_GOAL_MB = 5, 10
FIRST_TEXT = sentence_of(29, "first")
STARTED = time.perf_counter()


def labels_json(labels: list[str]) -> str:
    """The labels as JSON.stringify writes the tick text array that holds them."""
    return json.dumps(labels, ensure_ascii=False, separators=(",", ":"))


def numbered_labels_json(labels: list[str]) -> str:
    """The labels as 'position token' ticks (app.charts' token matrices and activation charts)."""
    return labels_json([f"{position} {label}" for position, label in enumerate(labels)])


# view -> (chart key, marker) pairs: the view is drawn for `labels` (the text's tokens as plotly
# holds them, HTML-escaped) when each chart's layout, as JSON, contains marker(labels).
DRAWN: dict[str, tuple[tuple[str, Callable[[list[str]], str]], ...]] = {
    "Attention": (
        ("overview", lambda labels: f", {len(labels)} tokens"),
        ("head_detail", labels_json),
    ),
    "Attention steps": (("step_keys", numbered_labels_json),),
    "LayerNorm": (("layernorm", labels_json),),
    "Activations": (("act_cosine", numbered_labels_json),),
    "Shapes": (("block_diagram", lambda labels: f"[1, {len(labels)}, "),),
}

# True once the page shows the text: the script is idle, nothing is stale, every chart is drawn,
# and each [chart key, marker] has its marker in that chart's layout.
VIEW_DRAWN_JS = """checks => {
  const app = document.querySelector("[data-testid=stApp]");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (document.querySelector("[data-stale=true]")) return false;
  if ([...document.querySelectorAll(".js-plotly-plot")].some(p => !p._fullData)) return false;
  return checks.every(([key, marker]) => {
    const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
    return !!plot && !!plot._fullData && JSON.stringify(plot.layout).includes(marker);
  });
}"""
HEAD_DRAWN_JS = """head => {
  const app = document.querySelector("[data-testid=stApp]");
  if (app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (document.querySelector("[data-stale=true]")) return false;
  const plot = document.querySelector(".st-key-head_detail .js-plotly-plot");
  return !!plot && !!plot._fullData && JSON.stringify(plot.layout).includes(`head ${head}:`);
}"""
STATUS_JS = """() => [...document.querySelectorAll("[data-testid=stCaptionContainer]")]
  .map(c => c.textContent).find(t => t.includes("page ")) || ''"""
# Every element on the page, in order: its type, and for charts and tables their sizes.
INVENTORY_JS = """() => [...document.querySelectorAll("[data-testid=stElementContainer]")]
  .map(box => {
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
  })"""
VIEW_BUTTONS_JS = """() => [...document.querySelectorAll(".st-key-view button")]
  .map(b => b.textContent.trim())"""
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
    received: int = 0  # bytes

    def count(self, payload) -> None:
        self.received += len(payload)


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
                **query: object) -> Iterator[Session]:  # fmt: skip
        """A new session showing `view` with `text` at the bench setup (and `query`), drawn."""
        context = self.chromium.new_context(viewport=VIEWPORT) if fresh else self.shared
        page = context.new_page()
        session = Session(page, view, text, compare=query.get("compare") == "1")
        page.on("websocket", lambda ws: ws.on("framereceived", session.count))
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        try:
            page.goto(server.page_url(**BENCH_SETUP, view=view, text=text, **query))
            wait_drawn(page, view, text, session.compare)
            yield session
        finally:  # before its server goes, or the page logs reconnection attempts
            page.close()
            if fresh:
                context.close()


def checks_for(view: str, text: str, compare: bool = False) -> list[list[str]]:
    """VIEW_DRAWN_JS's argument: the view's charts (and in compare mode setup B's twins, keyed
    `..._b`) and their markers for this text."""
    labels = drawn_target(expected_tokens(text)[0])["labels"]
    keys = [(key, marker) for key, marker in DRAWN[view]]
    keys += [(f"{key}_b", marker) for key, marker in DRAWN[view]] if compare else []
    return [[key, marker(labels)] for key, marker in keys]


def wait_drawn(page, view: str, text: str, compare: bool = False) -> None:
    """Until the view shows `text` and every element's code has loaded."""
    page.wait_for_function(
        VIEW_DRAWN_JS, arg=checks_for(view, text, compare), timeout=TIMEOUT_MS, polling="raf"
    )
    page.wait_for_function(LOADED_JS, timeout=TIMEOUT_MS, polling="raf")


def commit_text(session: Session, text: str) -> float:
    """Seconds from committing `text` (Ctrl+Enter) until the session's view shows it."""
    box = session.page.locator(".st-key-text textarea")
    box.fill(text)
    checks = checks_for(session.view, text, session.compare)
    start = time.perf_counter()
    box.press("Control+Enter")
    session.page.wait_for_function(VIEW_DRAWN_JS, arg=checks, timeout=TIMEOUT_MS, polling="raf")
    session.text = text
    return time.perf_counter() - start


def open_view(session: Session, view: str) -> None:
    """Click the view's button and wait until it shows the session's text (not timed)."""
    session.page.bring_to_front()
    if view != session.view:
        exactly = re.compile(f"^{re.escape(view)}$")  # "Attention", not "Attention steps"
        session.page.locator(".st-key-view button").filter(has_text=exactly).click()
        session.view = view
        wait_drawn(session.page, view, session.text, session.compare)


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


def measure_head_clicks(session: Session, clicks: int) -> Timings:
    """Seconds from moving the head slider one step (keyboard) to that head drawn; the first
    move only warms up."""
    progress(f"head clicks, {session.page.url.split('/?')[0]}")
    open_view(session, "Attention")
    slider = session.page.locator(".st-key-head input[type=range]")
    heads, head = BENCH_SETUP["num_heads"], int(slider.input_value())
    timings = Timings()
    for _ in range(clicks + 1):
        head, key = (head + 1, "ArrowRight") if head + 1 < heads else (0, "Home")
        slider.focus()
        before = session.received
        start = time.perf_counter()
        slider.press(key)
        session.page.wait_for_function(HEAD_DRAWN_JS, arg=head, timeout=TIMEOUT_MS, polling="raf")
        timings.seconds.append(time.perf_counter() - start)
        timings.received.append(session.received - before)
    return timings.drop_warmup()


@dataclass
class FirstRender:
    server_start: float
    seconds: float
    views: list[str]  # the page's view buttons


def measure_first_render(browser: Browser, script: str) -> FirstRender:
    """A fresh server and an empty browser cache: from opening the page to the view drawn."""
    progress(f"first render, {script}")
    server = StreamlitServer(script)
    try:
        start = time.perf_counter()
        with browser.session(server, "Attention", FIRST_TEXT, fresh=True) as session:
            seconds = time.perf_counter() - start
            views = session.page.evaluate(VIEW_BUTTONS_JS)
        return FirstRender(server.up_s, seconds, views)
    finally:
        server.stop()


def measure_long_text(browser: Browser, server: StreamlitServer) -> dict:
    """The pretrained model on a ~500-token text: time to draw and bytes received."""
    progress("pretrained model, 500 tokens")
    text = sentence_of(497, "pretrained")
    with browser.session(server, "Attention", FIRST_TEXT, source="pretrained") as session:
        before = session.received
        seconds = commit_text(session, text)
        return {
            "seconds": seconds,
            "megabytes": (session.received - before) / 1e6,
            "tokens": len(expected_tokens(text)[0]),
            "status": session.page.evaluate(STATUS_JS),
        }


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


def measure_compare(browser, floor_server, app_server, token_counts, single, args) -> list[str]:
    """Per view, the rerun of a compare page (A and B = A post-norm) on the floor and the app;
    the goal: at most about twice the single page's rerun (measured above, in this run)."""
    rows = []
    with (
        browser.session(
            floor_server, "Attention", FIRST_TEXT, token_counts=token_counts, **COMPARE
        ) as floor,
        browser.session(app_server, "Attention", FIRST_TEXT, **COMPARE) as app,
    ):
        for view, alone in single.items():
            count = args.reruns + 1

            def measure(session: Session, tag: str, view=view, count=count) -> Timings:
                texts = rerun_texts(f"{tag}compare{view.split()[0].lower()}", count)
                return measure_reruns(session, view, texts)

            reruns = Comparison(f"{view}, compare: rerun", *compare(measure, floor, app))
            over_single = reruns.app.median() / alone.app.median()
            rows.append(
                reruns.row(
                    f"<= {COMPARE_GOAL:g}x single ({over_single:.2f}x)",
                    over_single <= COMPARE_GOAL,
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=5, help="timed reruns per page and view")
    parser.add_argument("--naive", type=int, default=0, help="reruns of the naive page (0: none)")
    parser.add_argument("--capture", action="store_true", help="also time model.trace vs torch")
    args = parser.parse_args()
    rows, notes = [], []
    with sync_playwright() as playwright:
        browser = Browser(playwright)
        first_before = measure_first_render(browser, FLOOR_SCRIPT)
        first_app = measure_first_render(browser, APP_SCRIPT)
        floor_server, app_server = StreamlitServer(FLOOR_SCRIPT), StreamlitServer(APP_SCRIPT)
        try:
            counts = {len(expected_tokens(FIRST_TEXT)[0]), *range(31, 32 + args.reruns)}
            token_counts = ",".join(str(count) for count in sorted(counts))
            with (
                browser.session(
                    floor_server, "Attention", FIRST_TEXT, token_counts=token_counts
                ) as floor,
                browser.session(app_server, "Attention", FIRST_TEXT) as app,
            ):
                attention, single = None, {}
                for view in DRAWN:
                    if view not in first_app.views:
                        notes.append(f"{view}: skipped, the app has no such view")
                        continue
                    count = args.reruns + 1

                    def measure(session: Session, tag: str, view=view, count=count) -> Timings:
                        texts = rerun_texts(f"{tag}{view.split()[0].lower()}", count)
                        return measure_reruns(session, view, texts)

                    reruns = Comparison(
                        f"{view}: rerun after a text change", *compare(measure, floor, app)
                    )
                    attention = reruns if view == "Attention" else attention
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
                clicks = Comparison(
                    "Attention: click another head (fragment)",
                    *compare(lambda s, _: measure_head_clicks(s, args.reruns), floor, app),
                )
                rows.append(clicks.row(f"<= {CLICK_GOAL_S} s", clicks.app.median() <= CLICK_GOAL_S))
            rows += measure_compare(browser, floor_server, app_server, token_counts, single, args)
            long = measure_long_text(browser, app_server)
        finally:
            floor_server.stop()
            app_server.stop()
        first_after = measure_first_render(browser, FLOOR_SCRIPT)
        naive = measure_naive(browser, args.naive) if args.naive else None
        browser.shared.close()
        browser.chromium.close()

    floor_first = statistics.mean([first_before.seconds, first_after.seconds])
    first_ratio = first_app.seconds / floor_first
    rows.append(row(
        "first render: fresh server, empty cache", f"{first_app.seconds:.2f} s",
        f"{first_before.seconds:.2f} s / {first_after.seconds:.2f} s", f"{first_ratio:.2f}x",
        f"<= {RATIO_GOAL}x", verdict(first_ratio <= RATIO_GOAL), "-", "-",
    ))  # fmt: skip
    notes.append(
        f"server start before the first render: app {first_app.server_start:.1f} s, floor "
        f"{first_before.server_start:.1f} / {first_after.server_start:.1f} s"
    )
    seconds, megabytes = long["seconds"], long["megabytes"]
    rows.append(row(
        f"pretrained MiniLM, {long['tokens']} tokens: draw / received",
        f"{seconds:.2f} s / {megabytes:.2f} MB", "-", "-",
        f"<= {LONG_GOAL_S} s / <= {LONG_GOAL_MB} MB",
        verdict(seconds <= LONG_GOAL_S and megabytes <= LONG_GOAL_MB), "-", "-",
    ))  # fmt: skip
    notes.append(f"pretrained, {long['tokens']} tokens: app status: {long['status']}")
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
    print(
        f"Page speed, {datetime.date.today().isoformat()}: headless Chromium, "
        f"{setup['num_layers']} layers x {setup['num_heads']} heads, d_model {setup['d_model']}, "
        f"32-{31 + args.reruns} tokens (a new count each rerun); median (min-max) of "
        f"{args.reruns}; floor = the same elements from random numbers, no model, measured "
        f"before / after the app; {time.perf_counter() - STARTED:.0f} s in all"
    )
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
