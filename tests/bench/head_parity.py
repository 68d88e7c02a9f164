"""Every family's masked-LM head against transformers, as a table: the largest difference of the
logits on the real tokens of a padded batch, and of the lens's log-probabilities at every layer.

Run from the repo root: `python tests/bench/head_parity.py [--device cuda:0]`. Builds each case's
tiny random *ForMaskedLM (tests/encoder/head_checkpoints.py: randomised norms and biases, the
decoder tied to the word embeddings or not) in a temporary directory, offline, loads it with our
loaders and with transformers (eager attention, float32), and runs both on the same batch.
tests/encoder/test_masked.py asserts the same differences under 1e-5.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from encoder.io.checkpoints import load_checkpoint  # noqa: E402
from tests.encoder.family_checkpoints import MASKED_LM, build_checkpoint  # noqa: E402
from tests.encoder.head_checkpoints import HEAD_CASES, head_differences, head_run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda:0, ...")
    device = parser.parse_args().device
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers.utils import logging

    logging.set_verbosity_error()
    print(f"| case | family | decoder | logits | lens (log-probabilities) |  on {device}")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for case, (family, overrides) in HEAD_CASES.items():
            directory = build_checkpoint(
                family, Path(folder) / case, model_class=MASKED_LM[family], **overrides
            )
            checkpoint = load_checkpoint(directory)
            differences = head_differences(head_run(directory, checkpoint, device))
            decoder = "tied" if checkpoint.mlm_head.cfg.tied else "untied"
            cells = [f"{differences[part]:.1e}" for part in ("logits", "lens")]
            print(f"| {case} | {checkpoint.family} | {decoder} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
