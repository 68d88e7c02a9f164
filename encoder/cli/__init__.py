"""Command line: `python -m encoder trace|profile|embed TEXT [options]`, `... train [options]`,
`... fill "TEXT WITH [MASK]" --checkpoint DIR` and `... patch --clean TEXT --corrupted TEXT`.

    python -m encoder train --task reverse --save reverse-model --json
    python -m encoder trace --checkpoint reverse-model "3 1 4 1 5 9 2 6"
    python -m encoder profile "The cat sat." --heads 8 --d-model 512 --layers 6 --json
    python -m encoder embed "A cat sleeps." "A kitten naps." --pretrained --json

One module per command (trace, train, profile, embed, fill, patch), each with
`add_command(subparsers)`, which sets `run`: it takes the parsed arguments and returns the exit
code. The flags they share are in encoder.cli.options, the model trace, profile and embed choose
in encoder.cli.model. A ValueError (a bad configuration, a run too large) becomes a one-line
error and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from encoder.cli import embed, fill, patch, profile, trace, train

USAGE_ERROR = 2

COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (
    trace.add_command,
    train.add_command,
    profile.add_command,
    embed.add_command,
    fill.add_command,
    patch.add_command,
)


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
