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

Everything runs on this machine: the browsers share its cores with the servers, so the second
setup shows what a proxy and a second process cost and how memory splits, not the speed-up that
replicas on their own machines would give.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from tests.bench.load import Target, drive, percentiles  # noqa: E402
from tests.e2e.harness import StreamlitServer  # noqa: E402
from tests.e2e.proxy import Nginx, replicas_behind_nginx  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=10, help="reruns per student")
    parser.add_argument("--think", type=float, default=3.0, help="seconds between reruns")
    parser.add_argument("--ramp", type=float, default=20.0, help="seconds over which they arrive")
    parser.add_argument("--max-seconds", type=float, default=600, help="per setup; then stop")
    args = parser.parse_args()
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
