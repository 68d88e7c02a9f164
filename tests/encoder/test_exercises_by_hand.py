"""The by-hand activation question for every activation the options offer (its answer against the
formula written here, its worked solution, its mistakes), and the sentences that say what a
RoPE or windowed model's attention does that the row by hand leaves out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from encoder import EncoderConfig
from encoder.core.model import ACTIVATION_FUNCTIONS
from encoder.exercises.by_hand import NORM_SIZE, attention_notes, draw, number


def gelu(h: np.ndarray) -> np.ndarray:
    return np.array([x * 0.5 * (1 + math.erf(x / math.sqrt(2))) for x in h])


def gelu_tanh(h: np.ndarray) -> np.ndarray:
    return 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))


def silu(h: np.ndarray) -> np.ndarray:
    return h / (1 + np.exp(-h))


FORMULAS = {  # (the activation of h, and whether a gate g multiplies it)
    "relu": (lambda h: np.maximum(h, 0), False),
    "gelu": (gelu, False),
    "gelu_tanh": (gelu_tanh, False),
    "geglu": (gelu, True),
    "swiglu": (silu, True),
}


def test_every_activation_the_model_offers_is_asked() -> None:
    assert set(FORMULAS) == set(ACTIVATION_FUNCTIONS)


@pytest.mark.parametrize("activation", list(FORMULAS))
def test_the_activation_answer_is_its_formula_and_the_solution_ends_on_it(activation) -> None:
    act, gated = FORMULAS[activation]
    base = draw(11, "layernorm", "relu")
    for seed in (11, 12, 13):
        numbers = draw(seed, "layernorm", activation)
        h = np.array(numbers.hidden)
        assert len(numbers.gate) == (NORM_SIZE if gated else 0)
        expected = act(h) * (np.array(numbers.gate) if gated else 1)
        question = numbers.question("activation")
        assert question.expected == pytest.approx(expected.tolist(), abs=1e-6)
        assert question.steps[-1].endswith(", ".join(number(v) for v in question.expected))
        assert question.check(tuple(np.round(expected, 2))).correct
    # the gate is drawn last: the other numbers of a seed stay the same
    same = draw(11, "layernorm", activation)
    assert (same.q, same.keys, same.hidden) == (base.q, base.keys, base.hidden)


@pytest.mark.parametrize(
    ("activation", "mistaken", "why"),
    [
        ("gelu_tanh", lambda h, g: np.maximum(h, 0), "ReLU"),
        ("geglu", lambda h, g: gelu(h), "the gate left out"),
        ("geglu", lambda h, g: gelu(g) * h, "GELU of the gate times h"),
        ("geglu", lambda h, g: silu(h) * g, "SiLU in place of GELU"),
        ("swiglu", lambda h, g: silu(h), "the gate left out"),
        ("swiglu", lambda h, g: gelu(h) * g, "GELU in place of SiLU"),
    ],
)
def test_the_activation_mistakes_are_named(activation, mistaken, why) -> None:
    numbers = draw(7, "layernorm", activation)
    h, g = np.array(numbers.hidden), np.array(numbers.gate or numbers.hidden)
    verdict = numbers.question("activation").check(tuple(mistaken(h, g)))
    assert not verdict.correct and f"It looks like {why}" in verdict.message


def test_the_tanh_and_silu_solutions_show_their_own_steps() -> None:
    tanh_steps = "\n".join(draw(3, "layernorm", "gelu_tanh").question("activation").steps)
    assert "tanh(" in tanh_steps and "Φ" not in tanh_steps
    swiglu = draw(3, "layernorm", "swiglu")
    first, h, g = swiglu.question("activation").steps[0], swiglu.hidden[0], swiglu.gate[0]
    assert first.startswith(f"SiLU({number(h)}): ")
    assert f"/ {number(1 + math.exp(-h))} = " in first
    assert "× g = " in first and first.endswith(f"= {number(h / (1 + math.exp(-h)) * g)}")


def test_the_notes_say_what_rope_and_a_window_change() -> None:
    assert attention_notes(EncoderConfig()) == ()
    rope, window = attention_notes(
        EncoderConfig(num_layers=4, positional="rope", attention_window=6, global_every=3)
    )
    assert rope.startswith("This model turns each q and k by its position")
    assert window == (
        "Layers 1, 2 of this model (of 0–3) attend through a local window of 6: a query there "
        "sees only the keys at most 3 positions away, its softmax over those alone; the row here "
        "is a global layer's, where every key counts."
    )
    (one,) = attention_notes(EncoderConfig(num_layers=2, attention_window=4, global_every=2))
    assert one.startswith("Layer 1 of this model (of 0–1) attends through a local window of 4")
    (every,) = attention_notes(EncoderConfig(num_layers=2, attention_window=4, global_every=0))
    assert every.startswith("Every layer of this model attends through a local window of 4")
    assert every.endswith("as a model with the window off does.")
