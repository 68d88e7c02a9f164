"""The patching benchmark times every grid and a cone on 16 tokens."""

from __future__ import annotations

from tests.bench.patching_speed import measure


def test_the_patching_benchmark_times_the_grids_and_the_cone() -> None:
    times = measure(repeats=1)
    assert times["tokens"] == 16
    assert len(times["grids_s"]) == len(times["cone_s"]) == 1
    assert all(t > 0 for t in times["grids_s"] + times["cone_s"])
