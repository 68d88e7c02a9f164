"""Command line: `python -m encoder trace "some text" [options]`.

Each subcommand is registered by one `add_*_command(subparsers)` function listed in COMMANDS; it
sets `run`, which takes the parsed arguments and returns the exit code. A ValueError (a bad
configuration, a run too large) becomes a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import pandas as pd
import torch
from tokenizers import Tokenizer

from encoder.analysis import cost_summary, shape_ledger
from encoder.capture import Trace
from encoder.config import ACTIVATIONS, EncoderConfig
from encoder.limits import check_run
from encoder.model import TransformerEncoder, available_devices
from encoder.pretrained import load_pretrained
from encoder.tokenize import TokenizedBatch, load_tokenizer, tokenize
from encoder.training import add_train_command

USAGE_ERROR = 2
LEDGER_COLUMNS = ["layer", "operation", "hook", "input_shape", "output_shape", "params", "flops"]
ARCHITECTURE_OPTIONS = ("norm", "heads", "d_model", "layers", "d_ff", "activation", "seed")


def add_trace_command(subparsers: argparse._SubParsersAction) -> None:
    """`trace TEXT [TEXT ...] [architecture options] [--pretrained] [--device D]`."""
    parser = subparsers.add_parser(
        "trace",
        help="run text through an encoder; print the shape ledger and the run's costs",
        description="Run sentences through an encoder as one padded batch and print every "
        "operation's shapes, parameters and FLOPs, then a summary of the run.",
    )
    parser.add_argument("sentences", nargs="+", metavar="TEXT", help="one sentence per argument")
    defaults = EncoderConfig()
    parser.add_argument("--norm", choices=("pre", "post"), help="pre-norm (default) or post-norm")
    parser.add_argument("--heads", type=int, help=f"attention heads (default {defaults.num_heads})")
    parser.add_argument("--d-model", type=int, help=f"model width (default {defaults.d_model})")
    parser.add_argument(
        "--layers", type=int, help=f"encoder blocks (default {defaults.num_layers})"
    )
    parser.add_argument("--d-ff", type=int, help="feed-forward width (default 4 x d-model)")
    parser.add_argument("--activation", choices=ACTIVATIONS, help=f"default {defaults.activation}")
    parser.add_argument("--seed", type=int, help=f"weight seed (default {defaults.seed})")
    parser.add_argument("--device", default="cpu", help="cpu, cuda:N or mps (default cpu)")
    parser.add_argument(
        "--pretrained",
        action="store_true",
        help="use the bundled all-MiniLM-L6-v2 weights instead of random ones",
    )
    parser.set_defaults(run=run_trace)


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    add_trace_command,
    add_train_command,
)


def random_config(args: argparse.Namespace, vocab_size: int) -> EncoderConfig:
    """The EncoderConfig the trace options describe (unset options keep the defaults)."""
    defaults = EncoderConfig()
    d_model = args.d_model if args.d_model is not None else defaults.d_model
    chosen = {
        "norm_first": None if args.norm is None else args.norm == "pre",
        "num_heads": args.heads,
        "num_layers": args.layers,
        "d_ff": args.d_ff if args.d_ff is not None else 4 * d_model,
        "activation": args.activation,
        "seed": args.seed,
    }
    given = {name: value for name, value in chosen.items() if value is not None}
    return EncoderConfig(vocab_size=vocab_size, d_model=d_model, **given)


def load_model(
    args: argparse.Namespace,
) -> tuple[TransformerEncoder | None, Tokenizer, EncoderConfig]:
    """The pretrained model, or None (built once the run is known to be within bounds)."""
    if not args.pretrained:
        tokenizer = load_tokenizer()
        return None, tokenizer, random_config(args, tokenizer.get_vocab_size())
    given = [
        f"--{name.replace('_', '-')}"
        for name in ARCHITECTURE_OPTIONS
        if getattr(args, name) is not None
    ]
    if given:
        raise ValueError(f"--pretrained fixes the architecture; drop {', '.join(given)}")
    model, tokenizer = load_pretrained()
    return model, tokenizer, model.cfg


def describe(cfg: EncoderConfig, pretrained: bool) -> str:
    source = "pretrained all-MiniLM-L6-v2" if pretrained else f"random weights (seed {cfg.seed})"
    norm = "pre-norm" if cfg.norm_first else "post-norm"
    return (
        f"{source}, {norm}, {cfg.num_layers} layers x {cfg.num_heads} heads, "
        f"d_model {cfg.d_model}, d_ff {cfg.d_ff}, {cfg.activation}"
    )


def _synchronize(device: torch.device) -> None:
    """Wait for queued GPU work, so a timer measures the work rather than its launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def timed_trace(model: TransformerEncoder, batch: TokenizedBatch) -> tuple[Trace, float]:
    """Trace the batch (after one warm-up pass); return the trace and its time in ms."""
    input_ids = batch.input_ids.to(model.device)
    attention_mask = batch.attention_mask.to(model.device)
    model.trace(input_ids, attention_mask)  # warm-up: first calls pay one-off set-up costs
    _synchronize(model.device)
    start = time.perf_counter()
    trace = model.trace(input_ids, attention_mask)
    _synchronize(model.device)
    return trace, (time.perf_counter() - start) * 1000


def format_ledger(ledger: pd.DataFrame) -> str:
    """The ledger's main columns as a plain-text table, counts with thousands separators."""
    counts = {column: "{:,}".format for column in ("params", "flops")}
    return ledger[LEDGER_COLUMNS].to_string(index=False, formatters=counts)


def format_summary(
    batch: TokenizedBatch, costs: dict, description: str, milliseconds: float, device: str
) -> list[str]:
    """The run in lines: model, device, each sentence's tokens, cuts, sizes, costs, time."""
    lines = [f"model: {description}", f"device: {device}"]
    for index, tokens in enumerate(batch.tokens, start=1):
        lines.append(f"sentence {index} ({len(tokens)} tokens): {' '.join(tokens)}")
    for cut in batch.truncations:
        kept_text = batch.sentences[cut.sentence_index][: cut.kept_chars]
        lines.append(
            f"sentence {cut.sentence_index + 1} was cut from {cut.total_tokens} to "
            f"{cut.kept_tokens} tokens, after {kept_text[-40:]!r}"
        )
    flops = costs["flops"]
    lines += [
        f"batch: {costs['batch']} sentence(s), {costs['tokens']:,} tokens "
        f"({costs['padded_tokens']:,} with padding)",
        f"parameters: {costs['params']:,}",
        f"FLOPs: {flops:,} (attention {costs['attention_flops']:,}, projections "
        f"{costs['projection_flops']:,}, feed-forward {costs['ffn_flops']:,})",
        f"activations: {costs['activation_bytes'] / 1e6:,.1f} MB",
        f"forward: {milliseconds:.1f} ms",
    ]
    return lines


def run_trace(args: argparse.Namespace) -> int:
    """Check the options and bounds, run one traced forward pass, print ledger and summary."""
    if args.device not in available_devices():
        raise ValueError(
            f"device {args.device!r} is not available here; use one of {available_devices()}"
        )
    model, tokenizer, cfg = load_model(args)
    batch = tokenize(args.sentences, tokenizer, max_len=cfg.max_len)
    check_run(cfg, *batch.input_ids.shape)
    if model is None:
        model = TransformerEncoder(cfg).eval()
    model.to(args.device)
    trace, milliseconds = timed_trace(model, batch)
    costs = cost_summary(model, trace)
    description = describe(cfg, args.pretrained)
    print(format_ledger(shape_ledger(model, trace)))
    print()
    print("\n".join(format_summary(batch, costs, description, milliseconds, args.device)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m encoder", description="Look inside a Transformer encoder."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
