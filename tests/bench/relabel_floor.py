"""What Streamlit itself costs the browser to relabel each kind of element, against the app's pages.

Run from the repo root: `python tests/bench/relabel_floor.py [--visits N] [--count N]`.
Starts tests/bench/relabel_page.py (no app) on a free loopback port and drives headless Chromium:
for each kind of element, --visits new sessions open the page with --count elements of that kind,
change the text (a rerun: one line changes) and then choose the other language (a switch: every
element's text changes), each timed from its request until the script is idle and the page shows
it. A kind's cost per element is (switch - rerun) over the count, less the same difference on the
page with no elements (what choosing a language costs by itself), from the medians.
Then (unless --no-app) the app (MiniLM) is opened on every view and its elements counted by kind
in the sidebar, the navigation and the view, and each view's relabelling floor is the sum of its
counts times these costs: the least that switching its language costs the browser over a rerun
after a text change, whatever the app does (kinds not measured here count nothing, so the floor
is a lower bound). Prints two tables.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.bench.page_speed import (  # noqa: E402
    MAIN_FIGURE,
    SINCE_REQUEST_JS,
    VISIT_VIEWS,
    WATCH_RUN_JS,
    progress,
    row,
    spread_ms,
    wait_shown,
)
from tests.bench.relabel_page import KINDS, NAVIGATION, TABLE_ROWS  # noqa: E402
from tests.e2e.harness import BY_TITLE, StreamlitServer, launch_chromium  # noqa: E402

PAGE_SCRIPT = "tests/bench/relabel_page.py"
TIMEOUT_MS = 30_000
# The page's run is over and shows `expected` (its last line: the text and the language)
SHOWN_JS = """expected => {
  const app = document.querySelector("[data-testid=stApp]");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (document.querySelector("[data-stale=true]")) return false;
  const main = document.querySelector("[data-testid=stMain]");
  return !!main && main.textContent.includes(expected);
}"""
# The elements on the app's page by kind of relabel_page.py (None: a kind not measured there), by
# the test id of an element container's first child; the top navigation's links apart
KIND_OF_TEST_ID = {
    "stMarkdown": "markdown",
    "stCaptionContainer": "caption",
    "stHeading": "header",
    "stHtml": "html",
    "stText": "text",
    "stSelectbox": "selectbox",
    "stRadio": "radio",
    "stCheckbox": "toggle",
    "stTextInput": "text_input",
    "stTextArea": "text_input",
    "stButton": "button",
    "stDownloadButton": "button",
    "stNumberInput": "number_input",
    "stMetric": "metric",
    "stAlert": "alert",
    "stDataFrame": "dataframe",
    "stPlotlyChart": "plotly",
}
# Kinds drawn fewer times on their page than --count (each is large), and the table's rows more
FEWER = {"plotly": 4, "dataframe": 8}
TABLE_ROWS_PER_COUNT = 4
COUNT_JS = """() => {
  const counts = {};
  const add = name => { counts[name] = (counts[name] || 0) + 1; };
  for (const box of document.querySelectorAll("[data-testid=stElementContainer]")) {
    const first = box.firstElementChild;
    if (!first) continue;
    const inner = first.querySelector(
      "[data-testid=stCaptionContainer], [data-testid=stDataFrame], [data-testid=stPlotlyChart]");
    if (first.dataset.testid === "stTable") {
      counts.table_rows = (counts.table_rows || 0) + first.querySelectorAll("tbody tr").length;
    } else {
      add(inner ? inner.dataset.testid : first.dataset.testid || "component");
    }
  }
  counts.navigation = document.querySelectorAll("[data-testid=stTopNavLink]").length;
  return counts;
}"""


def per_element_ms(
    rerun: list[float], switch: list[float], bare: tuple[list[float], list[float]], count: int
) -> float:
    """What relabelling one element adds to a switch over a rerun (each in ms): the medians'
    difference less the page's without elements (`bare`: its reruns and switches), per element."""
    extra = statistics.median(switch) - statistics.median(rerun)
    bare_extra = statistics.median(bare[1]) - statistics.median(bare[0])
    return (extra - bare_extra) / count


def floor_ms(counts: dict[str, int], costs: dict[str, float]) -> tuple[float, list[str]]:
    """The relabelling floor of a page with these element `counts` (COUNT_JS's), in ms, and the
    kinds it holds that no cost was measured for (they add nothing to the floor)."""
    total, unmeasured = 0.0, []
    for test_id, count in sorted(counts.items()):
        kind = test_id if test_id in (NAVIGATION, TABLE_ROWS) else KIND_OF_TEST_ID.get(test_id)
        if kind in costs:
            total += count * max(costs[kind], 0.0)
        elif count:
            unmeasured.append(f"{count} {test_id}")
    return total, unmeasured


def timed(page, act, expected: str) -> float:
    """Milliseconds from the request that `act` makes until the page shows `expected`."""
    page.evaluate(WATCH_RUN_JS)
    act()
    page.wait_for_function(SHOWN_JS, arg=expected, timeout=TIMEOUT_MS, polling="raf")
    return page.evaluate(SINCE_REQUEST_JS) * 1000


def measure_kind(context, url: str, kind: str, count: int, visits: int) -> tuple[list, list]:
    """The page with `count` elements of `kind`: its reruns and its switches, in ms."""
    reruns, switches = [], []
    for k in range(visits):
        page = context.new_page()
        try:
            page.goto(f"{url}/?{urlencode({'kind': kind, 'count': count})}")
            page.wait_for_function(SHOWN_JS, arg="a b c · EN", timeout=TIMEOUT_MS)
            box = page.locator("[data-testid=stSidebar] textarea")
            text = f"visit {k} of {kind}"
            box.fill(text)
            reruns.append(timed(page, partial(box.press, "Control+Enter"), f"{text} · EN"))
            choice = page.locator("[data-testid=stSidebar] label").filter(has_text="ES")
            switches.append(timed(page, choice.click, f"{text} · ES"))
        finally:
            page.close()
    return reruns, switches


def measure_costs(context, args) -> tuple[dict[str, float], list[str]]:
    server = StreamlitServer(PAGE_SCRIPT)
    try:
        progress("relabel: the page without elements")
        bare = measure_kind(context, server.url, "markdown", 0, args.visits)
        rows = [row("no elements", "0", spread_ms(bare[0]), spread_ms(bare[1]), "-")]
        costs = {}
        for kind in (*KINDS, NAVIGATION, TABLE_ROWS):
            rows_per = TABLE_ROWS_PER_COUNT if kind == TABLE_ROWS else 1
            count = FEWER.get(kind, args.count * rows_per)
            progress(f"relabel: {count} of {kind}")
            reruns, switches = measure_kind(context, server.url, kind, count, args.visits)
            costs[kind] = per_element_ms(reruns, switches, bare, count)
            rows.append(row(
                kind, str(count), spread_ms(reruns), spread_ms(switches),
                f"{costs[kind]:.2f} ms",
            ))  # fmt: skip
    finally:
        server.stop()
    return costs, rows


def count_app(context) -> dict[str, dict[str, int]]:
    """Every view's elements by test id (COUNT_JS), on MiniLM at the benchmark's sentence."""
    server = StreamlitServer()
    counts = {}
    try:
        for view in VISIT_VIEWS:
            progress(f"relabel: counting {view}'s elements")
            page = context.new_page()
            try:
                query = urlencode({"source": "pretrained", "text": "The cat sat on the mat."})
                page.goto(f"{server.url}/{BY_TITLE[view].path}?{query}")
                wait_shown(page, MAIN_FIGURE.get(view), "first visit")
                counts[view] = page.evaluate(COUNT_JS)
            finally:
                page.close()
    finally:
        server.stop()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visits", type=int, default=5, help="sessions per kind of element")
    parser.add_argument("--count", type=int, default=30, help="elements of a kind on its page")
    parser.add_argument("--no-app", action="store_true", help="do not count the app's elements")
    args = parser.parse_args()
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        context = chromium.new_context(viewport={"width": 1280, "height": 720})
        costs, cost_rows = measure_costs(context, args)
        counts = {} if args.no_app else count_app(context)
        chromium.close()
    print(
        f"Relabelling, {datetime.date.today()}: headless Chromium, {args.visits} sessions a "
        f"kind, median (min-max), from each request until the page shows it"
    )
    print("| kind | elements | rerun (one line changes) | switch (every text changes) | "
          "per element |")  # fmt: skip
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(cost_rows))
    if counts:
        print("\n| view | elements relabelled on a switch | floor | not measured |")
        print("| --- | --- | --- | --- |")
        for view, found in counts.items():
            total, unmeasured = floor_ms(found, costs)
            elements = ", ".join(f"{n} {test_id}" for test_id, n in sorted(found.items()) if n)
            print(row(view, elements, f"{total:.0f} ms", ", ".join(unmeasured) or "-"))


if __name__ == "__main__":
    main()
