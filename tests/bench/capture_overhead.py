"""How much does capturing every tensor cost? model.trace(...) against torch's own encoder.

Run: `python tests/bench/capture_overhead.py [--repeats N]`. Both encoders hold the same weights
and run in eval mode under no_grad, interleaved in one process; the table shows medians in ms.
The reference is `nn.TransformerEncoder` fed by our embeddings (in eval mode torch takes its fused
fast path), so the ratio is what the explicit, hooked model costs over torch's best plain forward.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from encoder.core.config import EncoderConfig  # noqa: E402
from encoder.core.model import TransformerEncoder  # noqa: E402
from tests.encoder.helpers import torch_reference  # noqa: E402

BENCH_CONFIG = EncoderConfig(d_model=512, num_heads=8, num_layers=6, d_ff=2048, dropout=0.0)
GOAL_RATIO = 1.2


def _median_ms(
    runs: dict[str, Callable[[], object]],
    warmup: int,
    repeats: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Median wall time of each callable, run round-robin so drift hits all of them alike.

    `clock` gives seconds (time.perf_counter; a test passes a fake one).
    """
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(warmup + repeats):
        for name, run in runs.items():
            start = clock()
            run()
            if i >= warmup:
                times[name].append((clock() - start) * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


@torch.no_grad()
def measure_capture_overhead(
    cfg: EncoderConfig = BENCH_CONFIG,
    batch: int = 1,
    tokens: int = 64,
    warmup: int = 5,
    repeats: int = 30,
) -> dict:
    """Median ms of torch's encoder, our plain forward and our model.trace on one random batch.

    Returns {batch, tokens, torch_ms, forward_ms, trace_ms, trace_ratio, forward_ratio}; the
    ratios are ours / torch's.
    """
    model = TransformerEncoder(cfg).eval()
    reference = torch_reference(model)
    input_ids = torch.randint(
        0, cfg.vocab_size, (batch, tokens), generator=torch.Generator().manual_seed(0)
    )
    attention_mask = torch.ones_like(input_ids)
    ours = model(input_ids, attention_mask)
    theirs = reference(model.embed(input_ids, None))
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)  # same weights, same numbers
    median = _median_ms(
        {
            "torch": lambda: reference(model.embed(input_ids, None)),
            "forward": lambda: model(input_ids, attention_mask),
            "trace": lambda: model.trace(input_ids, attention_mask),
        },
        warmup,
        repeats,
    )
    return {
        "batch": batch,
        "tokens": tokens,
        "torch_ms": median["torch"],
        "forward_ms": median["forward"],
        "trace_ms": median["trace"],
        "trace_ratio": median["trace"] / median["torch"],
        "forward_ratio": median["forward"] / median["torch"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = BENCH_CONFIG
    print(
        f"{cfg.num_layers} layers, d_model {cfg.d_model}, {cfg.num_heads} heads, d_ff {cfg.d_ff}, "
        f"{args.tokens} tokens, torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"median of {args.repeats}, load average {os.getloadavg()[0]:.1f} (other work skews this)"
    )
    print(
        f"{'batch':>5} {'torch ms':>9} {'forward ms':>10} {'trace ms':>9} {'trace/torch':>11} "
        f"{'forward/torch':>13}"
    )
    for batch in args.batches:
        r = measure_capture_overhead(batch=batch, tokens=args.tokens, repeats=args.repeats)
        verdict = "ok" if r["trace_ratio"] <= GOAL_RATIO else f"over {GOAL_RATIO}"
        print(
            f"{r['batch']:>5} {r['torch_ms']:>9.2f} {r['forward_ms']:>10.2f} {r['trace_ms']:>9.2f} "
            f"{r['trace_ratio']:>11.2f} {r['forward_ratio']:>13.2f}  {verdict}"
        )


if __name__ == "__main__":
    main()
