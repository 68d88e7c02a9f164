"""Exercises by hand: the numbers a student is given, the expected answers (against torch's own
functions), the checks of an answer with their hints, and the parsing of what a student types."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from encoder.exercises.by_hand import AnswerError, draw, number, numbers, parse_answer

SEEDS = range(12)


def test_a_seed_draws_the_same_small_numbers_with_one_decimal() -> None:
    sizes = set()
    for seed in SEEDS:
        first, again = draw(seed), draw(seed)
        assert first == again
        assert 2 <= first.d_k <= 4 and 3 <= first.tokens <= 5
        assert 0 <= first.query < first.tokens and 0 <= first.key < first.tokens
        given = [*first.q, *sum(first.keys, ()), *sum(first.values, ()), *first.vector]
        assert all(round(v, 1) == v and abs(v) <= 3 for v in given)
        assert all(len(row) == first.d_k for row in (*first.keys, *first.values))
        sizes.add((first.d_k, first.tokens))
    assert len(sizes) > 3  # the sizes vary with the seed
    assert draw(0).q != draw(1).q


@pytest.mark.parametrize("seed", SEEDS)
def test_the_attention_answers_are_torchs(seed: int) -> None:
    numbers_ = draw(seed)
    q = torch.tensor(numbers_.q, dtype=torch.float64)  # [d_k]
    keys = torch.tensor(numbers_.keys, dtype=torch.float64)  # [T, d_k]
    values = torch.tensor(numbers_.values, dtype=torch.float64)  # [T, d_k]
    scores = keys @ q
    weights = torch.softmax(scores / math.sqrt(len(q)), dim=-1)
    out = F.scaled_dot_product_attention(q[None, None], keys[None], values[None])[0, 0]
    expected = {
        "score": [scores[numbers_.key].item()],
        "scaled": [scores[numbers_.key].item() / math.sqrt(len(q))],
        "softmax": weights.tolist(),
        "weighted": out.tolist(),
    }
    for key, reference in expected.items():
        assert numbers_.question(key).expected == pytest.approx(reference, abs=1e-9), key


@pytest.mark.parametrize(("norm_type", "activation"), [("layernorm", "gelu"), ("rmsnorm", "relu")])
def test_the_norm_and_activation_answers_are_torchs(norm_type: str, activation: str) -> None:
    for seed in SEEDS:
        numbers_ = draw(seed, norm_type, activation)
        x = torch.tensor(numbers_.vector, dtype=torch.float64)
        norm = F.layer_norm if norm_type == "layernorm" else F.rms_norm
        assert numbers_.question("norm").expected == pytest.approx(
            norm(x, (len(x),), eps=1e-5).tolist(), abs=1e-6
        )
        h = torch.tensor(numbers_.hidden, dtype=torch.float64)
        act = F.gelu(h) if activation == "gelu" else h.clamp(min=0)
        assert numbers_.question("activation").expected == pytest.approx(act.tolist(), abs=1e-9)


def test_the_worked_solution_ends_on_the_answer_and_uses_the_given_numbers() -> None:
    for seed in SEEDS:
        numbers_ = draw(seed, "layernorm", "gelu")
        for question in numbers_.questions:
            assert numbers(question.expected) in question.steps[-1], (seed, question.key)
        score = numbers_.question("score").steps[0]
        given = zip(numbers_.q, numbers_.keys[numbers_.key], strict=True)
        assert " + ".join(f"({number(a)})({number(b)})" for a, b in given) in score
        assert f"√{numbers_.d_k}" in numbers_.question("scaled").steps[1]


def test_a_right_answer_rounded_to_two_decimals_passes() -> None:
    for seed in SEEDS:
        for question in draw(seed, "rmsnorm", "gelu").questions:
            verdict = question.check(tuple(round(v, 2) for v in question.expected))
            assert verdict.correct, (seed, question.key, verdict.message)
            assert f"±{number(question.tolerance)}" in verdict.message


def test_a_wrong_answer_names_its_first_wrong_number() -> None:
    softmax = draw(0).question("softmax")
    answer = list(softmax.expected)
    answer[1] += 0.2
    answer[2] -= 0.3
    verdict = softmax.check(tuple(answer))
    assert not verdict.correct
    assert f"number 2 of {softmax.count} is {number(answer[1])}" in verdict.message
    assert "It looks like" not in verdict.message
    short = softmax.check(tuple(answer[:-1]))
    assert short.message == f"Expected {softmax.count} numbers, got {softmax.count - 1}."


def test_common_mistakes_get_their_hint() -> None:
    numbers_ = draw(3, "layernorm", "gelu")
    q = torch.tensor(numbers_.q, dtype=torch.float64)
    keys = torch.tensor(numbers_.keys, dtype=torch.float64)
    score = (keys[numbers_.key] @ q).item()
    x = torch.tensor(numbers_.vector, dtype=torch.float64)
    centered = x - x.mean()
    bessel = centered / centered.std(unbiased=True)  # n - 1
    h = torch.tensor(numbers_.hidden, dtype=torch.float64)
    cases = {
        "scaled": ((score,), "without dividing by √d_k"),
        "softmax": (tuple(torch.softmax(keys @ q, -1).tolist()), "unscaled scores"),
        "norm": (tuple(bessel.tolist()), "Bessel's correction"),
        "activation": (tuple(h.clamp(min=0).tolist()), "ReLU"),
    }
    for key, (answer, hint) in cases.items():
        verdict = numbers_.question(key).check(tuple(round(v, 3) for v in answer))
        assert not verdict.correct and hint in verdict.message, (key, verdict.message)
    rms = draw(3, "rmsnorm", "relu").question("norm")
    layer_norm = F.layer_norm(x, (len(x),)).tolist()
    assert "RMSNorm does not subtract the mean" in rms.check(tuple(layer_norm)).message


def test_parse_answer_reads_numbers_and_says_what_is_wrong() -> None:
    assert parse_answer(" 0.25, −1;3  4e-1 ", 4) == (0.25, -1.0, 3.0, 0.4)
    problems = {
        "": "Type your answer first: 2 numbers separated by commas.",
        "   ": "Type your answer first",
        "0.5, abc": "“abc” is not a number",
        "0.5, inf": "“inf” is not a finite number",
        "nan 1": "“nan” is not a finite number",
        "1e400, 1": "not a finite number",  # float() gives inf
        "1e9, 1": "far too large",
        "1 2 3": "Give 2 numbers separated by commas; you gave 3.",
        "1" * 300: "too long",
        "__import__('os')": "is not a number",
    }
    for text, message in problems.items():
        with pytest.raises(AnswerError, match=message.replace("(", r"\(")):
            parse_answer(text, 2)
    with pytest.raises(AnswerError, match="Type your answer first: one number."):
        parse_answer("", 1)


def test_an_unknown_norm_or_activation_is_refused() -> None:
    with pytest.raises(ValueError, match="norm_type"):
        draw(0, norm_type="batchnorm")
    with pytest.raises(ValueError, match="activation"):
        draw(0, activation="swish")
