"""`python -m encoder embed LINE [LINE ...] [--pretrained | --checkpoint DIR] [--layer N] [--json]`:
each line's sentence embedding, pooled the model's way (encoder.inspect.similarity), and the
cosine of every pair."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from encoder.cli.model import model_directory, prepare_run
from encoder.cli.options import add_model_options
from encoder.inspect.similarity import cosine_matrix, pooled, pooling_of, states_at


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """`embed LINE [LINE ...] [architecture options] [--pretrained] [--layer N] [--json]`."""
    parser = subparsers.add_parser(
        "embed",
        help="each sentence's embedding, pooled as the model says, and every pair's cosine",
        description="Embed sentences with the model's own pooling (its sentence-transformers "
        "config where it has one, else mean over real tokens) and print how alike each pair is.",
    )
    add_model_options(parser)
    parser.add_argument(
        "--layer",
        type=int,
        metavar="N",
        help="pool the residual stream after block N instead (0: the embeddings' output; the "
        "last block: the output, after the final norm where the model has one; default: the "
        "output)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    for number, line in enumerate(args.sentences, start=1):
        if not line.strip():
            raise ValueError(f"sentence {number} is empty: give it some words")
    chosen, batch, model = prepare_run(args)
    layers = chosen.cfg.num_layers
    depth = layers if args.layer is None else args.layer
    if not 0 <= depth <= layers:
        raise ValueError(
            f"--layer {args.layer} is outside 0..{layers}: this model has {layers} blocks"
        )
    pooling = pooling_of(model_directory(args))
    mask = batch.attention_mask.to(model.device)
    trace = model.trace(batch.input_ids.to(model.device), mask)
    embeddings = pooled(states_at(trace, depth), mask, pooling).cpu()
    similarity = cosine_matrix(embeddings)
    if args.json:
        found = {"pooling": pooling.mode, "normalized": pooling.normalized}
        found |= {"embeddings": embeddings.tolist(), "similarity": similarity.tolist()}
        print(json.dumps(found))
        return 0
    where = "the output" if depth == layers else f"the stream after block {depth}"
    print(f"model: {chosen.description}")
    print(f"pooling: {pooling.why}")
    print(f"{len(args.sentences)} embeddings of {embeddings.shape[1]} numbers, at {where}")
    names = [f"{i}: {line[:40]}" for i, line in enumerate(args.sentences, start=1)]
    table = pd.DataFrame(similarity.numpy(), index=names, columns=range(1, len(names) + 1))
    print("cosine similarity:")
    print(table.round(3).to_string())
    return 0
