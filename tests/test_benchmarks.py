"""The benchmark scripts in tests/bench measure what they say, on a tiny model."""

from __future__ import annotations

import time

import pytest
import torch

from encoder.core.config import EncoderConfig
from tests.bench import capture_overhead
from tests.bench.capture_overhead import _median_ms, measure_capture_overhead

TINY = EncoderConfig(vocab_size=100, d_model=24, num_heads=4, num_layers=2, d_ff=40, max_len=32)


def test_each_callable_gets_its_own_median_time() -> None:
    medians = _median_ms(
        {"short": lambda: time.sleep(0.002), "long": lambda: time.sleep(0.012)}, 1, 5
    )
    assert 2 <= medians["short"] < 10
    assert 12 <= medians["long"] < 25


def test_the_capture_benchmark_times_all_three_encoders_on_the_asked_batch() -> None:
    result = measure_capture_overhead(TINY, batch=2, tokens=8, warmup=1, repeats=3)
    assert (result["batch"], result["tokens"]) == (2, 8)
    assert min(result["torch_ms"], result["forward_ms"], result["trace_ms"]) > 0


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
