"""Benchmark scripts (run directly, e.g. `python tests/bench/capture_overhead.py`)."""
