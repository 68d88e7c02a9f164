"""A run that is not learning says so from its curve (encoder.train.stall), with the step since
which its loss is flat and the task's chance level; a run that learns never does."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from encoder.cli import main
from encoder.tasks.tasks import TASKS, guessing_accuracy
from encoder.train.config import TRAIN_MODEL, TrainConfig
from encoder.train.stall import FLAT_STEPS, LEARNED_ACCURACY, SMOOTHING, stalled
from encoder.train.trainer import train

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = dict(
    model=replace(TRAIN_MODEL, num_layers=1, d_model=32, num_heads=2, d_ff=64),
    batch_size=64,
    held_out_examples=200,
)


def rows(losses: list[float], accuracy: float = 0.1) -> list[dict[str, float]]:
    return [{"step": i + 1, "loss": x, "accuracy": accuracy} for i, x in enumerate(losses)]


def flat_since(losses: list[float]) -> int:
    """The reference: the step at which the first 10-step mean within 10 % of the lowest ends."""
    means = [sum(losses[i - SMOOTHING : i]) / SMOOTHING for i in range(SMOOTHING, len(losses) + 1)]
    return SMOOTHING + next(i for i, m in enumerate(means) if m <= min(means) / 0.9)


@pytest.mark.parametrize(("seq_len", "vocab"), [(8, 10), (16, 5), (5, 3)])
def test_chance_is_what_guessing_each_positions_commonest_answer_scores(seq_len, vocab) -> None:
    p = 1 / vocab
    # how many times a token occurs: 1 + Binomial(T - 1, p); the commonest count is every
    # position's guess
    counts = [math.comb(seq_len - 1, k - 1) * p ** (k - 1) * (1 - p) ** (seq_len - k)
              for k in range(1, seq_len + 1)]  # fmt: skip
    expected = {
        "reverse": 1 / vocab,
        "shift": (1 + (seq_len - 1) / vocab) / seq_len,  # position 0 is always 'none'
        "histogram": max(counts),
    }
    for task, chance in expected.items():
        assert guessing_accuracy(task, seq_len, vocab) == pytest.approx(chance, abs=0.01)
    sort = guessing_accuracy("sort", seq_len, vocab)  # the ends of a sorted row are guessable
    assert 1 / vocab < sort < 1
    assert set(expected) | {"sort", "masked"} == set(TASKS)  # masked: test_masked_task


def test_a_flat_curve_is_said_as_soon_as_it_has_been_flat_for_the_set_steps() -> None:
    cfg = TrainConfig(task="reverse")
    losses = [2.3 - 0.6 * min(i, 20) / 20 for i in range(200)]  # falls to 1.7 by step 21, then flat
    since = flat_since(losses)
    assert 15 <= since <= 25
    first = since + FLAT_STEPS
    assert stalled(cfg, rows(losses[: first - 1], 0.3)) is None  # not yet
    stall = stalled(cfg, rows(losses[:first], 0.3))
    assert stall is not None and (stall.since, stall.step) == (since, first)
    assert stall.loss == pytest.approx(1.7) and stall.chance == 0.1 and not stall.at_chance
    assert str(stall.said) == (
        f"This run is not learning: the loss has been flat at 1.7 since step {since}, with the "
        "accuracy at 0.3 (guessing without reading the input scores 0.1 on the reverse task)."
    )
    assert stall.said.values["since"] == since  # the page tells it in the reader's language


def test_at_chance_it_says_so_with_the_tasks_own_chance() -> None:
    cfg = TrainConfig(task="histogram")
    chance = guessing_accuracy("histogram", 8, 10)  # about 0.48: most tokens occur once
    stall = stalled(cfg, rows([1.4] * 80, accuracy=chance))
    assert stall is not None and stall.at_chance and stall.since == SMOOTHING
    assert f"the accuracy, {round(chance, 2)}, is about what guessing" in stall.said
    assert stalled(cfg, rows([1.4] * 80, accuracy=LEARNED_ACCURACY)) is None  # flat, but learned
    below = stalled(TrainConfig(task="sort"), rows([2.3] * 80, accuracy=0.1))  # uniform guesses
    assert (
        not below.at_chance
        and "with the accuracy at 0.1 (guessing without reading the "
        "input scores 0.34 on the sort task)"
        in below.said
    )


def test_a_falling_or_rising_curve_or_one_in_its_warmup_is_not_flat() -> None:
    cfg = TrainConfig(task="reverse")
    assert stalled(cfg, rows([2.3 * 0.99**i for i in range(300)])) is None  # falls all along
    assert stalled(cfg, rows([1.0 + 0.01 * i for i in range(300)])) is None  # rises
    warm = TrainConfig(task="reverse", warmup_steps=100)
    flat = rows([2.3] * (100 + FLAT_STEPS))
    assert stalled(warm, flat) is None  # flat during warmup does not count
    stall = stalled(warm, flat + rows([2.3]))
    assert stall is not None and stall.since == 101


def test_what_to_try_follows_the_runs_settings() -> None:
    post = TrainConfig(task="reverse", lr=3e-3).with_model(norm_first=False, positional="learned")
    said = [str(t) for t in stalled(post, rows([2.3] * 80)).tries]
    assert said[0].startswith("Try pre-norm")
    assert "Try a warmup of 60 steps." in said
    assert "Try a smaller learning rate: 0.001 instead of 0.003." in said
    pre = TrainConfig(task="reverse", warmup_steps=40, lr=1e-2).with_model(positional="sinusoidal")
    said = [str(t) for t in stalled(pre, rows([2.3] * 100)).tries]
    assert said == ["Try a smaller learning rate: 0.003 instead of 0.01."]  # it has a warmup
    slow = TrainConfig(task="reverse", lr=1e-4).with_model(positional="rope")
    said = [str(t) for t in stalled(slow, rows([2.3] * 80)).tries]
    assert said == ["Try a larger learning rate: 0.0003 instead of 0.0001."]  # no warmup: slower


def test_a_run_that_cannot_move_is_said_not_to_learn_with_its_numbers() -> None:
    cfg = TrainConfig(task="reverse", steps=SMOOTHING + FLAT_STEPS, lr=1e-7, **SMALL)
    result = train(cfg)
    losses = [row["loss"] for row in result.history]
    stall = stalled(cfg, result.history)
    assert stall is not None and stall.since == flat_since(losses) == SMOOTHING
    assert stall.at_chance and stall.chance == 0.1  # reversing 10 symbols: 1 in 10
    mean = sum(losses[-SMOOTHING:]) / SMOOTHING
    assert stall.loss == pytest.approx(mean) and stall.said.values["loss"] == round(mean, 2)


def test_a_run_that_learns_is_never_said_not_to_learn() -> None:
    cfg = TrainConfig(task="shift", steps=120, lr=1e-2, **SMALL)
    result = train(cfg)
    assert result.held_out_accuracy >= LEARNED_ACCURACY
    assert all(stalled(cfg, result.history[:step]) is None for step in range(1, 121))


def test_the_command_line_says_it_too(capsys) -> None:
    steps = str(SMOOTHING + FLAT_STEPS)
    args = ["train", "--layers", "1", "--steps", steps, "--lr", "1e-7", "--threads", "1"]
    assert main(args) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("This run is not learning: the loss has been flat at ")
    assert f" since step {SMOOTHING}, and the accuracy" in last  # at chance: 0.1
    assert last.endswith("Try a larger learning rate: 3e-07 instead of 1e-07.")
