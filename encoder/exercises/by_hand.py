"""Exercises by hand: small numbers a student works through with pencil or a calculator.

    numbers = draw(seed=7, norm_type="rmsnorm", activation="gelu")
    numbers.q, numbers.keys, numbers.values     # one query row, T key rows, T value rows
    for question in numbers.questions:          # score, scaled score, softmax row, weighted sum,
        question.ask, question.expected         # the norm of a short vector, the activation
    verdict = question.check(parse_answer("0.3, -1.2", question.count))
    question.steps                              # the worked solution, line by line

A set is one attention row of a tiny single-head model (d_k = 2 to 4, three to five tokens) with
every given number rounded to one decimal, plus a short vector for the sidebar's norm (LayerNorm
or RMSNorm, gain 1 and no bias) and its feed-forward activation (ReLU, GELU, GELU's tanh
approximation, or GeGLU and SwiGLU, whose hidden vector comes with a gate g). The expected
answers are computed by the model's own pieces (its Norm module and activation); the student's
answers are parsed as numbers, never evaluated.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import torch

from encoder.core import hooks
from encoder.core.config import GATED_ACTIVATIONS, EncoderConfig
from encoder.core.model import ACTIVATION_FUNCTIONS, Norm
from encoder.core.options import ACTIVATION_NAMES
from encoder.core.said import Listed, Said
from encoder.exercises.mistakes import OTHER_ACTIVATIONS
from encoder.exercises.written import Written

QUESTION_KEYS = ("score", "scaled", "softmax", "weighted", "norm", "activation")
MAX_ANSWER = 1e6  # a number past this size is a typo: every answer here is below 100
MAX_ANSWER_CHARS = 200
MAX_SET = 999_999  # the sets of numbers a page offers: seeds 0..this
NORM_SIZE = 4  # features of the vector to normalise
SEPARATORS = re.compile(r"[\s,;]+")  # between the numbers of an answer with a decimal point
SEPARATORS_BESIDE_COMMAS = re.compile(r"[\s;]+")  # ... where a comma is the decimal mark


def number(value: float) -> str:
    """A number as the worked solution writes it: up to four decimals, no trailing zeros."""
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text.replace("-", "−")


def written(value: float) -> Written:
    """`value` as `number` writes it, a number still (a sentence's front end may write it in
    the reader's language)."""
    return Written(value, number(value))


def floats(values) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def numbers(values) -> str:
    return ", ".join(number(v) for v in values)


@dataclass(frozen=True)
class Verdict:
    """How an answer compares with the expected one: its sentences (each a Said; the mistake's
    sentence holds the mistake, a Said, in its `mistake`), and `message`, all of them."""

    correct: bool
    sentences: tuple[Said, ...]

    @property
    def message(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class Question:
    """One thing to compute: the question, the expected numbers, the tolerance on each, the worked
    solution, and the answers common mistakes give (with what each mistake was)."""

    key: str  # one of QUESTION_KEYS
    ask: Said
    expected: tuple[float, ...]
    tolerance: float
    steps: tuple[str, ...]
    mistakes: tuple[tuple[str, tuple[float, ...]], ...] = ()

    @property
    def count(self) -> int:
        return len(self.expected)

    def check(self, answer: tuple[float, ...]) -> Verdict:
        """Right when every number is within the tolerance; else where it first differs, and the
        mistake it looks like, if any."""
        if len(answer) != self.count:
            said = Said(
                "Expected {count} numbers, got {given}.", count=self.count, given=len(answer)
            )
            return Verdict(False, (said,))
        wrong = [
            i
            for i, (a, e) in enumerate(zip(answer, self.expected, strict=True))
            if not self._near(a, e)
        ]
        tolerance = written(self.tolerance)
        if not wrong:
            return Verdict(True, (Said("Right (each within ±{tolerance}).", tolerance=tolerance),))
        first = wrong[0]
        given = written(answer[first])
        if self.count > 1:
            message = Said(
                "Not yet: number {number} of {count} is {answer}, off by more than ±{tolerance}.",
                number=first + 1,
                count=self.count,
                answer=given,
                tolerance=tolerance,
            )
        else:
            message = Said(
                "Not yet: your answer is {answer}, off by more than ±{tolerance}.",
                answer=given,
                tolerance=tolerance,
            )
        for why, values in self.mistakes:
            if all(self._near(a, v) for a, v in zip(answer, values, strict=True)):
                return Verdict(False, (message, Said("It looks like {mistake}.", mistake=why)))
        return Verdict(False, (message,))

    def _near(self, answer: float, expected: float) -> bool:
        return abs(answer - expected) <= self.tolerance + 1e-9


@dataclass(frozen=True)
class HandNumbers:
    """A set of numbers to work through by hand, and its questions."""

    seed: int
    norm_type: str
    activation: str
    query: int  # the query's position (0-based)
    key: int  # the key of the single-score questions (0-based)
    q: tuple[float, ...]  # [d_k]
    keys: tuple[tuple[float, ...], ...]  # [T, d_k]
    values: tuple[tuple[float, ...], ...]  # [T, d_k]
    vector: tuple[float, ...]  # [NORM_SIZE], for the norm
    hidden: tuple[float, ...]  # [NORM_SIZE], for the activation
    gate: tuple[float, ...]  # [NORM_SIZE] the gate of GeGLU and SwiGLU; () for the others
    questions: tuple[Question, ...]

    @property
    def d_k(self) -> int:
        return len(self.q)

    @property
    def tokens(self) -> int:
        return len(self.keys)

    def question(self, key: str) -> Question:
        return next(q for q in self.questions if q.key == key)


class AnswerError(ValueError):
    """An answer that is not a list of usable numbers; its message says why, for the page."""


def parse_answer(text: str, count: int, decimal: str = ".") -> tuple[float, ...]:
    """`count` numbers, separated by commas, semicolons or spaces (a − sign counts as minus);
    with `decimal` ",", as a Spanish student writes them: a comma or a point the decimal mark,
    semicolons or spaces between the numbers ("0,3; −1,2"). AnswerError says what is wrong (a
    Said): empty, not a number, not finite, far too large, wrong count."""
    text = (text or "").strip().replace("−", "-")
    separators = SEPARATORS_BESIDE_COMMAS if decimal == "," else SEPARATORS
    one = count == 1
    if not text:
        raise AnswerError(
            Said("Type your answer first: one number.")
            if one
            else Said("Type your answer first: {count} numbers separated by commas.", count=count)
        )
    if len(text) > MAX_ANSWER_CHARS:
        raise AnswerError(
            Said("That is too long: give one number (at most {chars} characters).",
                 chars=MAX_ANSWER_CHARS)
            if one
            else Said("That is too long: give {count} numbers separated by commas "
                      "(at most {chars} characters).", count=count, chars=MAX_ANSWER_CHARS)
        )  # fmt: skip
    values = []
    for part in separators.split(text):
        if not part:
            continue
        try:
            value = float(part.replace(",", ".") if decimal == "," else part)
        except ValueError:
            raise AnswerError(
                Said("“{part}” is not a number: give one number, such as 0.25.", part=part)
                if one
                else Said("“{part}” is not a number: give {count} numbers separated by commas, "
                          "such as 0.25.", part=part, count=count)
            ) from None  # fmt: skip
        if not math.isfinite(value):
            raise AnswerError(
                Said("“{part}” is not a finite number: give one number.", part=part)
                if one
                else Said("“{part}” is not a finite number: give {count} numbers separated by "
                          "commas.", part=part, count=count)
            )  # fmt: skip
        if abs(value) > MAX_ANSWER:
            raise AnswerError(
                Said("{part} is far too large: every answer here is a small number (below 100).",
                     part=part)
            )  # fmt: skip
        values.append(value)
    if len(values) != count:
        raise AnswerError(
            Said("Give one number; you gave {given}.", given=len(values))
            if one
            else Said("Give {count} numbers separated by commas; you gave {given}.",
                      count=count, given=len(values))
        )  # fmt: skip
    return tuple(values)


def _tenths(generator: np.random.Generator, shape, low: int = -20, high: int = 20) -> np.ndarray:
    """Random numbers with one decimal, between low/10 and high/10."""
    return generator.integers(low, high + 1, size=shape) / 10


def _softmax(scores: np.ndarray) -> np.ndarray:
    exps = np.exp(scores - scores.max())
    return exps / exps.sum()


def _dot_steps(q: np.ndarray, k: np.ndarray, key: int) -> str:
    products = " + ".join(f"({number(a)})({number(b)})" for a, b in zip(q, k, strict=True))
    terms = " + ".join(f"({number(a * b)})" for a, b in zip(q, k, strict=True))
    return f"q · k{key + 1} = {products} = {terms} = {number(float(q @ k))}"


def _attention_questions(q, keys, values, query: int, key: int) -> tuple[Question, ...]:
    """The score, the scaled score, the softmax row and the weighted sum, in that order."""
    weights = _softmax(keys @ q / math.sqrt(len(q)))  # [T]
    return (
        *_score_questions(q, keys, query, key),
        _softmax_question(q, keys, query),
        _weighted_question(keys, values, weights, query),
    )


def _score_questions(q, keys, query: int, key: int) -> tuple[Question, Question]:
    d_k = len(q)
    root = math.sqrt(d_k)
    scores = keys @ q  # [T]
    scaled = scores / root  # [T]
    score = Question(
        "score",
        Said(
            "The score of query {query} against key {key}: q · k{key}.",
            query=query + 1,
            key=key + 1,
        ),
        (float(scores[key]),),
        0.01,
        (_dot_steps(q, keys[key], key),),
    )
    scaled_question = Question(
        "scaled",
        Said("The scaled score: q · k{key} / √d_k, with d_k = {d_k}.", key=key + 1, d_k=d_k),
        (float(scaled[key]),),
        0.01,
        (
            _dot_steps(q, keys[key], key),
            f"√d_k = √{d_k} = {number(root)}",
            f"{number(scores[key])} / {number(root)} = {number(scaled[key])}",
        ),
        mistakes=(
            (Said("the score without dividing by √d_k"), (float(scores[key]),)),
            (Said("a division by d_k instead of √d_k"), (float(scores[key] / d_k),)),
        ),
    )
    return score, scaled_question


def _softmax_question(q, keys, query: int) -> Question:
    d_k, t = len(q), len(keys)
    root = math.sqrt(d_k)
    scores = keys @ q  # [T]
    scaled = scores / root  # [T]
    weights = _softmax(scaled)  # [T]
    exps = np.exp(scaled - scaled.max())
    return Question(
        "softmax",
        Said(
            "Query {query}'s attention row: the softmax of its {t} scaled scores "
            "(q · k_j / √{d_k} for j = 1..{t}).",
            query=query + 1,
            t=t,
            d_k=d_k,
        ),
        floats(weights),
        0.01,
        (
            *(_dot_steps(q, keys[j], j) for j in range(t)),
            f"scaled by √{d_k} = {number(root)}: {numbers(scaled)}",
            f"minus the largest ({number(scaled.max())}), so no exponential overflows: "
            f"{numbers(scaled - scaled.max())}",
            f"exponentials: {numbers(exps)}; their sum: {number(exps.sum())}",
            f"each divided by the sum: {numbers(weights)} (they sum to 1)",
        ),
        mistakes=(
            (
                Said("the softmax of the unscaled scores (no division by √d_k)"),
                floats(_softmax(scores)),
            ),
            (
                Said("the scores divided by their sum, without exponentials"),
                floats(scaled / scaled.sum()),
            ),
        ),
    )


def _weighted_question(keys, values, weights, query: int) -> Question:
    t, d_k = values.shape
    mixed = weights @ values  # [d_k]
    return Question(
        "weighted",
        Said(
            "Query {query}'s output: the weighted sum of the value rows, Σ_j a_j v_j, with the "
            "attention row a from the question before ({d_k} numbers).",
            query=query + 1,
            d_k=d_k,
        ),
        floats(mixed),
        0.05,  # room for an attention row rounded to two decimals
        (
            f"attention row a = {numbers(weights)}",
            *(
                f"feature {f + 1}: "
                + " + ".join(f"({number(weights[j])})({number(values[j, f])})" for j in range(t))
                + f" = {number(mixed[f])}"
                for f in range(d_k)
            ),
            f"output = {numbers(mixed)}",
        ),
        mistakes=(
            (Said("the keys summed instead of the values"), floats(weights @ keys)),
            (
                Said("a plain average of the values, without the weights"),
                floats(values.mean(axis=0)),
            ),
        ),
    )


def _norm_question(vector: np.ndarray, norm_type: str) -> Question:
    cfg = EncoderConfig(
        vocab_size=2, d_model=len(vector), num_heads=1, num_layers=1, d_ff=4, norm_type=norm_type
    )
    norm = Norm(cfg, hooks.final_norm(cfg.num_layers))  # the model's own norm, gain 1
    with torch.no_grad():
        out = norm(torch.tensor(vector)[None, None]).double()[0, 0].numpy()  # [n]
    n = len(vector)
    if norm_type == "layernorm":
        mean = vector.mean()
        centered = vector - mean
        variance = (centered**2).mean()
        bessel = centered / math.sqrt((centered**2).sum() / (n - 1))
        return Question(
            "norm",
            Said(
                "LayerNorm of x (gain 1, bias 0): (x − mean) / std, with the variance averaged "
                "over the {n} features ({n} numbers).",
                n=n,
            ),
            floats(out),
            0.02,
            (
                f"mean = ({' + '.join(number(v) for v in vector)}) / {n} = {number(mean)}",
                f"x − mean = {numbers(centered)}",
                f"variance = mean of the squares = ({' + '.join(number(c * c) for c in centered)})"
                f" / {n} = {number(variance)}",
                f"std = √(variance + ε) = {number(math.sqrt(variance + cfg.layer_norm_eps))} "
                f"(ε = {cfg.layer_norm_eps:g} barely matters here)",
                f"(x − mean) / std = {numbers(out)}",
            ),
            mistakes=(
                (
                    Said("the variance divided by {divisor} (Bessel's correction)", divisor=n - 1),
                    floats(bessel),
                ),
                (Said("the mean subtracted but not divided by the std"), floats(centered)),
            ),
        )
    return _rms_norm_question(vector, out, cfg.layer_norm_eps)


def _rms_norm_question(vector: np.ndarray, out: np.ndarray, eps: float) -> Question:
    n = len(vector)
    mean_square = (vector**2).mean()
    return Question(
        "norm",
        Said(
            "RMSNorm of x (gain 1): x / rms, with rms = √(mean of x²) over the {n} features "
            "({n} numbers).",
            n=n,
        ),
        floats(out),
        0.02,
        (
            f"x² = {numbers(vector**2)}",
            f"mean of x² = ({' + '.join(number(v * v) for v in vector)}) / {n} = "
            f"{number(mean_square)}",
            f"rms = √(mean of x² + ε) = {number(math.sqrt(mean_square + eps))} "
            f"(ε = {eps:g} barely matters here)",
            f"x / rms = {numbers(out)}",
        ),
        mistakes=(
            (Said("LayerNorm: RMSNorm does not subtract the mean"), floats(_layer_norm(vector))),
        ),
    )


def _layer_norm(vector: np.ndarray) -> np.ndarray:
    centered = vector - vector.mean()
    return centered / math.sqrt((centered**2).mean())


def relu(values: np.ndarray) -> np.ndarray:
    return np.maximum(values, 0)


def _through(activation: str, values: np.ndarray) -> np.ndarray:
    """The activation's function (for GeGLU and SwiGLU the one before the gate) on `values`."""
    return ACTIVATION_FUNCTIONS[activation](torch.tensor(values)).numpy()


# Each activation as a question writes it: its name before the gate, and its formula.
GELU_FORMULA = Said("h · Φ(h), Φ the standard normal's cumulative distribution")
ACTIVATION_FORMULAS = {
    "relu": ("ReLU", "max(0, h)"),
    "gelu": ("GELU", GELU_FORMULA),
    "gelu_tanh": ("GELU (tanh)", "0.5 · h · (1 + tanh(√(2/π) · (h + 0.044715 · h³)))"),
    "geglu": ("GELU", GELU_FORMULA),
    "swiglu": ("SiLU", "h · σ(h) = h / (1 + e^(−h))"),
}


def _factor(value: float) -> str:
    """A number as a factor in a product: a negative one in parentheses."""
    return f"({number(value)})" if value < 0 else number(value)


def _worked(h: float, out: float, activation: str) -> str:
    """One number through the activation (before any gate), written out."""
    x, y = _factor(h), number(out)
    if activation == "relu":
        return f"max(0, {number(h)}) = {y}"
    if activation in ("gelu", "geglu"):
        return f"{x} · Φ({number(h)}) = {x} · {number(out / h if h else 0.5)} = {y}"
    if activation == "gelu_tanh":
        inner = math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)
        return (
            f"0.5 · {x} · (1 + tanh({number(inner)})) = "
            f"0.5 · {x} · (1 + {_factor(math.tanh(inner))}) = {y}"
        )
    return f"{x} / (1 + e^({number(-h)})) = {x} / {number(1 + math.exp(-h))} = {y}"


def _activation_question(hidden: np.ndarray, gate: np.ndarray | None, activation: str) -> Question:
    """The activation of h (gated: times the gate g), by the model's own function."""
    activated = _through(activation, hidden)  # [n]
    n = len(hidden)
    name, formula = ACTIVATION_FORMULAS[activation]
    if gate is None:
        mistakes = (
            ()
            if activation == "relu"
            else (
                (
                    Said("ReLU: GELU lets a little of each negative number through"),
                    floats(relu(hidden)),
                ),
            )
        )
        return Question(
            "activation",
            Said(
                "{name} of the feed-forward's hidden vector h: {formula}, for each of its {n} "
                "numbers.",
                name=name,
                formula=formula,
                n=n,
            ),
            floats(activated),
            0.01,
            (
                *(_worked(h, o, activation) for h, o in zip(hidden, activated, strict=True)),
                f"{name} of h = {numbers(activated)}",
            ),
            mistakes=mistakes,
        )
    return _gated_question(hidden, gate, activated, activation)


def _gated_question(hidden, gate, activated, activation: str) -> Question:
    """GeGLU's or SwiGLU's: the activation of h times the gate g."""
    n = len(hidden)
    name, formula = ACTIVATION_FORMULAS[activation]
    out = activated * gate  # [n]
    (other,) = OTHER_ACTIVATIONS[activation]  # the other gated one
    glu = ACTIVATION_NAMES[activation]
    return Question(
        "activation",
        Said(
            "{glu} of the feed-forward: {name}(h) · g for each of its {n} features, h the half "
            "of the first linear layer's output that goes through {name} ({formula}) and g the "
            "other half, the gate.",
            glu=glu,
            name=name,
            formula=formula,
            n=n,
        ),
        floats(out),
        0.01,
        (
            *(
                f"{name}({number(h)}): {_worked(h, a, activation)}; × g = {_factor(a)} · "
                f"{_factor(g)} = {number(o)}"
                for h, a, g, o in zip(hidden, activated, gate, out, strict=True)
            ),
            f"{name}(h) · g = {numbers(out)}",
        ),
        mistakes=(
            (Said("the gate left out: multiply each number by its g"), floats(activated)),
            (
                Said("{name} of the gate times h: {name} takes h, g multiplies", name=name),
                floats(_through(activation, gate) * hidden),
            ),
            (
                Said("{other} in place of {name}", other=ACTIVATION_FORMULAS[other][0], name=name),
                floats(_through(other, hidden) * gate),
            ),
        ),  # fmt: skip
    )


def attention_notes(cfg: EncoderConfig) -> tuple[Said, ...]:
    """What the model `cfg` does in its attention that the row by hand leaves out, one sentence
    each, and how the row stands for it: RoPE's turned q and k, a local window."""
    notes = []
    if cfg.positional == "rope":
        notes.append(
            Said(
                "This model turns each q and k by its position before the dot product (RoPE): "
                "read the q and k here as already turned; every question stays the same."
            )
        )
    local = [layer for layer in range(cfg.num_layers) if cfg.is_local(layer)]
    values = dict(window=cfg.attention_window, reach=cfg.attention_window // 2)
    if local and len(local) == cfg.num_layers:
        notes.append(
            Said(
                "Every layer of this model attends through a local window of {window}: a "
                "query there sees only the keys at most {reach} positions away, its softmax "
                "over those alone; the row here sees every key, as a model with the window "
                "off does.",
                **values,
            )
        )
    elif len(local) == 1:
        notes.append(
            Said(
                "Layer {listed} of this model (of 0–{last}) attends through a local window "
                "of {window}: a query there sees only the keys at most {reach} positions "
                "away, its softmax over those alone; the row here is a global layer's, "
                "where every key counts.",
                listed=local[0],
                last=cfg.num_layers - 1,
                **values,
            )
        )
    elif local:
        notes.append(
            Said(
                "Layers {listed} of this model (of 0–{last}) attend through a local window "
                "of {window}: a query there sees only the keys at most {reach} positions "
                "away, its softmax over those alone; the row here is a global layer's, "
                "where every key counts.",
                listed=Listed(local),
                last=cfg.num_layers - 1,
                **values,
            )
        )
    return tuple(notes)


def draw(seed: int, norm_type: str = "layernorm", activation: str = "gelu") -> HandNumbers:
    """A set of numbers from `seed` (the same seed, the same numbers), for the norm and the
    activation the sidebar's architecture uses."""
    EncoderConfig(
        vocab_size=2, d_model=4, num_heads=1, num_layers=1, d_ff=4,
        norm_type=norm_type, activation=activation,
    )  # fmt: skip  # (their checks)
    generator = np.random.default_rng(seed)
    d_k = int(generator.integers(2, 5))  # 2..4
    tokens = int(generator.integers(3, 6))  # 3..5
    q = _tenths(generator, d_k)  # [d_k]
    keys = _tenths(generator, (tokens, d_k))  # [T, d_k]
    values = _tenths(generator, (tokens, d_k))  # [T, d_k]
    vector = _tenths(generator, NORM_SIZE, -30, 30)  # [n]
    while np.ptp(vector) == 0:  # a constant vector has no spread to normalise
        vector = _tenths(generator, NORM_SIZE, -30, 30)
    hidden = _tenths(generator, NORM_SIZE)  # [n]
    query = int(generator.integers(0, tokens))
    key = int(generator.integers(0, tokens))
    # drawn last, so a seed gives the same other numbers whatever the activation
    gate = _tenths(generator, NORM_SIZE) if activation in GATED_ACTIVATIONS else None  # [n]
    return HandNumbers(
        seed=seed,
        norm_type=norm_type,
        activation=activation,
        query=query,
        key=key,
        q=floats(q),
        keys=tuple(map(floats, keys)),
        values=tuple(map(floats, values)),
        vector=floats(vector),
        hidden=floats(hidden),
        gate=() if gate is None else floats(gate),
        questions=(
            *_attention_questions(q, keys, values, query, key),
            _norm_question(vector, norm_type),
            _activation_question(hidden, gate, activation),
        ),
    )
