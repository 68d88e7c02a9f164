"""tests/bench/class_load.py runs as a command, tiny (its timings are not judged here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.bench.class_load import SETUPS
from tests.e2e.harness import REPO

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
