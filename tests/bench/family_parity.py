"""Every encoder family against transformers, as a table: the largest difference on the real
tokens of a padded batch, of the attention (every layer), of the hidden states and of the output.

Run from the repo root: `python tests/bench/family_parity.py [--device cuda:0]`. Builds each
family's tiny random checkpoint (tests/encoder/family_checkpoints.py: randomised norms and
biases, a tokenizer of the family's kind) in a temporary directory, offline, loads it with our
loaders and with transformers (eager attention, float32), and runs both on the same batch.
tests/encoder/test_families.py asserts the same differences under 1e-5.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from encoder.io.checkpoints import load_checkpoint  # noqa: E402
from tests.encoder.family_checkpoints import (  # noqa: E402
    CASES,
    build_checkpoint,
    largest_differences,
    run_both,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda:0, ...")
    device = parser.parse_args().device
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers.utils import logging

    logging.set_verbosity_error()  # the pretraining heads each loader leaves out
    print(f"| case (family) | attention | hidden states | output |  on {device}")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for case, (family, overrides, name) in CASES.items():
            directory = build_checkpoint(family, Path(folder) / case, **overrides)
            differences = largest_differences(
                run_both(directory, load_checkpoint(directory), device)
            )
            cells = [f"{differences[part]:.1e}" for part in ("attention", "hidden", "output")]
            print(f"| {case} ({name}) | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
