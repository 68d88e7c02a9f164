"""Predict, then reveal: each question's true value, read from the live run, and one sentence
that explains the gap between a student's guess and it with the run's own numbers.

A Prediction holds the question, the answers a student picks from (`options`; none for a
number), the true answer in the same form (`truth`) and `explain(guess)`. Guesses travel as
text (the class store keeps text): an option, or a number of percent ("35"). The question, the
parts' labels and each explanation are Saids (encoder.core.said), for a front end to say them in
its reader's language; the options and the truth are the stored values, the same in every one.

Questions:
- top_key: which key the lesson's query attends to most in one head (a token);
- strongest_head: which head, switched off, changes the output most (a head, "layer 2, head 1");
- zero_share: the share of one block's values before the feed-forward activation that it sets
  to exactly 0 (a number, percent);
- norm_growth: whether the residual stream's norm grows through the blocks (a choice).
`paired` asks two questions of one kind as one (after ReLU and after GELU; pre- and post-norm):
its guess and truth are the two answers joined by PART_SEPARATOR.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from encoder.core.capture import Trace
from encoder.core.said import Quoted, Said, formatted
from encoder.inspect.activations import feed_forward_values
from encoder.inspect.norms import mean_norm_by_depth, residual_norms

GROWTH_CHOICES = (Said("grows"), Said("stays about the same"), Said("shrinks"))
GROWS, STAYS, SHRINKS = GROWTH_CHOICES
GROWTH_BAND = 1.25  # last depth's norm over the first's beyond this factor (or 1 / it): grows
PART_SEPARATOR = " / "  # between the answers of a paired question


@dataclass(frozen=True)
class Prediction:
    question_id: str  # the id a class's store keeps answers under
    question: Said
    kind: str  # "token" | "head" | "number" | "choice"
    options: tuple[str, ...]  # what a student picks from ("" for a number)
    truth: str  # the true answer, as an option (or percent, for a number)
    value: float  # the number behind it (a weight, a change, a share, a ratio)
    _explain: Callable[[str], Said]
    parts: tuple[Said, ...] = ()  # a paired question's two labels (e.g. "after ReLU")

    def explain(self, guess: str | None) -> Said:
        """One sentence with the run's numbers: what is true, and how the guess compares."""
        if guess is None or not str(guess).strip():
            return self._explain("")
        return self._explain(str(guess).strip())


def token_label(position: int, token: str) -> str:
    """How a token is offered as an answer: its position and text ("3: cat")."""
    return f"{position}: {token}"


def token_named(tokens: list[str], position: int) -> Said:
    """How a token is named in a sentence: its text and position ("“it” (position 8)")."""
    return Said(
        "{token} (position {position})", token=Quoted(str(tokens[position])), position=position
    )


def head_label(layer: int, head: int) -> Said:
    """How a head is named, as an answer and in a sentence: "layer 2, head 1" (both from 0)."""
    return Said("layer {layer}, head {head}", layer=layer, head=head)


def _position(guess: str, n: int) -> int | None:
    head = guess.split(":", 1)[0].strip()
    return int(head) if head.isdigit() and int(head) < n else None


def top_key(
    attention: np.ndarray, tokens: list[str], query: int, layer: int, head: int
) -> Prediction:
    """attention: one sentence's weights over its real tokens, [layer, head, query, key]."""
    row = np.asarray(attention[layer, head, query], dtype=np.float64)  # [key]
    best = int(row.argmax())
    options = tuple(token_label(i, t) for i, t in enumerate(tokens))
    q = token_named(tokens, query)

    where = head_label(layer, head)

    def explain(guess: str) -> Said:
        truth = Said(
            "in {head}, {query} gives its most attention, {weight}, to {key}",
            head=where,
            query=q,
            weight=formatted(row[best], ".2f"),
            key=token_named(tokens, best),
        )
        picked = _position(guess, len(tokens))
        if picked is None:
            return Said("You skipped: {said}.", said=truth)
        if picked == best:
            return Said("Right: {said}.", said=truth)
        ratio = row[best] / max(row[picked], 1e-12)
        return Said(
            "Not quite: {said}; your {token} gets {weight}, {ratio}x less.",
            said=truth,
            token=Quoted(str(tokens[picked])),
            weight=formatted(row[picked], ".2f"),
            ratio=formatted(ratio, ".1f"),
        )

    return Prediction(
        f"top_key:{layer}.{head}:{query}",
        Said("In {head}, which token does {query} attend to most?", head=where, query=q),
        "token",
        options,
        options[best],
        float(row[best]),
        explain,
    )


def strongest_head(effects: pd.DataFrame) -> Prediction:
    """effects: encoder.inspect.ablation.head_effects' table."""
    in_order = effects.sort_values(["layer", "head"])
    change = {head_label(r.layer, r.head): r.change for r in in_order.itertuples()}
    options = tuple(change)
    best = effects.iloc[0]
    truth = head_label(int(best["layer"]), int(best["head"]))
    median = float(effects["change"].median())

    heads = {label: label for label in change}  # a guess (text) -> its label (a Said)

    def explain(guess: str) -> Said:
        said = Said.plural(
            "switching off {head} changes the output by {change} on average over the tokens, "
            "the most of the {count} head (the median head: {median})",
            "switching off {head} changes the output by {change} on average over the tokens, "
            "the most of the {count} heads (the median head: {median})",
            len(change),
            head=truth,
            change=formatted(change[truth], ".1%"),
            median=formatted(median, ".1%"),
        )
        if guess not in change:
            return Said("You skipped: {said}.", said=said)
        if guess == truth:
            return Said("Right: {said}.", said=said)
        return Said(
            "Not quite: {said}; your {head} changes it by {change}.",
            said=said,
            head=heads[guess],
            change=formatted(change[guess], ".1%"),
        )

    return Prediction(
        "strongest_head",
        Said("Which head, switched off, changes the model's output most?"),
        "head",
        options,
        truth,
        float(best["change"]),
        explain,
    )


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}  # the two a zero-share question compares


def zero_share_of(trace: Trace, sentence: int, layer: int, activation: str) -> tuple[float, int]:
    """The share of block `layer`'s values before the activation (hook_pre: every real token,
    every unit) that `activation` ("relu" | "gelu", GELU's exact erf form) sets to exactly 0,
    and how many values that is: the model's own values after it where it is the model's
    activation, what it would make of the same values where it is not."""
    pre = feed_forward_values(trace, sentence, layer, "pre")  # [n, F]
    return float((ACTIVATIONS[activation](pre) == 0).double().mean()), pre.numel()


def share_spec(share: float) -> str:
    """The format a share of exact zeros is written in, answer and text alike: one decimal of
    percent, two under 1% (0.23%, not 0.2%)."""
    return ".2%" if 0 < share < 0.01 else ".1%"


def _percent(guess: str) -> float | None:
    try:
        value = float(guess.rstrip("% "))
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 <= value <= 100 else None


@functools.cache
def gelu_zero_from() -> float:
    """The negative input nearest 0 whose float32 GELU (exact erf form) is exactly 0 (about
    -5.52): below it float32 rounds x·Φ(x) to 0, in a band at first and then everywhere; above it
    only an input of 0 gives 0. Found on a grid of steps of 1e-4."""
    grid = torch.linspace(-12.0, -1e-4, 119_999)  # [n]
    return float(grid[F.gelu(grid) == 0].max())


def zero_share(trace: Trace, sentence: int, layer: int, activation: str) -> Prediction:
    """The share (percent) of block `layer`'s values before the activation that `activation`
    ("relu" | "gelu") sets to exactly 0 (zero_share_of)."""
    share, count = zero_share_of(trace, sentence, layer, activation)
    name = {"relu": "ReLU", "gelu": "GELU"}[activation]
    shown = format(share, share_spec(share))
    values = dict(
        layer=layer, share=formatted(share, share_spec(share)), count=formatted(count, ",")
    )
    said = (
        Said(
            "in block {layer}, ReLU sets {share} of the {count} values before the activation to "
            "exactly zero: it turns every negative input into exactly 0",
            **values,
        )
        if activation == "relu"
        else Said(
            "in block {layer}, GELU sets {share} of the {count} values before the activation to "
            "exactly zero: GELU is exactly 0 only at an input of 0 and at inputs of {limit} or "
            "below, where float32 rounds x·Φ(x) to 0",
            limit=formatted(gelu_zero_from(), ".2f"),
            **values,
        )
    )

    def explain(guess: str) -> Said:
        picked = _percent(guess)
        if picked is None:
            return said
        gap = picked - 100 * share
        points = formatted(abs(gap), ".0f")
        how = (
            Said("spot on")
            if abs(gap) < 5
            else Said("{points} points too high", points=points)
            if gap > 0
            else Said("{points} points too low", points=points)
        )
        return Said(
            "You said {guess}%, {how}: {said}.", guess=formatted(picked, "g"), how=how, said=said
        )

    return Prediction(
        f"zero_share:{activation}",
        Said(
            "In block {layer}, what share of the feed-forward values does {name} set to exactly "
            "zero? (percent)",
            layer=layer,
            name=name,
        ),
        "number",
        (),
        shown.rstrip("%"),
        share,
        explain,
    )


def growth(ratio: float) -> Said:
    """How a norm changes by `ratio` (last over first): GROWS, SHRINKS or STAYS (GROWTH_BAND)."""
    return GROWS if ratio > GROWTH_BAND else SHRINKS if ratio < 1 / GROWTH_BAND else STAYS


def norm_growth(trace: Trace, sentence: int, norm_first: bool) -> Prediction:
    """Whether the residual stream's mean norm over the sentence's tokens grows from the
    embeddings to the last block (by more than GROWTH_BAND), shrinks, or stays about the same."""
    norms = mean_norm_by_depth(residual_norms(trace), sentence)  # [depth]
    first, last = float(norms.iloc[0]), float(norms.iloc[-1])
    last_block = len(norms) - 2  # depth d is the stream after block d - 1
    ratio = last / first
    truth = growth(ratio)
    placement = Said("pre-norm") if norm_first else Said("post-norm")
    values = dict(
        first=formatted(first, ".2f"),
        last=formatted(last, ".2f"),
        block=last_block,
        ratio=formatted(ratio, ".2f"),
        change=truth,
    )
    said = (
        Said(
            "in this pre-norm run the stream's mean norm goes from {first} at the embeddings "
            "to {last} after block {block} (x{ratio}): it {change}",
            **values,
        )
        if norm_first
        else Said(
            "in this post-norm run the stream's mean norm goes from {first} at the "
            "embeddings to {last} after block {block} (x{ratio}): it {change}",
            **values,
        )
    )
    choices = {choice: choice for choice in GROWTH_CHOICES}  # a guess (text) -> its Said

    def explain(guess: str) -> Said:
        if guess not in GROWTH_CHOICES:
            return said
        if guess == truth:
            return Said("Right: {said}.", said=said)
        return Said("Not quite: you said it {guess}; {said}.", guess=choices[guess], said=said)

    return Prediction(
        f"norm_growth:{placement}",
        Said(
            "Through the blocks of a {placement} model, the residual stream's norm...",
            placement=placement,
        ),
        "choice",
        GROWTH_CHOICES,
        truth,
        ratio,
        explain,
    )


def split_guess(guess: str, parts: int) -> list[str]:
    """A paired question's guess, one answer per part ("" where missing)."""
    pieces = [piece.strip() for piece in str(guess or "").split(PART_SEPARATOR.strip())]
    return (pieces + [""] * parts)[:parts]


def paired(
    question_id: str,
    question: Said,
    parts: tuple[Said, Said],
    first: Prediction,
    second: Prediction,
) -> Prediction:
    """Two predictions of one kind asked as one question: `parts` name them (the answer boxes'
    labels); the guess and the truth join the two answers with PART_SEPARATOR; the explanation
    gives each part's numbers, each part's explain("") being its numbers alone (a clause: the
    pair says "You skipped" once). `value` is the first part's."""
    if first.kind != second.kind:
        raise ValueError(f"cannot pair a {first.kind} question with a {second.kind} question")

    def explain(guess: str) -> Said:
        guesses = split_guess(guess, 2)
        if not any(guesses):  # skipped: said once, then each part's numbers
            return Said(
                "You skipped: {first}; {second}.",
                first=first.explain(""),
                second=second.explain(""),
            )
        one, two = (
            p.explain(g) if g else Said("You skipped: {said}.", said=p.explain(""))
            for p, g in zip((first, second), guesses, strict=True)
        )
        return Said("{first} {second}", first=one, second=two)

    return Prediction(
        question_id,
        question,
        first.kind,
        first.options,
        first.truth + PART_SEPARATOR + second.truth,
        first.value,
        explain,
        parts,
    )


def zero_shares(trace: Trace, sentence: int, layer: int) -> Prediction:
    """The share of block `layer`'s values before the activation that ReLU, and GELU, set to
    exactly 0: the same values for both (the ones the lesson's histogram draws)."""
    relu, gelu = (zero_share(trace, sentence, layer, name) for name in ("relu", "gelu"))
    return paired(
        f"zero_share:{layer}",
        Said(
            "In block {layer}, what share of the feed-forward values do ReLU, and GELU, set to "
            "exactly zero? (percent)",
            layer=layer,
        ),
        (Said("after ReLU"), Said("after GELU")),
        relu,
        gelu,
    )


def norm_growths(traces: dict[bool, Trace], sentence: int) -> Prediction:
    """Whether the stream's norm grows in pre-norm and in post-norm: `traces` holds the same
    weights and input with each placement ({True: pre-norm trace, False: post-norm trace})."""
    pre, post = (norm_growth(traces[first], sentence, first) for first in (True, False))
    return paired(
        "norm_growth:both",
        Said(
            "Through the blocks, does the residual stream's norm grow: in a pre-norm model, and "
            "in a post-norm one?"
        ),
        (Said("pre-norm"), Said("post-norm")),
        pre,
        post,
    )
