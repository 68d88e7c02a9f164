"""`python -m encoder fill "TEXT WITH [MASK]" --checkpoint DIR [--top K] [--json]`: the words a
checkpoint's masked-LM head predicts at each mask, and the lens: the best words after each
block (encoder.inspect.masked). A checkpoint without a head is refused with why (exit 2)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from encoder.cli.options import CHECKPOINT_HELP
from encoder.core.model import available_devices
from encoder.inspect.masked import MaskFill, fill
from encoder.io.checkpoints import load_checkpoint
from encoder.io.finder import checkpoint_path


def add_command(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fill",
        help="predict the masked words of a sentence, and see them form layer by layer",
        description="Predict the word at each mask token ([MASK], or <mask> for RoBERTa, XLM-R "
        "and CamemBERT) with the checkpoint's masked-LM head, at the output and after each block.",
    )
    parser.add_argument("text", metavar="TEXT", help="a sentence with the model's mask token")
    parser.add_argument("--checkpoint", required=True, metavar="DIR|NAME", help=CHECKPOINT_HELP)
    parser.add_argument("--top", type=int, default=5, metavar="K", help="words per mask (5)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda:N or mps (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def _words(words) -> str:
    return ", ".join(f"{word.token} {word.probability:.3f}" for word in words)


def format_fills(fills: list[MaskFill]) -> list[str]:
    """Each mask's prediction, then its best words after each block."""
    lines = []
    for index, mask in enumerate(fills, start=1):
        lines.append(f"mask {index} (token {mask.position}): {_words(mask.top)}")
        lines += [
            f"  after block {layer}: {_words(words)}" for layer, words in enumerate(mask.by_layer)
        ]
    return lines


def run(args: argparse.Namespace) -> int:
    if args.device not in available_devices():
        raise ValueError(
            f"device {args.device!r} is not available here; use one of {available_devices()}"
        )
    checkpoint = load_checkpoint(checkpoint_path(args.checkpoint))
    if checkpoint.mlm_head is None:
        raise ValueError(checkpoint.no_head)
    model, head = checkpoint.encoder.to(args.device), checkpoint.mlm_head.to(args.device)
    fills = fill(model, head, checkpoint.tokenizer, args.text, args.top)
    if args.json:
        masks = [
            {"position": m.position, "top": [asdict(w) for w in m.top],
             "by_layer": [[asdict(w) for w in words] for words in m.by_layer]}
            for m in fills
        ]  # fmt: skip
        print(json.dumps({"masks": masks}))
    else:
        print("\n".join(format_fills(fills)))
    return 0
