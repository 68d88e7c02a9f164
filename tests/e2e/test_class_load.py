"""tests/bench/class_load.py runs as a command, tiny (its timings are not judged here), in both
its modes: students rerunning, and a class following its teacher; the CPU time it reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from tests.bench.class_load import SETUPS
from tests.e2e.harness import REPO, process_cpu_s

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]


def test_class_load_benchmark_prints_one_row_per_setup_with_every_rerun_drawn(browser, nginx):
    command = [sys.executable, "tests/bench/class_load.py", "--students", "2", "--rounds", "2"]
    done = subprocess.run(
        [*command, "--think", "0", "--ramp", "0"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=380,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in done.stdout.splitlines()}
    for setup, replicas in zip(SETUPS, (1, 2), strict=True):
        cells = rows[setup].strip("| ").split(" | ")
        assert cells[1:3] == ["4 of 4", "0"]  # every rerun drawn with its own tokens
        assert all(cell.endswith(" s") and " / " in cell for cell in cells[3:5])  # p50 / p95
        assert float(cells[5]) > 0  # reruns per second
        peaks = cells[6].removesuffix(" MiB").split(" / ")
        assert len(peaks) == replicas and all(float(mb) > 0 for mb in peaks)
        assert max(float(mb) for mb in peaks) > 100  # a replica that drew pages (two students
        # behind nginx may well share one)


def test_a_process_cpu_seconds_read_from_proc_match_its_own_clock():
    before, own_before = process_cpu_s(os.getpid()), time.process_time()
    while time.process_time() - own_before < 0.5:  # half a second of work on this process
        sum(range(1000))
    used, own_used = process_cpu_s(os.getpid()) - before, time.process_time() - own_before
    assert own_used >= 0.5
    assert used == pytest.approx(own_used, abs=0.05)  # clock ticks of 0.01 s


def test_class_benchmark_prints_one_row_per_setup_with_every_answer_counted_once(browser, nginx):
    """A teacher and one student over one question, on one server and on two replicas."""
    command = [sys.executable, "tests/bench/class_load.py", "--students", "1", "--questions", "1"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=380)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = [
        line.strip("| ").split(" | ") for line in done.stdout.splitlines() if "| 1 of 1 |" in line
    ]
    assert [cells[0] for cells in rows] == ["1 server, SQLite", "2 replicas behind nginx, Redis"]
    for cells in rows:
        # counted, lost, duplicated, refused, a Send sent again
        assert cells[1:6] == ["1 of 1", "0", "0", "0", "0"]
        assert cells[9] == "0"  # tracebacks and console errors
        cpu, wall = re.fullmatch(r"(\d+\.\d) of (\d+) s \(\d+\.\d\d\)", cells[10]).group(1, 2)
        assert 0 < float(cpu) < 2 * int(wall)  # the servers worked, within two cores
