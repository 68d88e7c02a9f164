"""The search benchmark times embedding a corpus, a search and a nearest-tokens look."""

from __future__ import annotations

from encoder.inspect.corpus import bundled_corpus
from tests.bench.search_speed import measure


def test_the_search_benchmark_times_each_step() -> None:
    times = measure(repeats=2, lines=bundled_corpus()[:12])
    for name in ("embed_s", "search_ms", "tokens_s", "near_ms"):
        assert len(times[name]) == 2 and all(t > 0 for t in times[name])
    assert times["best"] in bundled_corpus()[:12]
