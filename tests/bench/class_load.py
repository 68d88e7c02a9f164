"""A class at work: many students at once against one replica, then against two behind nginx.

Run from the repo root: `python tests/bench/class_load.py [--students 30] [--rounds 10]
[--think 3] [--ramp 20]`. A student is one browser session (a Playwright browser context, its own
cookies) in one headless Chromium shared by all: it opens the page with the speed goals' setup
(6 layers x 8 heads, d_model 512) and commits `rounds` texts of its own (20-23 tokens), each a
whole rerun, waiting `--think` seconds between them, as tests/bench/load.py's sessions do
(same checks: each rerun must draw its own tokens). Students arrive over `--ramp` seconds. The
same class runs twice:
- 1 replica: the app alone (`streamlit run app/main.py`), the students straight at it;
- 2 replicas behind nginx: two servers of the app and Debian's nginx with deploy/nginx's site
  configuration in front (sticky by cookie), the students at nginx.
Per setup it reports p50 / p95 of the server's script time (the app's "page N ms") and of the
whole rerun (commit to drawn), reruns drawn per second (all of them over the time from the first
page opened to the last rerun drawn), and each replica's peak resident memory (the process and
its children, sampled every second). Each student's first rerun warms up and is not counted.

With `--questions Q` it measures a class following its teacher instead (tests/bench/
class_lesson.py): a teacher and `--students` students over Q questions, on one server (SQLite)
and on two replicas behind nginx sharing Redis (`--redis-outage S`: the replicas alone, Redis
away for S seconds mid-run), e.g.
`python tests/bench/class_load.py --students 10 --questions 10 --redis-outage 10`.

Everything runs on this machine: the browsers share its cores with the servers, so the second
setup shows what a proxy and a second process cost and how memory splits, not the speed-up that
replicas on their own machines would give.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

import os  # noqa: E402

from app.classroom.redis_store import RedisClassStore  # noqa: E402
from app.classroom.sqlite_store import SqliteClassStore  # noqa: E402
from tests.bench import class_lesson  # noqa: E402
from tests.bench.load import Target, drive, percentiles  # noqa: E402
from tests.e2e.harness import StreamlitServer, launch_chromium  # noqa: E402
from tests.e2e.proxy import Nginx, replicas_behind_nginx  # noqa: E402
from tests.e2e.redis_server import RedisServer  # noqa: E402

SETUPS = ("1 replica", "2 replicas behind nginx")


class Proxied:
    """nginx's address, and the memory of the replicas behind it."""

    def __init__(self, nginx: Nginx, replicas: list[StreamlitServer]) -> None:
        self.nginx, self.replicas = nginx, replicas

    def page_url(self, **params: object) -> str:
        return self.nginx.page_url(**params)

    def rss_mb(self) -> float:
        return sum(replica.rss_mb() for replica in self.replicas)


@contextmanager
def serving(setup: str) -> Iterator[tuple[Target, list[StreamlitServer]]]:
    """(where the students go, the replicas serving them) for one setup; stopped on leaving."""
    if setup == SETUPS[0]:
        server = StreamlitServer()
        try:
            yield server, [server]
        finally:
            server.stop()
        return
    with (
        tempfile.TemporaryDirectory() as workdir,
        replicas_behind_nginx(2, Path(workdir)) as (nginx, replicas),
    ):
        yield Proxied(nginx, replicas), replicas


def measure(setup: str, students: int, rounds: int, think_s: float, ramp_s: float,
            max_seconds: float) -> dict:  # fmt: skip
    with serving(setup) as (target, replicas):
        return asyncio.run(drive(target, replicas, students, rounds, max_seconds, think_s, ramp_s))


def row(setup: str, log: dict) -> str:
    done, planned = log["done"], log["planned"]
    memory = " / ".join(f"{mb:.0f}" for mb in log["rss_peaks"])
    cells = [
        setup,
        f"{done} of {planned}",
        str(len(log["failures"]) + len(log["errors"])),
        f"{percentiles(log['script_s'])}",
        f"{percentiles(log['total_s'])}",
        f"{done / log['rerun_s']:.2f}" if log["rerun_s"] > 0 else "-",
        f"{memory} MiB",
    ]
    return "| " + " | ".join(cells) + " |"


def measure_class(students: int, questions: int, outage_s: float) -> dict[str, dict]:
    """The class following its teacher on one server, then on two replicas sharing Redis (with
    `outage_s`, the replicas alone, Redis away that long in the middle of the run)."""
    from playwright.sync_api import sync_playwright

    logs = {}
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as workdir:
        browser = launch_chromium(playwright)
        database = str(Path(workdir) / "classes.db")
        env = {**os.environ, "ENCODER_EXPLORER_CLASS_DB": database}
        env.pop("ENCODER_EXPLORER_REDIS_URL", None)
        if not outage_s:  # an outage is Redis's: the replicas alone
            server = StreamlitServer(env=env)
            try:
                logs["1 server, SQLite"] = _finished(
                    browser, [server], server.page_url, SqliteClassStore(database), students,
                    questions,
                )  # fmt: skip
            finally:
                server.stop()
        redis = RedisServer()
        try:
            env = {**os.environ, "ENCODER_EXPLORER_REDIS_URL": redis.url}
            with replicas_behind_nginx(2, Path(workdir), env) as (nginx, replicas):
                outage = (outage_s, redis.pause, redis.resume) if outage_s else None
                name = "2 replicas behind nginx, Redis" + (
                    f", Redis away {outage_s:g} s" if outage_s else ""
                )
                logs[name] = _finished(
                    browser, replicas, nginx.page_url, RedisClassStore(redis.url), students,
                    questions, outage,
                )  # fmt: skip
        finally:
            redis.stop()
        browser.close()
    return logs


def _finished(browser, servers: list[StreamlitServer], *args) -> dict:
    """The class's log, with the CPU seconds the app's `servers` used and the wall seconds the
    class took (what is left of the cores went to the browsers), or {"failed": what stopped
    it}: a setup that runs out of machine (30 students on two cores) must not hide the figures
    of one that finished. Its pages are closed either way (they would go on polling through
    the next setup)."""
    cpu, start = sum(server.cpu_s() for server in servers), time.perf_counter()
    try:
        log = class_lesson.run_class(browser, *args)
        log["wall_s"] = time.perf_counter() - start
        log["server_cpu_s"] = sum(server.cpu_s() for server in servers) - cpu
        return log
    except Exception as error:  # a page that did not show what was waited for, in time
        for context in browser.contexts:
            context.close()
        where = next(
            f"{Path(frame.filename).name}:{frame.lineno} {frame.line}"
            for frame in reversed(traceback.extract_tb(error.__traceback__))
            if frame.filename.startswith(str(Path(__file__).parent))
        )
        first, *shown = str(error).splitlines() or [""]  # then what the page showed
        return {"failed": f"{type(error).__name__}: {first} ({where})", "shown": shown}


def main_class(args) -> None:
    logs = measure_class(args.students, args.questions, args.redis_outage)
    print(
        f"A class following its teacher: {args.students} students and a teacher (browser "
        f"contexts in one headless Chromium), {args.questions} questions; loopback, this machine"
    )
    finished = {setup: log for setup, log in logs.items() if "failed" not in log}
    print(class_lesson.HEADER)
    for setup, log in finished.items():
        print(class_lesson.row(setup, log))
    for setup, log in logs.items():
        if "failed" in log:
            print(f"  {setup}: did not finish: {log['failed']}")
            print("\n".join(f"    {line}" for line in log["shown"]))
        for line in log.get("errors", [])[:10] + log.get("unanswered", []):
            print(f"  {setup}: {line}")
    bad = len(finished) < len(logs) or any(
        log["lost"] or log["duplicated"] or log["errors"] for log in finished.values()
    )
    sys.exit(1 if bad else 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=10, help="reruns per student")
    parser.add_argument("--think", type=float, default=3.0, help="seconds between reruns")
    parser.add_argument("--ramp", type=float, default=20.0, help="seconds over which they arrive")
    parser.add_argument("--max-seconds", type=float, default=600, help="per setup; then stop")
    parser.add_argument("--questions", type=int, default=0, help="a class over Q questions")
    parser.add_argument("--redis-outage", type=float, default=0, help="seconds Redis is away")
    args = parser.parse_args()
    if args.questions:
        main_class(args)
        return
    logs = {
        setup: measure(setup, args.students, args.rounds, args.think, args.ramp, args.max_seconds)
        for setup in SETUPS
    }
    print(
        f"Class load: {args.students} students at once (one headless Chromium), {args.rounds} "
        f"reruns each, {args.think:g} s between them, arriving over {args.ramp:g} s; 6 layers x "
        f"8 heads, d_model 512, 20-23 tokens; loopback, this machine"
    )
    print(
        "| setup | reruns drawn | failures | server script: p50 / p95 | whole rerun: p50 / p95 "
        "| reruns / s | peak RSS per replica |"
    )
    print("|---|---|---|---|---|---|---|")
    for setup, log in logs.items():
        print(row(setup, log))
    problems = [line for log in logs.values() for line in log["failures"] + log["errors"]]
    for line in problems[:10]:
        print(f"  {line}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
