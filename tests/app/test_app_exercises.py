"""The Exercises view through AppTest: the numbers it gives, the answers it checks (right, wrong,
empty, not numbers, huge), the worked solutions, new numbers, and the sidebar's norm."""

from __future__ import annotations

import math
import re

import numpy as np
from streamlit.testing.v1 import AppTest

from encoder.exercises.by_hand import QUESTION_KEYS, draw, number
from tests.app.helpers import assert_no_exception, open_page

TINY = {"d_model": "32", "num_heads": "4", "num_layers": "1", "d_ff": "64"}  # the sidebar's


def row(text: str) -> np.ndarray:
    """A row the page shows, "(0.3, −1.2)", as numbers."""
    return np.array([float(v.replace("−", "-")) for v in text.strip("()").split(", ")])


def given(at: AppTest) -> dict:
    """The numbers the page shows: q, the keys and values, x, h, the query and key asked about."""
    markdown = [m.value for m in at.markdown]
    head = next(m for m in markdown if m.startswith("**One attention head**"))
    table = at.table[0].value
    score = next(m for m in markdown if m.startswith("**1.**"))
    return {
        "q": row(re.search(r"q = (\(.*?\))", head).group(1)),
        "keys": np.stack([row(k) for k in table["key k_j"]]),
        "values": np.stack([row(v) for v in table["value v_j"]]),
        "x": row(re.search(r"x = (\(.*?\))", "\n".join(markdown)).group(1)),
        "h": row(re.search(r"h = (\(.*?\))", "\n".join(markdown)).group(1)),
        "key": int(re.search(r"against key (\d)", score).group(1)) - 1,
    }


def answers_from_the_page(at: AppTest) -> dict[str, list[float]]:
    """What each question asks, computed here from the numbers on the page alone."""
    g = given(at)
    d_k = len(g["q"])
    scores = g["keys"] @ g["q"]
    scaled = scores / math.sqrt(d_k)
    weights = np.exp(scaled - scaled.max()) / np.exp(scaled - scaled.max()).sum()
    centered = g["x"] - g["x"].mean()
    gelu = [h * 0.5 * (1 + math.erf(h / math.sqrt(2))) for h in g["h"]]
    return {
        "score": [scores[g["key"]]],
        "scaled": [scaled[g["key"]]],
        "softmax": list(weights),
        "weighted": list(weights @ g["values"]),
        "norm": list(centered / math.sqrt((centered**2).mean() + 1e-5)),
        "activation": gelu,
    }


def typed(values: list[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def test_right_answers_pass_and_the_worked_solution_ends_on_them() -> None:
    at = open_page(view="Exercises", ex_set="5", **TINY)
    assert_no_exception(at)
    expected = answers_from_the_page(at)
    for key in QUESTION_KEYS:
        at.text_input(key=f"ex_{key}").input(typed(expected[key])).run()
    assert_no_exception(at)
    assert len(at.success) == len(QUESTION_KEYS) and not at.error and not at.warning
    assert at.success[0].value == "Right (each within ±0.01)."
    solutions = [c.value for c in at.code]
    assert len(solutions) == len(QUESTION_KEYS)
    for key, solution in zip(QUESTION_KEYS, solutions, strict=True):
        last = solution.splitlines()[-1]
        assert ", ".join(number(v) for v in expected[key]) in last, (key, last)


def test_a_wrong_answer_says_where_and_shows_the_solution() -> None:
    at = open_page(view="Exercises", ex_set="5", **TINY)
    expected = answers_from_the_page(at)
    g = given(at)
    at.text_input(key="ex_scaled").input(typed(expected["score"])).run()  # no √d_k
    (message,) = [e.value for e in at.error]
    assert message.startswith("Not yet: your answer is")
    assert "without dividing by √d_k" in message
    (solution,) = [c.value for c in at.code]
    products = " + ".join(
        f"({number(a)})({number(b)})" for a, b in zip(g["q"], g["keys"][g["key"]], strict=True)
    )
    assert products in solution and f"√{len(g['q'])}" in solution
    wrong = list(expected["softmax"])
    wrong[-1] += 0.5
    at.text_input(key="ex_softmax").input(typed(wrong)).run()
    assert f"number {len(wrong)} of {len(wrong)} is" in at.error[-1].value


def test_empty_not_numbers_and_huge_answers_get_a_message_not_a_verdict() -> None:
    at = open_page(view="Exercises", **TINY)
    assert not at.code and not at.success and not at.error  # nothing answered yet
    cases = {
        "abc": "“abc” is not a number",
        "1e300000": "not a finite number",
        "99999999": "far too large",
        "nan": "not a finite number",
        "1, 2": "Give one number; you gave 2.",
        "print(1)": "“print(1)” is not a number",
    }
    for text, message in cases.items():
        at.text_input(key="ex_score").input(text).run()
        assert_no_exception(at)
        (warning,) = [w.value for w in at.warning]
        assert message in warning, (text, warning)
        assert not at.code and not at.success and not at.error
    at.text_input(key="ex_score").input("   ").run()
    assert not at.warning and not at.code


def test_show_me_and_new_numbers() -> None:
    at = open_page(view="Exercises", ex_set="5", **TINY)
    before = given(at)
    at.toggle(key="ex_show_norm").set_value(True).run()
    (solution,) = [c.value for c in at.code]
    assert solution.startswith("mean = (")
    assert ", ".join(number(v) for v in answers_from_the_page(at)["norm"]) in solution
    at.text_input(key="ex_score").input("1").run()
    at.button(key="ex_new").click().run()
    assert_no_exception(at)
    assert at.session_state["ex_set"] == 6
    assert at.text_input(key="ex_score").value == ""
    assert at.toggle(key="ex_show_norm").value is False and not at.code
    after, drawn = given(at), draw(6, "layernorm", "gelu")
    assert np.array_equal(after["q"], drawn.q) and np.array_equal(after["keys"], drawn.keys)
    assert not np.array_equal(before["keys"], after["keys"])


def test_the_sidebars_rmsnorm_and_relu_are_asked() -> None:
    at = open_page(view="Exercises", ex_set="5", norm_type="rmsnorm", activation="relu", **TINY)
    asked = [m.value for m in at.markdown]
    assert any(m.startswith("**5.** RMSNorm of x") for m in asked)
    assert any(m.startswith("**6.** ReLU of") for m in asked)
    x = given(at)["x"]
    rms = x / math.sqrt((x**2).mean() + 1e-5)
    at.text_input(key="ex_norm").input(typed(list(rms))).run()
    assert [m.value for m in at.success] == ["Right (each within ±0.02)."]


MODERNBERT = {"positional": "rope", "activation": "geglu", "bias": "off", "norm_bias": "off",
              "window": "4", "global_every": "3", "num_layers": "4"}  # fmt: skip
ALBERT = {"activation": "gelu_tanh", "embedding_size": "32", "shared": "shared", "norm": "post"}


def gate_from_the_page(at: AppTest) -> np.ndarray:
    markdown = "\n".join(m.value for m in at.markdown)
    return row(re.search(r"gate g = (\(.*?\))", markdown).group(1))


def gate_present(at: AppTest) -> bool:
    return any("gate g =" in m.value for m in at.markdown)


def test_a_modernbert_architecture_asks_geglu_with_its_gate_and_says_what_the_row_leaves_out():
    at = open_page(view="Exercises", ex_set="5", **{**TINY, **MODERNBERT})
    assert_no_exception(at)
    (note,) = [i.value for i in at.info]
    rope, window = note.split(" Layers ")
    assert "turns each q and k by its position before the dot product (RoPE)" in rope
    assert window.startswith(
        "1, 2 of this model (of 0–3) attend through a local window of 4: a query there "
        "sees only the keys at most 2 positions away"
    )
    g, gate = given(at), gate_from_the_page(at)
    assert np.array_equal(gate, draw(5, "layernorm", "geglu").gate)
    gelu = np.array([h * 0.5 * (1 + math.erf(h / math.sqrt(2))) for h in g["h"]])
    asked = [m.value for m in at.markdown]
    assert any(m.startswith("**6.** GeGLU of the feed-forward: GELU(h) · g") for m in asked)
    at.text_input(key="ex_activation").input(typed(list(gelu))).run()  # the gate left out
    assert "It looks like the gate left out" in at.error[0].value
    at.text_input(key="ex_activation").input(typed(list(gelu * gate))).run()
    assert [m.value for m in at.success] == ["Right (each within ±0.01)."]


def test_an_albert_architecture_asks_gelus_tanh_form_and_needs_no_note():
    at = open_page(view="Exercises", ex_set="5", **{**TINY, **ALBERT})
    assert_no_exception(at)
    assert not at.info and not gate_present(at)
    h = given(at)["h"]
    tanh_gelu = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
    asked = [m.value for m in at.markdown]
    assert any(
        m.startswith("**6.** GELU (tanh) of the feed-forward's hidden vector h") for m in asked
    )
    at.text_input(key="ex_activation").input(typed(list(tanh_gelu))).run()
    assert [m.value for m in at.success] == ["Right (each within ±0.01)."]
    (solution,) = [c.value for c in at.code]  # shown once answered
    assert "tanh(" in solution and "Φ" not in solution
