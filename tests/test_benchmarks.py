"""The benchmark scripts in tests/bench run, on a tiny model (their timings are not judged)."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from tests.bench.capture_overhead import measure_capture_overhead


def test_capture_overhead_benchmark_runs_on_a_tiny_model() -> None:
    cfg = EncoderConfig(vocab_size=100, d_model=24, num_heads=4, num_layers=2, d_ff=40, max_len=32)
    result = measure_capture_overhead(cfg, batch=2, tokens=8, warmup=1, repeats=3)
    assert (result["batch"], result["tokens"]) == (2, 8)
    assert min(result["torch_ms"], result["forward_ms"], result["trace_ms"]) > 0
    assert result["trace_ratio"] == result["trace_ms"] / result["torch_ms"]
