"""The pair a page patches by default (one_word_changed), the lesson's question about it
(deciding_token) and patch()'s progress: checked against the grids and the tokenizer."""

from __future__ import annotations

import numpy as np
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.inspect.patching import deciding_token, metric_named, one_word_changed, patch
from encoder.io.tokenize import load_tokenizer

LESSON = "The animal didn't cross the street because it was too tired."


def count(text: str) -> int:
    return len(load_tokenizer().encode(text).ids)


def test_the_lessons_sentence_changes_tired_to_wide_and_says_so() -> None:
    changed, said = one_word_changed(LESSON, count)
    assert changed == LESSON.replace("tired", "wide")
    assert str(said) == "“tired” changed to “wide”"
    assert one_word_changed(changed, count)[0] == LESSON  # and back


def test_another_sentence_changes_one_word_keeping_its_token_count() -> None:
    text = "I went to the bank to deposit my money."
    changed, said = one_word_changed(text, count)
    before, after = text.split(), changed.split()
    assert count(changed) == count(text) and len(before) == len(after)
    assert sum(a != b for a, b in zip(before, after, strict=True)) == 1
    assert "money" in str(said)  # its last content word
    assert one_word_changed("a b c", count) is None  # no word of three letters: nothing to swap


def test_the_question_is_the_middle_layers_leading_token() -> None:
    residual = np.zeros((7, 4))
    residual[3] = [0.1, 0.2, 0.9, 0.3]  # layer 3 = (7 - 1) // 2
    residual[0] = [1.0, 0, 0, 0]  # another layer's leader is not the answer
    tokens = ["[CLS]", "it", "tired", "[SEP]"]
    asked = deciding_token(residual, tokens)
    assert asked.truth == "2: tired" and asked.value == 0.9
    assert "“it”" in str(asked.question) and "layer 3" in str(asked.question)
    assert str(asked.explain("2: tired")).startswith("Right: restoring the stream of “tired”")
    wrong = str(asked.explain("1: it"))
    assert wrong.startswith("Not quite:") and wrong.endswith("your “it” brings back 0.20.")
    assert str(asked.explain("")).startswith("You skipped:")


def test_patch_tells_its_progress_and_computes_the_same_grids() -> None:
    cfg = EncoderConfig(vocab_size=50, d_model=16, num_heads=2, num_layers=2, d_ff=32, seed=3)
    model = TransformerEncoder(cfg).eval()
    clean, corrupted = torch.tensor([1, 5, 7, 2]), torch.tensor([1, 5, 9, 2])
    metric, tokens = metric_named("cosine"), ["a", "b", "c", "d"]
    heard = []
    told = patch(
        model, clean, corrupted, metric, tokens, lambda grid, done: heard.append((grid, done))
    )
    assert heard == [("residual", 0.0), ("heads", 0.25), ("attention", 0.5), ("mlp", 0.75)]
    plain = patch(model, clean, corrupted, metric, tokens)
    for grid in ("residual", "heads", "attention", "mlp"):
        np.testing.assert_array_equal(getattr(told, grid), getattr(plain, grid))
