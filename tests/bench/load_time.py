"""How long load_pretrained takes to read a BERT-base-size checkpoint (about 110M parameters) from
disk: the target is 3 s or less here.

Run from the repo root: `python tests/bench/load_time.py [--repeats 5] [--layers 12]`. Builds a
random BertModel of BERT-base's shape (hidden 768, 12 heads, intermediate 3072, vocabulary
30522) with transformers, saves it with save_pretrained (safetensors, float32) and a WordPiece
tokenizer.json into a temporary directory, then times `load_pretrained(directory)` `repeats`
times (each a fresh read of the files: config, weights, tokenizer, the model built and filled)
and prints the median and the range, with the peak resident memory of the process that loads
(the checkpoint is built in another process, so that transformers' model is not counted). The
first load also checks that the weights arrived (the token embeddings equal the file's).
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402

from encoder.io.checkpoints import load_pretrained  # noqa: E402
from tests.encoder.family_checkpoints import wordpiece_tokenizer  # noqa: E402

BERT_BASE = {
    "vocab_size": 30522,
    "hidden_size": 768,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
}


def build_bert_base(directory: Path, layers: int) -> None:
    """A random BERT-base-size checkpoint in `directory`."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    config = transformers.BertConfig(**BERT_BASE, num_hidden_layers=layers)
    model = transformers.BertModel(config)
    model.save_pretrained(directory)
    wordpiece_tokenizer().save(str(directory / "tokenizer.json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        builder = multiprocessing.get_context("spawn").Process(
            target=build_bert_base, args=(directory, args.layers)
        )
        builder.start()
        builder.join()
        size = sum(path.stat().st_size for path in directory.iterdir())
        times = []
        for repeat in range(args.repeats):
            started = time.perf_counter()
            model, _ = load_pretrained(directory)
            times.append(time.perf_counter() - started)
            if repeat == 0:
                parameters = sum(parameter.numel() for parameter in model.parameters())
                print(f"checkpoint: {parameters / 1e6:.1f}M parameters, {size / 1e6:.0f} MB")
                with safe_open(directory / "model.safetensors", "pt") as weights:
                    expected = weights.get_tensor("embeddings.word_embeddings.weight")
                assert torch.equal(model.embed.token.weight, expected)
            del model
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB -> MB (Linux)
        print(
            f"load_pretrained: median {statistics.median(times):.2f} s "
            f"(min {min(times):.2f}, max {max(times):.2f}, {args.repeats} loads); "
            f"peak resident memory {peak:.0f} MB; torch threads {torch.get_num_threads()}"
        )


if __name__ == "__main__":
    main()
