"""Each toy task's labels against a plain-Python answer."""

from __future__ import annotations

import pytest
import torch

from encoder.tasks.tasks import TASKS, get_task


def reverse_answer(seq: list[int], vocab: int) -> list[int]:
    return [seq[len(seq) - 1 - i] for i in range(len(seq))]


def sort_answer(seq: list[int], vocab: int) -> list[int]:
    return sorted(seq)


def histogram_answer(seq: list[int], vocab: int) -> list[int]:
    return [seq.count(token) for token in seq]


def shift_answer(seq: list[int], vocab: int) -> list[int]:
    return [vocab] + seq[:-1]


ANSWERS = {
    "reverse": reverse_answer,
    "sort": sort_answer,
    "histogram": histogram_answer,
    "shift": shift_answer,
}


def test_every_symbol_task_has_a_plain_python_answer_here() -> None:  # masked: test_masked_task
    assert {name for name, task in TASKS.items() if not task.reads_words} == set(ANSWERS)


@pytest.mark.parametrize("name", sorted(ANSWERS))
@pytest.mark.parametrize(("seq_len", "vocab"), [(8, 10), (5, 3), (12, 4)])
def test_targets_match_plain_python(name: str, seq_len: int, vocab: int) -> None:
    task = get_task(name)
    inputs, targets = task.sample(64, seq_len, vocab, torch.Generator().manual_seed(1))
    assert inputs.shape == targets.shape == (64, seq_len)
    assert inputs.dtype == targets.dtype == torch.long
    assert inputs.min() >= 0 and inputs.max() < vocab
    for seq, target in zip(inputs.tolist(), targets.tolist(), strict=True):
        assert target == ANSWERS[name](seq, vocab)
    assert targets.min() >= 0 and targets.max() < task.num_classes(seq_len, vocab)


def test_a_worked_example_of_each_task() -> None:
    seq = torch.tensor([[3, 1, 3, 0]])
    assert TASKS["reverse"].targets(seq, 5).tolist() == [[0, 3, 1, 3]]
    assert TASKS["sort"].targets(seq, 5).tolist() == [[0, 1, 3, 3]]
    assert TASKS["histogram"].targets(seq, 5).tolist() == [[2, 1, 2, 1]]
    assert TASKS["shift"].targets(seq, 5).tolist() == [[5, 3, 1, 3]]
    assert TASKS["shift"].class_name(5, 5) == "none"


def test_same_generator_seed_gives_same_batch_and_streams_differ() -> None:
    task = get_task("sort")
    a = task.sample(16, 8, 10, torch.Generator().manual_seed(7))
    b = task.sample(16, 8, 10, torch.Generator().manual_seed(7))
    c = task.sample(16, 8, 10, torch.Generator().manual_seed(8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_unknown_task_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"task='nope'.*reverse"):
        get_task("nope")
