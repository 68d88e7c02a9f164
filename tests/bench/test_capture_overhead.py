"""The benchmark scripts in tests/bench measure what they say, on a tiny model."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from encoder.core.config import EncoderConfig
from tests.bench import capture_overhead
from tests.bench.capture_overhead import _times_ms, measure_capture_overhead
from tests.encoder.helpers import DEVICES

TINY = EncoderConfig(vocab_size=100, d_model=24, num_heads=4, num_layers=2, d_ff=40, max_len=32)


class FakeClock:
    """A clock that moves only when a timed callable says how long it took (seconds)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def takes(self, name: str, durations_ms: list[float], calls: list[str]) -> Callable[[], None]:
        """A callable that advances the clock by the next of `durations_ms` and logs its call."""
        remaining = iter(durations_ms)

        def run() -> None:
            calls.append(name)
            self.now += next(remaining) / 1e3

        return run


def test_each_callable_gets_its_own_timed_runs_after_the_warmup() -> None:
    clock, calls = FakeClock(), []
    runs = {
        "short": clock.takes("short", [500, 2, 3, 1, 9, 2], calls),  # warmup 500 ms, then 5 timed
        "long": clock.takes("long", [1, 12, 14, 11, 13, 30], calls),  # warmup 1 ms, then 5 timed
    }
    times = _times_ms(runs, warmup=1, repeats=5, clock=clock)
    assert times == {
        "short": pytest.approx([2, 3, 1, 9, 2]),
        "long": pytest.approx([12, 14, 11, 13, 30]),
    }
    assert calls == ["short", "long"] * 6  # round-robin: drift hits both alike


@pytest.mark.parametrize("device", DEVICES)
def test_the_capture_benchmark_times_all_three_encoders_on_the_asked_batch(device: str) -> None:
    result = measure_capture_overhead(TINY, batch=2, tokens=8, warmup=1, repeats=3, device=device)
    assert (result["batch"], result["tokens"]) == (2, 8)
    for name in ("torch", "forward", "trace"):
        low, median, high = (result[f"{name}{end}"] for end in ("_min_ms", "_ms", "_max_ms"))
        assert 0 < low <= median <= high, name


def test_the_capture_benchmark_refuses_a_reference_that_computes_something_else(
    monkeypatch,
) -> None:
    real = capture_overhead.torch_reference

    def other_weights(model):
        reference = real(model)
        with torch.no_grad():
            reference.layers[0].linear1.weight.mul_(2.0)
        return reference

    monkeypatch.setattr(capture_overhead, "torch_reference", other_weights)
    with pytest.raises(AssertionError):
        measure_capture_overhead(TINY, batch=1, tokens=8, warmup=0, repeats=1)
