"""`python -m encoder trace TEXT [TEXT ...] [architecture flags] [--pretrained | --checkpoint DIR]`:
one traced forward pass, its shape ledger and a summary of the run."""

from __future__ import annotations

import argparse
import time

import pandas as pd

from encoder.cli.model import prepare_run
from encoder.cli.options import add_model_options
from encoder.core.capture import Trace
from encoder.core.model import TransformerEncoder
from encoder.inspect.ledger import cost_summary, shape_ledger
from encoder.io.tokenize import TokenizedBatch
from encoder.measure.timing import synchronize

PRINTED_COLUMNS = ["layer", "operation", "hook", "input_shape", "output_shape", "params", "flops"]


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """`trace TEXT [TEXT ...] [architecture options] [--pretrained] [--device D]`."""
    parser = subparsers.add_parser(
        "trace",
        help="run text through an encoder; print the shape ledger and the run's costs",
        description="Run sentences through an encoder as one padded batch and print every "
        "operation's shapes, parameters and FLOPs, then a summary of the run.",
    )
    add_model_options(parser)
    parser.set_defaults(run=run)


def timed_trace(model: TransformerEncoder, batch: TokenizedBatch) -> tuple[Trace, float]:
    """Trace the batch (after one warm-up pass); return the trace and its time in ms."""
    input_ids = batch.input_ids.to(model.device)
    attention_mask = batch.attention_mask.to(model.device)
    model.trace(input_ids, attention_mask)  # warm-up: first calls pay one-off set-up costs
    synchronize(model.device)
    start = time.perf_counter()
    trace = model.trace(input_ids, attention_mask)
    synchronize(model.device)
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


def run(args: argparse.Namespace) -> int:
    """Check the options and bounds, run one traced forward pass, print ledger and summary."""
    chosen, batch, model = prepare_run(args)
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
