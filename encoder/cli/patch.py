"""`python -m encoder patch --clean TEXT --corrupted TEXT [--pretrained | --checkpoint DIR]
[--metric cosine|mask|task] [--json]`: activation patching (encoder.inspect.patching): how much
of the clean sentence's output comes back when one piece of its state is copied into the
corrupted sentence's run, for every layer and token (the residual stream, each block's attention
and feed-forward output) and every head. Unequal token counts, the same sentence twice or a
metric the model cannot give exit 2 with a sentence."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from encoder.cli.model import model_directory, prepare_run
from encoder.cli.options import add_model_options
from encoder.inspect.masked import mask_token_of
from encoder.inspect.patching import GRIDS, METRICS, metric_named, patch
from encoder.inspect.similarity import pooling_of


def add_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "patch",
        help="copy the clean sentence's state into the corrupted one, piece by piece, and see "
        "how much of the clean output comes back",
        description="Activation patching on two sentences of the same token count: for every "
        "layer and token (and every head) the effect of restoring the clean run's state in the "
        "corrupted run, 0 the corrupted output and 1 the clean one.",
    )
    parser.add_argument("--clean", required=True, metavar="TEXT", help="the clean sentence")
    parser.add_argument(
        "--corrupted", required=True, metavar="TEXT", help="the same sentence, a word changed"
    )
    add_model_options(parser, sentences=False)
    parser.add_argument(
        "--metric",
        choices=METRICS,
        default="cosine",
        help="cosine: the sentence embedding's cosine with the clean one (default); mask: the "
        "logit difference of the clean and corrupted top word at the first mask (a checkpoint "
        "with a masked-LM head); task: the clean run's classes' logits (a task model)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    for name in ("clean", "corrupted"):
        if not getattr(args, name).strip():
            raise ValueError(f"the {name} sentence is empty: give it some words")
    args.sentences = [args.clean, args.corrupted]
    chosen, batch, model = prepare_run(args)
    checkpoint, tokens = chosen.checkpoint, batch.tokens[0]
    if args.metric == "mask" and checkpoint is not None and checkpoint.mlm_head is None:
        raise ValueError(checkpoint.no_head)
    metric = metric_named(
        args.metric,
        pooling=pooling_of(model_directory(args)),
        lm_head=checkpoint.mlm_head.to(args.device) if checkpoint and checkpoint.mlm_head else None,
        classifier=chosen.task_model.classifier.head if chosen.task_model else None,
        tokens=tokens,
        mask_token=mask_token_of(chosen.tokenizer) if args.metric == "mask" else None,
    )
    clean, corrupted = (
        ids[:length] for ids, length in zip(batch.input_ids, batch.lengths, strict=True)
    )
    result = patch(model, clean, corrupted, metric, tokens)
    if args.json:
        print(json.dumps(result.to_json()))
        return 0
    print(f"model: {chosen.description}")
    print(f"{result.metric}: clean {result.clean:.4f}, corrupted {result.corrupted:.4f}")
    for grid in GRIDS:
        values = getattr(result, grid)
        columns = range(values.shape[1]) if grid == "heads" else tokens
        print(f"\n{grid}: {result.said[grid]}")
        print(pd.DataFrame(values, columns=list(columns)).round(2).to_string())
    return 0
