"""How long does searching the bundled corpus by meaning take? MiniLM embeds the 328 sentences at
every depth (target: at most 5 s here), then a query is ranked against them (at most 100 ms once
embedded), and a token's nearest tokens at a layer (the first time builds that layer's states).

Run from the repo root: `python tests/bench/search_speed.py [--repeats 5] [--device cpu]`. One
torch thread, as the app runs. Prints the median and the range (min-max) of each.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from encoder import load_pretrained  # noqa: E402
from encoder.inspect.corpus import bundled_corpus  # noqa: E402
from encoder.inspect.search import corpus_index  # noqa: E402
from encoder.inspect.similarity import pooling_of  # noqa: E402
from encoder.io.tokenize import bundled_model_dir  # noqa: E402

GOAL_EMBED_S, GOAL_SEARCH_MS = 5.0, 100.0
QUERY = "A dog runs across the park."


def measure(repeats: int, device: str = "cpu", lines: list[str] | None = None) -> dict:
    """Seconds to embed the corpus, milliseconds to embed and rank a query at the output, seconds
    to build one layer's token states and milliseconds for a nearest-tokens look after: each a list
    of `repeats` times."""
    model, tokenizer = load_pretrained()
    model = model.to(device)
    lines = lines or bundled_corpus()
    pooling = pooling_of(bundled_model_dir())
    times: dict[str, list[float]] = {"embed_s": [], "search_ms": [], "tokens_s": [], "near_ms": []}
    for _ in range(repeats):
        start = time.perf_counter()
        index = corpus_index(model, tokenizer, lines, pooling, device=device)
        times["embed_s"].append(time.perf_counter() - start)
        start = time.perf_counter()
        query = index.embed(model, [QUERY])[-1, 0]
        hits = index.search(query, index.num_layers)
        times["search_ms"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        index.token_states(model, 3)
        times["tokens_s"].append(time.perf_counter() - start)
        start = time.perf_counter()
        index.nearest_tokens(model, index.token_states(model, 3)[5], 3)
        times["near_ms"].append((time.perf_counter() - start) * 1000)
    times["best"] = hits[0].text
    return times


def spread(values: list[float], spec: str) -> str:
    return f"median {statistics.median(values):{spec}} ({min(values):{spec}}-{max(values):{spec}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    times = measure(args.repeats, args.device)
    print(f"MiniLM, the bundled corpus ({len(bundled_corpus())} sentences), {args.device}:")
    print(f"  embedding every depth: {spread(times['embed_s'], '.2f')} s (goal <= {GOAL_EMBED_S})")
    print(
        f"  a search (query embedded and ranked): {spread(times['search_ms'], '.1f')} ms "
        f"(goal <= {GOAL_SEARCH_MS:.0f}); best for {QUERY!r}: {times['best']!r}"
    )
    print(f"  layer 3's token states, first asked: {spread(times['tokens_s'], '.2f')} s")
    print(f"  nearest tokens after: {spread(times['near_ms'], '.2f')} ms")


if __name__ == "__main__":
    main()
