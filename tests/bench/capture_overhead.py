"""How much does capturing every tensor cost? model.trace(...) against torch's own encoder.

Run: `python tests/bench/capture_overhead.py [--repeats N] [--device cuda:0] [--pretrained]`.
Both encoders hold the same weights and run in eval mode under no_grad, interleaved in one
process; the table shows the median and the min-max in ms of wall-clock time (on a GPU, each call
waits for its kernels). The reference is `nn.TransformerEncoder` fed by our embeddings (in eval
mode torch takes its fused fast path), so the ratio is what the explicit, hooked model costs over
torch's best plain forward. The model: the app's speed-goal setup (6 layers x 8 heads, d_model
512) with random weights, or the bundled MiniLM (`--pretrained`); the batch: random token ids.
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
from encoder.core.model import TransformerEncoder, available_devices  # noqa: E402
from encoder.io.checkpoints import load_pretrained  # noqa: E402
from encoder.measure.timing import synchronize  # noqa: E402
from tests.encoder.helpers import torch_reference  # noqa: E402

BENCH_CONFIG = EncoderConfig(d_model=512, num_heads=8, num_layers=6, d_ff=2048, dropout=0.0)
GOAL_RATIO = 1.2


def _times_ms(
    runs: dict[str, Callable[[], object]],
    warmup: int,
    repeats: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Wall time of each callable's timed calls, run round-robin so drift hits all of them alike.

    `clock` gives seconds (time.perf_counter; a test passes a fake one).
    """
    times: dict[str, list[float]] = {name: [] for name in runs}
    for i in range(warmup + repeats):
        for name, run in runs.items():
            start = clock()
            run()
            if i >= warmup:
                times[name].append((clock() - start) * 1e3)
    return times


def measure_capture_overhead(
    cfg: EncoderConfig = BENCH_CONFIG,
    batch: int = 1,
    tokens: int = 64,
    warmup: int = 5,
    repeats: int = 30,
    *,
    model: TransformerEncoder | None = None,
    device: str = "cpu",
) -> dict:
    """Median ms of torch's encoder, our plain forward and our model.trace on one random batch,
    on `device`; `model` (e.g. MiniLM) instead of random weights of `cfg`.

    Returns {batch, tokens, torch_ms, forward_ms, trace_ms, trace_ratio, forward_ratio} and each
    encoder's fastest and slowest call ({name}_min_ms, {name}_max_ms); the ratios are ours /
    torch's.
    """
    model = (model if model is not None else TransformerEncoder(cfg)).eval().to(device)
    cfg = model.cfg
    reference = torch_reference(model).to(device)
    input_ids = torch.randint(
        0, cfg.vocab_size, (batch, tokens), generator=torch.Generator().manual_seed(0)
    ).to(device)
    attention_mask = torch.ones_like(input_ids)
    ours = model(input_ids, attention_mask)
    theirs = reference(model.embed(input_ids, None))
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)  # same weights, same numbers

    def waited(run: Callable[[], object]) -> Callable[[], None]:
        """`run`, then wait for the device's queued work, so a timer measures the work."""
        return lambda: (run(), synchronize(device))

    times = _times_ms(
        {
            "torch": waited(lambda: reference(model.embed(input_ids, None))),
            "forward": waited(lambda: model(input_ids, attention_mask)),
            "trace": waited(lambda: model.trace(input_ids, attention_mask)),
        },
        warmup,
        repeats,
    )
    median = {name: statistics.median(values) for name, values in times.items()}
    return {
        "batch": batch,
        "tokens": tokens,
        "torch_ms": median["torch"],
        "forward_ms": median["forward"],
        "trace_ms": median["trace"],
        "trace_ratio": median["trace"] / median["torch"],
        "forward_ratio": median["forward"] / median["torch"],
        **{f"{name}_min_ms": min(values) for name, values in times.items()},
        **{f"{name}_max_ms": max(values) for name, values in times.items()},
    }


def _spread(result: dict, name: str) -> str:
    """'12.34 (11.90-15.02)': median (min-max) of one encoder's calls."""
    low, high = result[f"{name}_min_ms"], result[f"{name}_max_ms"]
    return f"{result[f'{name}_ms']:.2f} ({low:.2f}-{high:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda:N or mps (default cpu)")
    parser.add_argument(
        "--pretrained", action="store_true", help="the bundled MiniLM instead of random weights"
    )
    args = parser.parse_args()
    if args.device not in available_devices():
        parser.error(f"device {args.device!r} is not available here: {available_devices()}")
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_pretrained()[0] if args.pretrained else TransformerEncoder(BENCH_CONFIG)
    cfg = model.cfg
    where = args.device
    if where.startswith("cuda"):
        where += f" ({torch.cuda.get_device_name(args.device)}, CUDA {torch.version.cuda})"
    print(
        f"{'MiniLM' if args.pretrained else 'random weights'}: {cfg.num_layers} layers, d_model "
        f"{cfg.d_model}, {cfg.num_heads} heads, d_ff {cfg.d_ff}, {args.tokens} tokens, on "
        f"{where}, torch {torch.__version__}, {torch.get_num_threads()} threads, median "
        f"(min-max) of {args.repeats}, load average {os.getloadavg()[0]:.1f} (other work skews "
        f"this)"
    )
    print(
        f"{'batch':>5} {'torch ms':>20} {'forward ms':>20} {'trace ms':>20} {'trace/torch':>11} "
        f"{'forward/torch':>13}"
    )
    for batch in args.batches:
        r = measure_capture_overhead(
            batch=batch, tokens=args.tokens, repeats=args.repeats, model=model, device=args.device
        )
        verdict = "ok" if r["trace_ratio"] <= GOAL_RATIO else f"over {GOAL_RATIO}"
        spreads = " ".join(f"{_spread(r, name):>20}" for name in ("torch", "forward", "trace"))
        print(
            f"{r['batch']:>5} {spreads} {r['trace_ratio']:>11.2f} {r['forward_ratio']:>13.2f}  "
            f"{verdict}"
        )


if __name__ == "__main__":
    main()
