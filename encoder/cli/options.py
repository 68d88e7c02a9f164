"""The flags several commands share: the architecture flags, built from the option table
(encoder.core.options), how trace and profile choose a model, and --threads."""

from __future__ import annotations

import argparse

from encoder.core.config import DROPOUT_PLACES, EncoderConfig
from encoder.core.options import OPTIONS, ArchOption, key_values


def add_architecture_option(
    parser: argparse.ArgumentParser, option: ArchOption, shown: object, **settings: object
) -> None:
    """The option's flag: one of its choices (named options) or a whole number, its help saying
    the default `shown`; `settings` go to add_argument (e.g. the parser's own default)."""
    typed = {"choices": option.choices} if option.named else {"type": int}
    parser.add_argument(option.flag, help=f"{option.help} (default {shown})", **typed, **settings)


CHECKPOINT_HELP = (
    "a checkpoint directory (a Hugging Face encoder, or saved by `train --save`), or the name of "
    "a model in ENCODER_EXPLORER_MODELS or the Hugging Face cache, such as FacebookAI/roberta-base"
)


def add_model_options(parser: argparse.ArgumentParser, *, sentences: bool = True) -> None:
    """TEXT (unless `sentences` is False: the command names its own), the architecture options,
    --device, and --pretrained or --checkpoint DIR: how the commands that run text through an
    encoder (trace, profile, embed, patch) choose it."""
    if sentences:
        parser.add_argument(
            "sentences", nargs="+", metavar="TEXT", help="one sentence per argument"
        )
    defaults = key_values(EncoderConfig()) | {"d_ff": "4 x d-model"}
    for option in OPTIONS:
        add_architecture_option(parser, option, defaults[option.key])
    parser.add_argument("--device", default="cpu", help="cpu, cuda:N or mps (default cpu)")
    weights = parser.add_mutually_exclusive_group()
    weights.add_argument(
        "--pretrained",
        action="store_true",
        help="use the bundled all-MiniLM-L6-v2 weights instead of random ones",
    )
    weights.add_argument(
        "--checkpoint",
        metavar="DIR|NAME",
        help=f"{CHECKPOINT_HELP}; a task model saved here reads each TEXT as one sequence of the "
        'task\'s symbols, e.g. "3 1 4 1 5 9 2 6"',
    )


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=int,
        help="CPU threads for torch (default: torch's choice, one per core); 1 is barely slower "
        "for these tiny models and far faster when other programs busy the cores",
    )


def check_threads(args: argparse.Namespace) -> None:
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads {args.threads} must be at least 1")


DROPOUT_HELP = {
    "attention": "the attention weights after the softmax",
    "residual": "each sublayer's output before its residual add",
    "ffn": "the feed-forward's hidden layer",
}


def add_dropout_options(parser: argparse.ArgumentParser) -> None:
    """--dropout P (torch's places) and a flag per place with its own rate."""
    parser.add_argument(
        "--dropout", type=float, default=0.0, metavar="P",
        help="dropout rate in torch's places (embeddings, attention weights, sublayer outputs, "
        "feed-forward hidden layer; default 0)",
    )  # fmt: skip
    for place in DROPOUT_PLACES:
        parser.add_argument(
            f"--{place}-dropout", type=float, metavar="P",
            help=f"dropout rate on {DROPOUT_HELP[place]} (default: --dropout's)",
        )  # fmt: skip


def dropout_settings(args: argparse.Namespace) -> dict[str, float | None]:
    """The dropout fields of EncoderConfig from the flags."""
    own = {f"{place}_dropout": getattr(args, f"{place}_dropout") for place in DROPOUT_PLACES}
    return {"dropout": args.dropout, **own}
