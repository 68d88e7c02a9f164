"""Many sessions at once: the server's own time per rerun apart from the browsers' drawing, no
errors, no cross-talk, the server's memory. Prints one summary.

Run from the repo root: `python tests/bench/load.py [--sessions 10] [--rounds 20]`. Starts the app
on a free loopback port, opens `sessions` browser contexts (each its own Streamlit session) in one
headless Chromium, and lets each commit `rounds` texts of its own, all at once, until
`--max-seconds` (then they stop and say so). After every rerun a session checks that the head
detail shows the tokens of ITS text (no cross-talk), and from its second rerun on (the first
warms up) takes these times:
- the whole rerun: from committing the text to the page drawn with its tokens;
- the server's script: start to end of the script run, as the app reports it in its status
  caption ("page N ms"; it runs in the server's thread for this session, so it includes waiting
  for the other sessions' threads); the whole rerun less this is the browsers' part (drawing,
  and the transport both ways);
- in the page (its own clock): commit to the script state turning running, running to
  notRunning (the page takes in and draws what the script sends as it comes), and notRunning to
  the page drawn.
The server's resident memory (its process and any children, from /proc) is sampled every second;
it is "flat" when it grows by less than MEMORY_GROWTH_LIMIT_MB from half-way to the end.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Protocol

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from playwright.async_api import async_playwright  # noqa: E402

from tests.e2e.harness import (  # noqa: E402
    BENCH_SETUP,
    DRAWN_JS,
    LOADED_JS,
    SCRIPT_MS_JS,
    SETTLED_JS,
    StreamlitServer,
    expected_tokens,
    launch_chromium,
    sentence_of,
)

TIMEOUT_MS = 120_000
# "flat": from the middle of the run (the app's caches long full) to its end, RSS grows less
MEMORY_GROWTH_LIMIT_MB = 50
# In every page, before its scripts, in-page times: the last commit (Ctrl+Enter), and the last
# time the script state turned running and notRunning.
RERUN_WATCH = """const state = "data-test-script-state";
document.addEventListener("keydown", event => {
  if (event.key === "Enter" && event.ctrlKey) window.committedAt = performance.now();
}, true);
new MutationObserver(records => {
  for (const record of records) {
    const now = record.target.getAttribute(state);
    if (now === "running") window.scriptStartedAt = performance.now();
    if (now === "notRunning") window.scriptEndedAt = performance.now();
  }
}).observe(document, {attributes: true, subtree: true, attributeFilter: [state]});
"""
# Seconds, in-page: commit to the script's start, its start to its end, its end to drawn.
SPLIT_JS = """() => [window.committedAt, window.scriptStartedAt, window.scriptEndedAt,
  window.drawnAt].map((t, i, all) => (all[i + 1] - t) / 1000).slice(0, 3)"""
# DRAWN_JS, noting the in-page time it first held.
DRAWN_AT_JS = f"""expected => {{
  const drawn = ({DRAWN_JS})(expected);
  if (drawn) window.drawnAt = performance.now();
  return drawn;
}}"""

SPLIT_NAMES = ("page_to_start_s", "page_running_s", "page_after_end_s")


def session_text(session: int, round_: int) -> str:
    """A text only this session uses in this round, 20-23 tokens long."""
    return sentence_of(16 + (session + round_) % 4, f"s{session}r{round_}")


class Target(Protocol):
    """Where the sessions go: a StreamlitServer, or nginx in front of replicas."""

    def page_url(self, **params: object) -> str: ...

    def rss_mb(self) -> float: ...


async def work(browser, server: Target, session: int, rounds: int, deadline: float, log: dict,
               think_s: float = 0.0) -> None:  # fmt: skip
    """One session: open the page, then commit `rounds` texts (until `deadline`), checking each,
    pausing `think_s` seconds before each one after the first."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    await context.add_init_script(RERUN_WATCH)
    page = await context.new_page()
    page.set_default_timeout(TIMEOUT_MS)  # a busy machine with ten pages is slow
    page.on("console", lambda m: log["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    try:
        try:
            await page.goto(server.page_url(**BENCH_SETUP, timing=1))  # its status line
            await page.wait_for_function(SETTLED_JS)
            await page.wait_for_function(LOADED_JS)
        except Exception as error:  # on a crowded machine a page may not open in time
            log["failures"].append(f"session {session}: the page did not open: {error}")
            return
        box = page.locator(".st-key-text textarea")
        for round_ in range(rounds):
            if round_ and think_s:
                await asyncio.sleep(think_s)
            if time.monotonic() > deadline:
                log["stopped"].append(session)
                break
            text = session_text(session, round_)
            await box.fill(text)
            start = time.perf_counter()
            await box.press("Control+Enter")
            target = expected_tokens(text)[0]
            try:
                await page.wait_for_function(DRAWN_AT_JS, arg=target, timeout=TIMEOUT_MS)
            except Exception as error:  # a timeout here is cross-talk or a lost rerun
                log["failures"].append(f"session {session} round {round_}: {error}")
                continue
            total_s = time.perf_counter() - start
            script_s = await page.evaluate(SCRIPT_MS_JS) / 1000
            split = await page.evaluate(SPLIT_JS)
            log["done"] += 1
            log["last_rerun_at"] = time.perf_counter()
            print(
                f"session {session} round {round_}: {total_s:.2f} s; server script "
                f"{script_s:.2f} s; in the page: {split[0]:.2f} s to the script's start, "
                f"{split[1]:.2f} s running, drawn {split[2]:.2f} s after its end",
                file=sys.stderr,
            )
            if log["done"] == log["sessions"]:  # as many reruns as sessions: the warm-up
                log["rss_first"] = server.rss_mb()
            if log["done"] == log["planned"] // 2:
                log["rss_middle"] = server.rss_mb()
            if round_ > 0:  # each session's first rerun only warms up
                log["total_s"].append(total_s)
                log["script_s"].append(script_s)
                log["browser_s"].append(total_s - script_s)
                for name, seconds in zip(SPLIT_NAMES, split, strict=True):
                    log[name].append(seconds)
    finally:
        await context.close()


async def sample_memory(replicas: list[StreamlitServer], log: dict) -> None:
    """Every second: each replica's peak, and the peak of their sum."""
    while True:
        sizes = [replica.rss_mb() for replica in replicas]
        log["rss_peaks"] = [max(a, b) for a, b in zip(log["rss_peaks"], sizes, strict=True)]
        log["rss_peak"] = max(log["rss_peak"], sum(sizes))
        await asyncio.sleep(1)


async def drive(target: Target, replicas: list[StreamlitServer], sessions: int, rounds: int,
                max_seconds: float, think_s: float = 0.0, ramp_s: float = 0.0) -> dict:  # fmt: skip
    """`sessions` browser sessions in one headless Chromium against `target` (served by
    `replicas`), starting over `ramp_s` seconds; their log."""
    log = {
        "total_s": [], "script_s": [], "browser_s": [], **{name: [] for name in SPLIT_NAMES},
        "errors": [], "failures": [],
        "stopped": [], "done": 0, "sessions": sessions, "planned": sessions * rounds,
        "rss_peak": 0.0, "rss_peaks": [0.0] * len(replicas),
    }  # fmt: skip

    async def student(session: int) -> None:
        await asyncio.sleep(ramp_s * session / sessions)
        await work(browser, target, session, rounds, deadline, log, think_s)

    async with async_playwright() as playwright:
        browser = await launch_chromium(playwright)
        log["rss_start"] = target.rss_mb()
        sampler = asyncio.create_task(sample_memory(replicas, log))
        started = log["last_rerun_at"] = time.perf_counter()
        deadline = time.monotonic() + max_seconds
        await asyncio.gather(*(student(s) for s in range(sessions)))
        log["wall_s"] = time.perf_counter() - started
        log["rerun_s"] = log["last_rerun_at"] - started  # first page opened to last rerun drawn
        sampler.cancel()
        log["rss_end"] = target.rss_mb()
        await browser.close()
    return log


async def run(sessions: int, rounds: int, max_seconds: float) -> dict:
    server = StreamlitServer()
    try:
        return await drive(server, [server], sessions, rounds, max_seconds)
    finally:
        server.stop()


def percentiles(values: list[float]) -> str:
    """'p50 / p95' in seconds (the nearest rank)."""
    if not values:
        return "-"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):.2f} / {p95:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20, help="reruns per session")
    parser.add_argument("--max-seconds", type=float, default=300, help="then sessions stop")
    args = parser.parse_args()
    log = asyncio.run(run(args.sessions, args.rounds, args.max_seconds))
    rss_first = log.get("rss_first", float("nan"))
    rss_middle = log.get("rss_middle", float("nan"))
    growth = log["rss_end"] - rss_middle
    flat = growth <= MEMORY_GROWTH_LIMIT_MB
    clean = not log["errors"] and not log["failures"]
    done, planned = log["done"], args.sessions * args.rounds
    print(
        f"Load: {args.sessions} sessions at once, up to {args.rounds} reruns each, 6 layers x 8 "
        f"heads, d_model 512, 20-23 tokens, loopback, one headless Chromium; "
        f"{log['wall_s']:.0f} s wall"
    )
    print("| measure | value |")
    print("|---|---|")
    print(f"| reruns drawn with their own tokens | {done} of {planned} |")
    print(f"| cross-talk or lost reruns | {len(log['failures'])} |")
    print(f"| browser console errors | {len(log['errors'])} |")
    print(f"| whole rerun, commit to drawn: p50 / p95 | {percentiles(log['total_s'])} |")
    for label, name in (
        ("server: script start to end (the app's 'page N ms')", "script_s"),
        ("browser and transport: whole rerun - server script", "browser_s"),
        ("in the page: commit to the script's start", "page_to_start_s"),
        ("in the page: the script's start to its end", "page_running_s"),
        ("in the page: the script's end to drawn", "page_after_end_s"),
    ):
        print(f"| {label}: p50 / p95 | {percentiles(log[name])} |")
    print(f"| server RSS: idle / after the first {args.sessions} reruns / half-way / peak / end | "
          f"{log['rss_start']:.0f} / {rss_first:.0f} / {rss_middle:.0f} / {log['rss_peak']:.0f} "
          f"/ {log['rss_end']:.0f} MB |")  # fmt: skip
    verdict = "flat" if flat else "GROWING"
    print(f"| RSS growth, half-way -> end | {growth:+.0f} MB ({verdict}, "
          f"limit {MEMORY_GROWTH_LIMIT_MB} MB) |")  # fmt: skip
    if log["stopped"]:
        print(f"  {len(log['stopped'])} sessions stopped at the {args.max_seconds:.0f} s limit")
    for line in (log["failures"] + log["errors"])[:10]:
        print(f"  {line}")
    print("verdict:", "pass" if clean and flat else "FAIL")
    sys.exit(0 if clean and flat else 1)


if __name__ == "__main__":
    main()
