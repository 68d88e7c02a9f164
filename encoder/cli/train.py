"""`python -m encoder train [--task T] [--norm pre|post] [--layers N] ... [--save DIR] [--json]`:
train a tiny encoder on a toy task, print its progress and held-out accuracy, save it;
`--placements` trains once per dropout placement instead and compares them."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from encoder.cli.options import (
    add_architecture_option,
    add_dropout_options,
    add_threads_option,
    check_threads,
    dropout_settings,
)
from encoder.core.options import BY_FIELD, norm_first_of
from encoder.tasks.masked import longest_sentence
from encoder.tasks.tasks import TASKS
from encoder.train.config import TRAIN_MODEL, TrainConfig
from encoder.train.findings import placement_findings
from encoder.train.jobs import DEFAULT_DROPOUT_RATE, placement_job
from encoder.train.stall import stalled
from encoder.train.trainer import StepMetrics, torch_threads, train


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """`train [--task T] [--norm pre|post] [--layers N] ... [--save DIR] [--json]`."""
    parser = subparsers.add_parser(
        "train", help="train a tiny encoder on a toy task and report held-out accuracy"
    )
    default = TrainConfig()
    parser.add_argument("--task", choices=tuple(TASKS), default=default.task)
    for field in ("norm_first", "num_layers"):
        option = BY_FIELD[field]
        chosen = option.value_of(default.model)
        add_architecture_option(parser, option, chosen, default=chosen)
    parser.add_argument("--warmup", type=int, default=default.warmup_steps, metavar="STEPS")
    parser.add_argument("--steps", type=int, default=default.steps)
    parser.add_argument("--lr", type=float, default=default.lr)
    parser.add_argument("--seed", type=int, default=default.seed)
    add_dropout_options(parser)
    add_threads_option(parser)
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
    parser.add_argument(
        "--placements",
        action="store_true",
        help="train once per dropout placement (none, attention weights, sublayer outputs, "
        f"feed-forward hidden, all of torch's places) at --dropout's rate (default "
        f"{DEFAULT_DROPOUT_RATE:g}) on the same data, and compare them",
    )
    parser.add_argument("--json", action="store_true", help="end with one JSON line of results")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Train as the arguments say, print progress every tenth of the run, then the results;
    with --save, save the model; with --json, end with the results as one JSON line."""
    cfg = TrainConfig(  # a ValueError here becomes the CLI's one-line error, exit code 2
        task=args.task,
        model=replace(
            TRAIN_MODEL,
            norm_first=norm_first_of(args.norm),
            num_layers=args.layers,
            **dropout_settings(args),
        ),
        warmup_steps=args.warmup,
        steps=args.steps,
        lr=args.lr,
        seed=args.seed,
        checkpoint_blocks=args.checkpoint_blocks,
        # the masked task reads whole corpus sentences (the symbol tasks: sequences of 8)
        **({"seq_len": longest_sentence()} if TASKS[args.task].reads_words else {}),
    )
    check_threads(args)
    if args.placements:
        return _compare_placements(cfg, args)
    every = max(1, cfg.steps // 10)
    checkpointing = ", blocks checkpointed" if cfg.checkpoint_blocks else ""
    rates = cfg.model.dropout_rates()
    if any(rates.values()):
        checkpointing += ", dropout " + ", ".join(f"{k} {v:g}" for k, v in rates.items())
    print(
        f"training {cfg.task} ({args.norm}-norm, {cfg.model.num_layers} layers{checkpointing}) "
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
    stall = stalled(cfg, result.history)  # a run that did not learn says so, and what to try
    if stall is not None:
        print(stall)
    if args.save is not None:
        saved = result.task_model().save(args.save)
        summary["checkpoint"] = str(saved)
        example = TASKS[cfg.task].example(cfg.seq_len, cfg.vocab)
        print(f"saved to {saved}")
        print(f'open it with: python -m encoder trace --checkpoint {saved} "{example}"')
    if args.json:
        print(json.dumps(summary))
    return 0


def _compare_placements(cfg: TrainConfig, args: argparse.Namespace) -> int:
    """Train each dropout placement in lockstep; a table of the results and what they showed."""
    rate = args.dropout or DEFAULT_DROPOUT_RATE
    print(
        f"training {cfg.task} ({args.norm}-norm, {cfg.model.num_layers} layers) for {cfg.steps} "
        f"steps with dropout {rate:g} in each placement"
    )
    job = placement_job(cfg, rate)
    with torch_threads(args.threads):
        while job.running:
            job.advance(seconds=60)
    print(f"{'placement':<22} {'held-out acc':>12} {'sequences':>10} {'final loss':>10} {'s':>6}")
    for name, result in job.results.items():
        print(
            f"{name:<22} {result.held_out_accuracy:>12.4f} "
            f"{result.held_out_sequence_accuracy:>10.4f} {result.final_loss:>10.4f} "
            f"{result.seconds:>6.1f}"
        )
    print(placement_findings(job.results))
    if args.json:
        print(json.dumps({name: r.summary() for name, r in job.results.items()}))
    return 0
