"""The task tokenizer: one token per symbol with the ids training used; clear refusals."""

from __future__ import annotations

import pytest
import torch
from tokenizers import Tokenizer

from encoder.tasks.task_tokenizer import UNK, check_task_text, known_symbols, task_tokenizer
from encoder.tasks.tasks import example_sequence, get_task, input_symbols


def test_encodes_symbols_to_the_ids_the_model_was_trained_on() -> None:
    tokenizer = task_tokenizer(10)
    assert isinstance(tokenizer, Tokenizer)
    encoding = tokenizer.encode("3 1 4 1 5 9 2 6")
    assert encoding.ids == [3, 1, 4, 1, 5, 9, 2, 6]
    assert encoding.tokens == ["3", "1", "4", "1", "5", "9", "2", "6"]
    # a batch as training draws it, written out as text, encodes back to the same ids
    inputs, _ = get_task("sort").sample(16, 12, 23, torch.Generator().manual_seed(4))
    wide = task_tokenizer(23)
    for row in inputs.tolist():
        text = " ".join(input_symbols(23)[token] for token in row)
        assert wide.encode(text).ids == row


def test_vocabulary_is_the_symbols_plus_unk_and_nothing_else() -> None:
    tokenizer = task_tokenizer(4)
    assert tokenizer.get_vocab() == {"0": 0, "1": 1, "2": 2, "3": 3, UNK: 4}
    assert known_symbols(tokenizer) == ["0", "1", "2", "3"]
    assert tokenizer.padding is None and tokenizer.truncation is None
    assert tokenizer.encode("2 9").ids == [2, 4]  # unknown: [UNK], outside the model's 0..3


def test_any_whitespace_separates_symbols() -> None:
    assert check_task_text("  3\t1\n4   1 ", task_tokenizer(10), seq_len=4) == [3, 1, 4, 1]


def test_example_sequence_is_readable_by_the_tokenizer() -> None:
    assert example_sequence(8, 10) == "3 1 4 1 5 9 2 6"
    assert example_sequence(5, 3) == "0 1 1 1 2"  # pi's digits modulo 3
    assert len(example_sequence(40, 10).split()) == 40
    assert check_task_text(example_sequence(40, 7), task_tokenizer(7), 40)


@pytest.mark.parametrize(
    ("text", "symbol"),
    [("3 1 4 x", "'x'"), ("3 1 4 10", "'10'"), ("3,1 4 1", "'3,1'"), ("3 1 [UNK] 1", "'[UNK]'")],
)
def test_an_unknown_symbol_is_named_with_the_known_ones(text: str, symbol: str) -> None:
    with pytest.raises(ValueError) as error:
        check_task_text(text, task_tokenizer(10), seq_len=4)
    assert str(error.value) == (
        f"{symbol} is not a symbol this model knows; it reads 0 1 2 3 4 5 6 7 8 9, separated by "
        f"spaces"
    )


def test_a_large_vocabulary_is_summarised_in_the_message() -> None:
    with pytest.raises(ValueError, match=r"it reads 0 1 \.\.\. 49 \(50 symbols\)"):
        check_task_text("7 x", task_tokenizer(50), seq_len=2)


@pytest.mark.parametrize(("text", "count"), [("3 1 4", 3), ("3 1 4 1 5 9 2 6 5", 9), ("", 0)])
def test_a_wrong_length_names_both_lengths(text: str, count: int) -> None:
    with pytest.raises(ValueError) as error:
        check_task_text(text, task_tokenizer(10), seq_len=8)
    assert str(error.value) == (
        f"{count} symbols, but this model was trained on sequences of exactly 8, such as "
        f"'0 1 2 3 4 5 6 7'"
    )
