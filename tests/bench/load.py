"""Many sessions at once: no errors, no cross-talk, flat server memory. Prints one summary.

Run from the repo root: `python tests/bench/load.py [--sessions 10] [--rounds 20]`. Starts the app
on a free loopback port, opens `sessions` browser contexts (each its own Streamlit session) in one
headless Chromium, and lets each commit `rounds` texts of its own, all at once. After every rerun
a session checks that the head detail shows the tokens of ITS text (no cross-talk). The server's
RSS (from /proc) is sampled after the first `sessions` reruns and at the end; reruns are timed
from commit to drawn, and p50/p95 are reported.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from playwright.async_api import async_playwright  # noqa: E402

from tests.e2e.harness import (  # noqa: E402
    BENCH_SETUP,
    DRAWN_JS,
    SETTLED_JS,
    StreamlitServer,
    drawn_target,
    expected_tokens,
    launch_chromium,
    sentence_of,
)

TIMEOUT_MS = 60_000
MEMORY_GROWTH_LIMIT_MB = 50  # "flat": growth from the first round to the end stays under this


def session_text(session: int, round_: int) -> str:
    """A text only this session uses in this round, 20-23 tokens long."""
    return sentence_of(16 + (session + round_) % 4, f"s{session}r{round_}")


async def work(
    browser, server: StreamlitServer, session: int, rounds: int, deadline: float, log: dict
) -> None:
    """One session: open the page, then commit `rounds` texts (until `deadline`), checking each."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    page.on("console", lambda m: log["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    try:
        await page.goto(server.page_url(**BENCH_SETUP))
        await page.wait_for_function(SETTLED_JS, timeout=TIMEOUT_MS)
        box = page.locator(".st-key-text textarea")
        for round_ in range(rounds):
            if time.monotonic() > deadline:
                log["failures"].append(f"session {session}: out of time after {round_} rounds")
                break
            text = session_text(session, round_)
            await box.fill(text)
            start = time.perf_counter()
            await box.press("Control+Enter")
            target = drawn_target(expected_tokens(text)[0])
            try:
                await page.wait_for_function(DRAWN_JS, arg=target, timeout=TIMEOUT_MS)
            except Exception as error:  # a timeout here is cross-talk or a lost rerun
                log["failures"].append(f"session {session} round {round_}: {error}")
                continue
            log["times"].append(time.perf_counter() - start)
            log["done"] += 1
            print(f"session {session} round {round_}: {log['times'][-1]:.2f} s", file=sys.stderr)
            if log["done"] == log["sessions"]:  # as many reruns as sessions: the warm-up
                log["rss_first"] = server.rss_mb()
    finally:
        await context.close()


async def run(sessions: int, rounds: int, max_seconds: float) -> dict:
    server = StreamlitServer()
    log = {"times": [], "errors": [], "failures": [], "done": 0, "sessions": sessions}
    try:
        async with async_playwright() as playwright:
            browser = await launch_chromium(playwright)
            log["rss_start"] = server.rss_mb()
            started = time.perf_counter()
            deadline = time.monotonic() + max_seconds
            await asyncio.gather(
                *(work(browser, server, s, rounds, deadline, log) for s in range(sessions))
            )
            log["wall_s"] = time.perf_counter() - started
            log["rss_end"] = server.rss_mb()
            await browser.close()
    finally:
        server.stop()
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20, help="reruns per session")
    parser.add_argument("--max-seconds", type=float, default=420, help="then sessions stop")
    args = parser.parse_args()
    log = asyncio.run(run(args.sessions, args.rounds, args.max_seconds))
    times = sorted(log["times"])
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] if times else float("nan")
    growth = log["rss_end"] - log.get("rss_first", float("nan"))
    flat = growth <= MEMORY_GROWTH_LIMIT_MB
    clean = not log["errors"] and not log["failures"]
    print(
        f"Load: {args.sessions} sessions x {args.rounds} reruns at once, 6 layers x 8 heads, "
        f"d_model 512, 20-23 tokens, loopback; {log['wall_s']:.0f} s wall"
    )
    print("| measure | value |")
    print("|---|---|")
    print(f"| reruns drawn with their own tokens | {len(times)} of {args.sessions * args.rounds} |")
    print(f"| cross-talk or lost reruns | {len(log['failures'])} |")
    print(f"| browser console errors | {len(log['errors'])} |")
    print(f"| rerun p50 / p95 / max | {statistics.median(times):.2f} / {p95:.2f} / "
          f"{times[-1]:.2f} s |")  # fmt: skip
    rss_first = log.get("rss_first", float("nan"))
    print(f"| server RSS: idle / after the first {args.sessions} reruns / end | "
          f"{log['rss_start']:.0f} / {rss_first:.0f} / {log['rss_end']:.0f} MB |")  # fmt: skip
    verdict = "flat" if flat else "GROWING"
    print(f"| RSS growth, first {args.sessions} reruns -> end | {growth:+.0f} MB ({verdict}, "
          f"limit {MEMORY_GROWTH_LIMIT_MB} MB) |")  # fmt: skip
    for line in (log["failures"] + log["errors"])[:10]:
        print(f"  {line}")
    print("verdict:", "pass" if clean and flat else "FAIL")
    sys.exit(0 if clean and flat else 1)


if __name__ == "__main__":
    main()
