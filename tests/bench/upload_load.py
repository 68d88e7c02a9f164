"""Many uploads against the memory budget: the server's growth over its idle size stays within it.

Run from the repo root: `python tests/bench/upload_load.py [--sessions 3] [--rounds 6]
[--budget 1GB] [--repeats 1]`. Starts the app with ENCODER_EXPLORER_MEMORY_BUDGET=budget (and
the default ENCODER_EXPLORER_SESSION_BUDGET), opens `sessions` browser sessions (Playwright
contexts in one headless Chromium) on the Attention view, reads the server's resident memory
with their pages drawn (its idle size here), then in each round lets every session in turn
upload the bundled MiniLM checkpoint (a zip of its three files; 91 MB of weights, 98 MB counted
with its tokenizer). An upload is kept (the page then shows the new model), or refused with the
page's message. After each round it reads the server's resident memory (the process and its
children, from /proc) and what the page says all sessions keep; a sampler (tests/bench/load.py's)
takes the peak every second. With `--repeats`, each repeat starts a fresh server and the table
gives the median and the range over the repeats. Sizes are in MB (10^6 bytes), as the budget is.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from playwright.async_api import async_playwright  # noqa: E402

from app.memory import BUDGET_ENV, parse_bytes  # noqa: E402
from tests.bench.load import RERUN_WATCH, sample_memory  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    KEPT_MEMORY,
    SETTLED_JS,
    UPLOAD_INPUT,
    StreamlitServer,
    launch_chromium,
    minilm_archive,
)

TIMEOUT_MS = 300_000
MIB = 2**20
# After an upload: null until the script run it started has ended and the page has settled;
# then the model it selected (a kept upload), or the page's refusal.
UPLOADED_JS = f"""([started, before]) => {{
  if (!(window.scriptEndedAt > started) || !({SETTLED_JS})()) return null;
  const source = new URLSearchParams(location.search).get("source");
  const refusal = [...document.querySelectorAll("[data-testid=stAlertContentError]")]
    .map(alert => alert.textContent).find(text => text.includes("needs about"));
  if (refusal) return {{refused: refusal}};
  return source !== before ? {{kept: source}} : {{other: document.body.innerText.slice(0, 300)}};
}}"""


def megabytes(mib: float) -> float:
    return mib * MIB / 1e6


async def upload(page, archive: Path) -> dict:
    """Upload `archive` and wait for its rerun: {"kept": id} or {"refused": message}."""
    before = await page.evaluate("() => new URLSearchParams(location.search).get('source')")
    started = await page.evaluate("() => performance.now()")
    await page.locator(UPLOAD_INPUT).set_input_files(archive)
    handle = await page.wait_for_function(
        UPLOADED_JS, arg=[started, before], timeout=TIMEOUT_MS, polling=100
    )
    return await handle.json_value()


async def all_kept(page) -> str:
    """What the page says all sessions keep ("-" where it does not say: an app before the
    budget counted them)."""
    if not await page.locator(KEPT_MEMORY).count():
        return "-"
    text = await page.locator(KEPT_MEMORY).text_content()
    found = re.search(r"all sessions keep (.+?), of", text or "")
    return found[1] if found else "-"


async def run_once(budget: str, sessions: int, rounds: int, archive: Path) -> dict:
    """One server, `sessions` pages, `rounds` rounds of uploads; what each round left."""
    server = StreamlitServer(env={**os.environ, BUDGET_ENV: budget})
    result = {"rounds": [], "refusals": []}
    try:
        async with async_playwright() as playwright:
            browser = await launch_chromium(playwright)
            pages = []
            for _ in range(sessions):
                context = await browser.new_context(viewport={"width": 1400, "height": 1000})
                await context.add_init_script(RERUN_WATCH)
                page = await context.new_page()
                page.set_default_timeout(TIMEOUT_MS)
                await page.goto(server.page_url(view="Attention"))
                await page.wait_for_function(SETTLED_JS)
                pages.append(page)
            await asyncio.sleep(2)
            result["idle_mb"] = idle = megabytes(server.rss_mb())
            log = {"rss_peaks": [0.0], "rss_peak": 0.0}
            sampler = asyncio.create_task(sample_memory([server], log))
            kept = refused = 0
            for round_ in range(1, rounds + 1):
                started = time.perf_counter()
                for number, page in enumerate(pages):
                    outcome = await upload(page, archive)
                    if "kept" in outcome:
                        kept += 1
                    elif "refused" in outcome:
                        refused += 1
                        result["refusals"].append(f"session {number}: {outcome['refused']}")
                    else:
                        raise RuntimeError(f"session {number}, round {round_}: {outcome}")
                growth = megabytes(server.rss_mb()) - idle
                row = {
                    "round": round_,
                    "kept": kept,
                    "refused": refused,
                    "growth_mb": growth,
                    "peak_mb": megabytes(max(log["rss_peak"], server.rss_mb())) - idle,
                    "counted": await all_kept(pages[-1]),  # drawn after the round's last
                    "seconds": time.perf_counter() - started,
                }
                result["rounds"].append(row)
                print(
                    f"round {round_}: {kept} kept, {refused} refused; RSS +{growth:.0f} MB over "
                    f"idle (peak +{row['peak_mb']:.0f}); sessions keep {row['counted']}; "
                    f"{row['seconds']:.0f} s",
                    file=sys.stderr,
                )
            sampler.cancel()
            await browser.close()
    finally:
        server.stop()
    return result


def spread(values: list[float]) -> str:
    """'median' or 'median (min-max)' over repeats."""
    if len(values) == 1:
        return f"{values[0]:.0f}"
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=6, help="uploads per session, in turn")
    parser.add_argument("--budget", default="1GB", help=BUDGET_ENV)
    parser.add_argument("--repeats", type=int, default=1, help="fresh servers, for the range")
    args = parser.parse_args()
    budget_mb = parse_bytes(args.budget) / 1e6
    with tempfile.TemporaryDirectory() as folder:
        archive = minilm_archive(Path(folder) / "minilm.zip")
        zip_mb = archive.stat().st_size / 1e6
        runs = [
            asyncio.run(run_once(args.budget, args.sessions, args.rounds, archive))
            for _ in range(args.repeats)
        ]
    print(
        f"Uploads against the memory budget: {BUDGET_ENV}={args.budget}, {args.sessions} "
        f"browser sessions each uploading MiniLM ({zip_mb:.0f} MB zip) in "
        f"turn, {args.rounds} rounds; {time.strftime('%Y-%m-%d')}; "
        f"idle {spread([run['idle_mb'] for run in runs])} MB"
        + (f"; median (min-max) of {args.repeats} servers" if args.repeats > 1 else "")
    )
    print(
        "| round | uploads | refused | RSS over idle, MB | peak so far over idle, MB "
        "| sessions keep |"
    )
    print("|---|---|---|---|---|---|")
    for index in range(args.rounds):
        rows = [run["rounds"][index] for run in runs]
        counted = ", ".join(sorted({row["counted"] for row in rows}))
        print(
            f"| {index + 1} | {(index + 1) * args.sessions} "
            f"| {spread([row['refused'] for row in rows])} "
            f"| {spread([row['growth_mb'] for row in rows])} "
            f"| {spread([row['peak_mb'] for row in rows])} | {counted} |"
        )
    peak = max(row["peak_mb"] for run in runs for row in run["rounds"])
    within = peak <= budget_mb
    print(f"highest peak over idle: {peak:.0f} MB of a {budget_mb:.0f} MB budget")
    for line in sorted({r.split(": ", 1)[1] for run in runs for r in run["refusals"]})[:3]:
        print(f"  refused: {line}")
    print("verdict:", "within the budget" if within else "OVER THE BUDGET")
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
