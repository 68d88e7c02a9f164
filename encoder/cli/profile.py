"""`python -m encoder profile TEXT [TEXT ...] [architecture flags] [--budget S] [--json]`: time
per operation, scaling with length, training memory and gradient norms, within a time budget."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

import pandas as pd

from encoder.cli.model import prepare_run
from encoder.cli.options import add_model_options, add_threads_option, check_threads
from encoder.measure.cost import CostReport, CostSettings, cost_report
from encoder.measure.gradients import LOSS, WEIGHTS
from encoder.measure.timing import CLOCK_NAMES, clock_kind
from encoder.train.trainer import torch_threads


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """`profile TEXT [TEXT ...] [architecture options] [--pretrained] [--device D] [--json]`."""
    parser = subparsers.add_parser(
        "profile",
        help="measure time per operation, scaling with length, training memory, gradient norms",
        description="Measure, on this machine, each operation's time in a forward pass of the "
        "sentences, how the time grows with the number of tokens, what training keeps for "
        "backward with and without gradient checkpointing (pre- and post-norm), and the "
        "gradient norms at initialisation against Xiong et al. 2020.",
    )
    add_model_options(parser)
    parser.add_argument(
        "--budget",
        type=float,
        default=CostSettings().budget_s,
        metavar="SECONDS",
        help="about how long all measures may take together (default %(default)s)",
    )
    add_threads_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


Column = tuple[str, str, str]  # (key in the rows, header, format)


def _table(rows: list[dict], columns: list[Column]) -> str:
    """Rows as a plain-text table of the given columns, each value in its column's format."""
    frame = pd.DataFrame([{header: fmt.format(row[key]) for key, header, fmt in columns}
                          for row in rows])  # fmt: skip
    return frame.to_string(index=False)


OPERATION_COLUMNS = [("operation", "operation", "{}"), ("ms", "ms", "{:.3f}"),
                     ("time_share", "time", "{:.1%}"), ("flop_share", "FLOPs", "{:.1%}"),
                     ("gflops_per_s", "GFLOP/s", "{:.1f}")]  # fmt: skip

SCALING_COLUMNS = [("tokens", "tokens", "{}"), ("ms", "ms", "{:.2f}"),
                   ("attention_flops", "attention FLOPs (n^2)", "{:,}"),
                   ("ffn_flops", "feed-forward FLOPs", "{:,}")]  # fmt: skip

MEMORY_COLUMNS = [("norm", "norm", "{}"), ("saved_bytes", "saved bytes", "{:,}"),
                  ("saved_bytes_checkpointed", "checkpointed", "{:,}"),
                  ("ms", "forward+backward ms", "{:.1f}"),
                  ("ms_checkpointed", "checkpointed ms", "{:.1f}")]  # fmt: skip

GRADIENT_COLUMNS = [("layer", "layer", "{}")] + [(w, w, "{:.4f}") for w in WEIGHTS]

DEPTH_COLUMNS = [("layers", "layers", "{}"), ("pre", "pre", "{:.4f}"), ("post", "post", "{:.4f}")]


def format_profile(report: CostReport, description: str) -> list[str]:
    """The report as readable lines: one section per measure, tables where there are rows."""
    ops, scaling, slowest = report.ops, report.scaling, report.ops.slowest()
    exponents, by_operation = scaling.exponents, ops.by_operation()
    slowest_kind = ops.slowest_operation()
    operations = [
        row | {"operation": row["operation"] + ("" if row["measured"] else " *")}
        for row in by_operation
    ]
    memory = [{"norm": norm} | m.to_dict() for norm, m in report.train_memory.items()]
    lines = [
        f"model: {description}",
        f"device: {report.device}, batch {report.batch[0]} x {report.batch[1]} tokens, "
        f"measured in {report.seconds:.1f} s; times are {CLOCK_NAMES[clock_kind(report.device)]}",
        "",
        f"forward pass: {ops.total_ms:.2f} ms (median of {ops.repeats}); the operations' "
        f"times add up to {ops.ops_ms:.2f} ms ({ops.ops_over_total:.0%})",
        f"slowest operation: {slowest_kind['operation']}, {slowest_kind['ms']:.3f} ms in all "
        f"layers ({slowest_kind['time_share']:.0%} of the time, {slowest_kind['flop_share']:.0%} "
        f"of the FLOPs); in one layer: {slowest.name}, {slowest.ms:.3f} ms",
        "time per operation, all layers together (* = time split by FLOPs with its neighbours):",
        _table(operations, OPERATION_COLUMNS),
        "",
        "scaling: one sentence of n random tokens",
        _table([asdict(point) for point in scaling.points], SCALING_COLUMNS),
        f"time grows like n^{exponents['ms']:.2f} over these lengths (n^"
        f"{exponents['ms_longest']:.2f} between the two longest); attention's FLOPs overtake "
        f"the feed-forward's at n = {scaling.crossover_tokens:,} tokens",
        "",
        "training memory: bytes autograd saves for backward in one forward pass of this batch",
        _table(memory, MEMORY_COLUMNS),
        "",
        f"gradient norms at initialisation; loss: {LOSS}",
    ]
    for norm, rows in report.grad_norms.items():
        lines += [f"{norm}-norm:", _table(rows, GRADIENT_COLUMNS)]
    lines += [
        "the last layer's W2 gradient by depth:",
        _table(report.last_w2_by_depth, DEPTH_COLUMNS),
        "",
        "against Xiong et al. 2020:",
        *(f"- {finding.sentence()}" for finding in report.findings),
    ]
    return lines


def run(args: argparse.Namespace) -> int:
    """Measure the model's costs within the budget; print them as tables, or as one JSON object."""
    if not args.budget > 0:
        raise ValueError(f"--budget {args.budget} must be a positive number of seconds")
    check_threads(args)
    chosen, batch, model = prepare_run(args)
    ids, mask = (t.to(model.device) for t in (batch.input_ids, batch.attention_mask))
    with torch_threads(args.threads):
        report = cost_report(model, ids, mask, CostSettings(budget_s=args.budget))
    if args.json:
        print(json.dumps({"model": chosen.description, **report.to_dict()}))
    else:
        print("\n".join(format_profile(report, chosen.description)))
    return 0
