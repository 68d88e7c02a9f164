"""How long do the corpus statistics take? MiniLM over the bundled corpus, the first time and
from the page's byte-budget cache.

Run: `python tests/bench/corpus_speed.py`. One torch thread, as the app runs. The first pass
computes every head's statistics and query-key plane; the second is the cached answer the page
gets on every later look (the issue's target: at most 30 s the first time, instant after).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from app.memory import ByteBudgetCache  # noqa: E402
from encoder import load_pretrained  # noqa: E402
from encoder.core.model import TransformerEncoder  # noqa: E402
from encoder.inspect.corpus import (  # noqa: E402
    MAX_TOKENS,
    Corpus,
    bundled_corpus,
    corpus_of,
    corpus_statistics,
)
from encoder.io.tokenize import tokenize  # noqa: E402

GOAL_FIRST_S = 30.0


def measure_corpus_speed(model: TransformerEncoder, corpus: Corpus) -> dict[str, float]:
    """Seconds for the first pass and for a cached look, through a ByteBudgetCache."""
    cache = ByteBudgetCache(2 * 1024**3)
    times = {}
    for attempt in ("first_s", "cached_s"):
        start = time.perf_counter()
        stats = cache.get_or_build(
            ("corpus",),
            lambda: corpus_statistics(model, corpus),
            lambda found: found.nbytes,
            reserve=0,
            what="the corpus statistics",
        )
        times[attempt] = time.perf_counter() - start
    times["held_mb"] = stats.nbytes / 1e6
    return times


def main() -> None:
    torch.set_num_threads(1)
    model, tokenizer = load_pretrained()
    corpus = corpus_of(tokenize(bundled_corpus(), tokenizer, MAX_TOKENS))
    times = measure_corpus_speed(model, corpus)
    print(
        f"MiniLM, {len(corpus.sentences)} sentences ({corpus.token_count} tokens): first "
        f"{times['first_s']:.1f} s (goal <= {GOAL_FIRST_S:.0f} s), cached "
        f"{times['cached_s'] * 1000:.2f} ms, {times['held_mb']:.1f} MB held"
    )


if __name__ == "__main__":
    main()
