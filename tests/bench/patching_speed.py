"""How long does activation patching take? MiniLM on the lesson's sentence and a one-word change
(16 tokens each): every grid (residual, heads, attention, feed-forward, with their sentences;
target: at most 2 s here) and one cone (the encoder's and the causal mask's).

Run from the repo root: `python tests/bench/patching_speed.py [--repeats 5] [--threads 1]
[--device cpu]`. One torch thread by default, as the app runs. Prints the median and the range
(min-max) of each.
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
from encoder.inspect.patching import cone, metric_named, patch  # noqa: E402
from encoder.inspect.similarity import pooling_of  # noqa: E402
from encoder.io.tokenize import bundled_model_dir  # noqa: E402

GOAL_GRIDS_S = 2.0
CLEAN = "The animal didn't cross the street because it was too tired."
CORRUPTED = "The animal didn't cross the street because it was too wide."


def measure(repeats: int, device: str = "cpu") -> dict:
    """Seconds for every grid and for one cone, each a list of `repeats` times, and the count of
    tokens."""
    model, tokenizer = load_pretrained()
    model = model.to(device)
    clean, corrupted = (tokenizer.encode(text) for text in (CLEAN, CORRUPTED))
    metric = metric_named("cosine", pooling=pooling_of(bundled_model_dir()))
    changed = next(
        t for t, (a, b) in enumerate(zip(clean.ids, corrupted.ids, strict=True)) if a != b
    )
    times: dict[str, list[float]] = {"grids_s": [], "cone_s": []}
    for _ in range(repeats):
        start = time.perf_counter()
        patch(model, clean.ids, corrupted.ids, metric, clean.tokens)
        times["grids_s"].append(time.perf_counter() - start)
        start = time.perf_counter()
        cone(model, clean.ids, corrupted.ids, 2, changed, clean.tokens)
        times["cone_s"].append(time.perf_counter() - start)
    return times | {"tokens": len(clean.ids)}


def spread(values: list[float], spec: str) -> str:
    return f"median {statistics.median(values):{spec}} ({min(values):{spec}}-{max(values):{spec}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    times = measure(args.repeats, args.device)
    print(f"MiniLM, {times['tokens']} tokens, {args.device}, {args.threads} thread(s):")
    print(f"  every grid: {spread(times['grids_s'], '.2f')} s (goal <= {GOAL_GRIDS_S})")
    print(f"  one cone, encoder and causal: {spread(times['cone_s'], '.3f')} s")


if __name__ == "__main__":
    main()
