"""Command line: `python -m encoder trace TEXT [options]` and `python -m encoder train [options]`.

    python -m encoder train --task reverse --save reverse-model --json
    python -m encoder trace --checkpoint reverse-model "3 1 4 1 5 9 2 6"

Each subcommand is registered by one `add_*_command(subparsers)` function listed in COMMANDS; it
sets `run`, which takes the parsed arguments and returns the exit code. A ValueError (a bad
configuration, a run too large) becomes a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import torch
from tokenizers import Tokenizer

from encoder.core.capture import Trace
from encoder.core.config import (
    ACTIVATIONS,
    NORM_PLACEMENTS,
    EncoderConfig,
    norm_first_of,
    placement_of,
)
from encoder.core.model import TransformerEncoder, available_devices
from encoder.inspect.ledger import cost_summary, shape_ledger
from encoder.inspect.limits import check_run
from encoder.io.checkpoints import load_checkpoint
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import TokenizedBatch, load_tokenizer, tokenize
from encoder.train.tasks import TASKS, example_sequence
from encoder.train.trainer import StepMetrics, TrainConfig, torch_threads, train

USAGE_ERROR = 2
PRINTED_COLUMNS = ["layer", "operation", "hook", "input_shape", "output_shape", "params", "flops"]
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
    parser.add_argument("--norm", choices=NORM_PLACEMENTS, help="pre-norm (default) or post-norm")
    parser.add_argument("--heads", type=int, help=f"attention heads (default {defaults.num_heads})")
    parser.add_argument("--d-model", type=int, help=f"model width (default {defaults.d_model})")
    parser.add_argument(
        "--layers", type=int, help=f"encoder blocks (default {defaults.num_layers})"
    )
    parser.add_argument("--d-ff", type=int, help="feed-forward width (default 4 x d-model)")
    parser.add_argument("--activation", choices=ACTIVATIONS, help=f"default {defaults.activation}")
    parser.add_argument("--seed", type=int, help=f"weight seed (default {defaults.seed})")
    parser.add_argument("--device", default="cpu", help="cpu, cuda:N or mps (default cpu)")
    weights = parser.add_mutually_exclusive_group()
    weights.add_argument(
        "--pretrained",
        action="store_true",
        help="use the bundled all-MiniLM-L6-v2 weights instead of random ones",
    )
    weights.add_argument(
        "--checkpoint",
        metavar="DIR",
        help="a checkpoint directory: BERT-style, or saved by `train --save` (then each TEXT is "
        'one sequence of the task\'s symbols, e.g. "3 1 4 1 5 9 2 6")',
    )
    parser.set_defaults(run=run_trace)


def add_train_command(subparsers: argparse._SubParsersAction) -> None:
    """`train [--task T] [--norm pre|post] [--layers N] ... [--save DIR] [--json]`."""
    parser = subparsers.add_parser(
        "train", help="train a tiny encoder on a toy task and report held-out accuracy"
    )
    default = TrainConfig()
    parser.add_argument("--task", choices=tuple(TASKS), default=default.task)
    parser.add_argument("--norm", choices=NORM_PLACEMENTS, default=placement_of(default.norm_first))
    parser.add_argument("--layers", type=int, default=default.num_layers)
    parser.add_argument("--warmup", type=int, default=default.warmup_steps, metavar="STEPS")
    parser.add_argument("--steps", type=int, default=default.steps)
    parser.add_argument("--lr", type=float, default=default.lr)
    parser.add_argument("--seed", type=int, default=default.seed)
    parser.add_argument(
        "--threads",
        type=int,
        help="CPU threads for torch (default: torch's choice, one per core); 1 is barely slower "
        "for these tiny models and far faster when other programs busy the cores",
    )
    parser.add_argument(
        "--checkpoint-blocks",
        action="store_true",
        help="gradient checkpointing: keep only each block's input for backward and recompute "
        "the block (less memory, about one more forward pass of time; the same losses)",
    )
    parser.add_argument(
        "--save",
        metavar="DIR",
        help="save the trained model in DIR (config.json, model.safetensors, tokenizer.json); "
        "open it with `trace --checkpoint DIR`",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line of results")
    parser.set_defaults(run=run_train)


COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    add_trace_command,
    add_train_command,
)


@dataclass
class ChosenModel:
    """The model the trace options name, with its tokenizer and a description for the summary."""

    cfg: EncoderConfig
    tokenizer: Tokenizer
    description: str
    model: TransformerEncoder | None = None  # None: random weights, built once the run fits
    task_model: TaskModel | None = None  # a model trained here: inputs checked, answers printed


def random_config(args: argparse.Namespace, vocab_size: int) -> EncoderConfig:
    """The EncoderConfig the trace options describe (unset options keep the defaults)."""
    defaults = EncoderConfig()
    d_model = args.d_model if args.d_model is not None else defaults.d_model
    chosen = {
        "norm_first": None if args.norm is None else norm_first_of(args.norm),
        "num_heads": args.heads,
        "num_layers": args.layers,
        "d_ff": args.d_ff if args.d_ff is not None else 4 * d_model,
        "activation": args.activation,
        "seed": args.seed,
    }
    given = {name: value for name, value in chosen.items() if value is not None}
    return EncoderConfig(vocab_size=vocab_size, d_model=d_model, **given)


def describe(cfg: EncoderConfig, source: str) -> str:
    return (
        f"{source}, {placement_of(cfg.norm_first)}-norm, {cfg.num_layers} layers x "
        f"{cfg.num_heads} heads, d_model {cfg.d_model}, d_ff {cfg.d_ff}, {cfg.activation}"
    )


def choose_model(args: argparse.Namespace) -> ChosenModel:
    """Random weights (the model is built later, once the run is known to be within bounds),
    the bundled MiniLM, or a checkpoint directory."""
    if not args.pretrained and args.checkpoint is None:
        tokenizer = load_tokenizer()
        cfg = random_config(args, tokenizer.get_vocab_size())
        return ChosenModel(cfg, tokenizer, describe(cfg, f"random weights (seed {cfg.seed})"))
    given = [
        f"--{name.replace('_', '-')}"
        for name in ARCHITECTURE_OPTIONS
        if getattr(args, name) is not None
    ]
    option = "--pretrained" if args.pretrained else "--checkpoint"
    if given:
        raise ValueError(f"{option} fixes the architecture; drop {', '.join(given)}")
    checkpoint = load_checkpoint(args.checkpoint)
    cfg = checkpoint.encoder.cfg
    if args.pretrained:
        source = "pretrained all-MiniLM-L6-v2"
    elif checkpoint.task_model is not None:
        source = f"{checkpoint.task_model.task} task model {args.checkpoint}"
    else:
        source = f"checkpoint {args.checkpoint}"
    return ChosenModel(
        cfg, checkpoint.tokenizer, describe(cfg, source), checkpoint.encoder, checkpoint.task_model
    )


def check_task_sentences(task_model: TaskModel, sentences: list[str]) -> None:
    """Each sentence must be one sequence the task model reads; ValueError naming the first bad."""
    for index, sentence in enumerate(sentences, start=1):
        try:
            task_model.check_text(sentence)
        except ValueError as error:
            raise ValueError(f"sentence {index}: {error}") from error


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
    return ledger[PRINTED_COLUMNS].to_string(index=False, formatters=counts)


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
    chosen = choose_model(args)
    if chosen.task_model is not None:
        check_task_sentences(chosen.task_model, args.sentences)
    batch = tokenize(args.sentences, chosen.tokenizer, max_len=chosen.cfg.max_len)
    check_run(chosen.cfg, *batch.input_ids.shape)
    model = chosen.model if chosen.model is not None else TransformerEncoder(chosen.cfg).eval()
    model.to(args.device)
    trace, milliseconds = timed_trace(model, batch)
    costs = cost_summary(chosen.cfg, trace)
    print(format_ledger(shape_ledger(chosen.cfg, *batch.input_ids.shape)))
    print()
    print("\n".join(format_summary(batch, costs, chosen.description, milliseconds, args.device)))
    if chosen.task_model is not None:
        answers = chosen.task_model.predicted_classes(trace.output)
        for index, answer in enumerate(answers, start=1):
            print(f"prediction {index} ({chosen.task_model.task}): {' '.join(answer)}")
    return 0


def run_train(args: argparse.Namespace) -> int:
    """Train as the arguments say, print progress every tenth of the run, then the results;
    with --save, save the model; with --json, end with the results as one JSON line."""
    cfg = TrainConfig(  # a ValueError here becomes the CLI's one-line error, exit code 2
        task=args.task,
        norm_first=norm_first_of(args.norm),
        num_layers=args.layers,
        warmup_steps=args.warmup,
        steps=args.steps,
        lr=args.lr,
        seed=args.seed,
        checkpoint_blocks=args.checkpoint_blocks,
    )
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads {args.threads} must be at least 1")
    every = max(1, cfg.steps // 10)
    checkpointing = ", blocks checkpointed" if cfg.checkpoint_blocks else ""
    print(
        f"training {cfg.task} ({args.norm}-norm, {cfg.num_layers} layers{checkpointing}) "
        f"for {cfg.steps} steps"
    )

    def report(m: StepMetrics) -> None:
        if m.step % every == 0 or m.step == cfg.steps:
            print(f"step {m.step:5d}  loss {m.loss:.4f}  acc {m.accuracy:.3f}  lr {m.lr:.2e}")

    with torch_threads(args.threads):
        result = train(cfg, report)
    summary = result.summary()
    print(
        f"held-out accuracy {summary['accuracy']:.4f} on {summary['held_out_examples']} unseen "
        f"sequences (whole sequences right: {summary['sequence_accuracy']:.4f}), "
        f"{summary['seconds']:.1f} s"
    )
    if args.save is not None:
        saved = TaskModel.from_result(result).save(args.save)
        summary["checkpoint"] = str(saved)
        example = example_sequence(cfg.seq_len, cfg.vocab)
        print(f"saved to {saved}")
        print(f'open it with: python -m encoder trace --checkpoint {saved} "{example}"')
    if args.json:
        print(json.dumps(summary))
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
    except (ValueError, OSError) as error:  # OSError: a checkpoint path that cannot be used
        print(f"error: {error}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
