"""Predict, then reveal, in the Lesson: four steps ask a question about the live run before they
show anything that gives the answer away (each step declares its own: LessonStep.question in
app.lesson.steps); the step's text and figures appear with the reveal, beside the true value, the
student's guess and one sentence on the gap (encoder.inspect.predictions). A student may skip.
In a class the teacher opens the question to the room and reveals it to everyone at once. This
module draws; what a browser answered and the class live in the session
(app.controls.classroom), which the page reaches through the registry.
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from app.i18n import _
from app.keys import Key
from app.lesson.text import localised
from app.streamlit_private import presenter_question_style
from app.user_text import literal
from encoder.core.capture import Trace
from encoder.inspect import predictions
from encoder.inspect.norms import mean_norm_by_depth, residual_norms
from encoder.inspect.predictions import GROWS, SHRINKS, STAYS, Prediction

WIDGET_KEYS = {"token": "predict_token", "head": "predict_head", "number": "predict_number",
               "choice": "predict_choice"}  # fmt: skip
SECOND_PART = "_2"  # a paired question's second answer box: WIDGET_KEYS' key + this
PAIRED_KINDS = ("number", "choice")  # the kinds a paired question has
# The guess controls, by kind, the question they answer, and {question id: guess ("" skipped)}
# of those this browser revealed.
KEYS = (
    *(Key(name) for name in WIDGET_KEYS.values()),
    *(Key(WIDGET_KEYS[kind] + SECOND_PART) for kind in PAIRED_KINDS),
    Key("_predict_for"),
    Key("_predict_done"),
)


HEAD_LABEL = re.compile(r"layer (\d+), head (\d+)")


# --- the questions, in this run's language ------------------------------------------------------
# The encoder's predictions (encoder.inspect.predictions) give each question's id, options and
# truth (what a class stores: the same in every language); these give its text and explanation
# in this run's language (in English, the encoder's own words), and the answers' display.


def head_text(label: str) -> str:
    """A head as an answer ("layer 2, head 1", the stored value) in this run's language."""
    found = HEAD_LABEL.fullmatch(label)
    if found is None:
        return label
    return _("layer {layer}, head {head}", layer=found[1], head=found[2])


def choice_text(choice: str) -> str:
    """A norm-growth answer (the stored value: GROWS, STAYS or SHRINKS) in this run's language."""
    return {GROWS: _("grows"), STAYS: _("stays about the same"), SHRINKS: _("shrinks")}.get(
        choice, choice
    )


def option_text(prediction: Prediction, option: str) -> str:
    """One answer as shown (a head, a choice in this run's language; a token as it is)."""
    if prediction.kind == "head":
        return head_text(option)
    if prediction.kind == "choice":
        return choice_text(option)
    return option


def _token_named(tokens: list[str], position: int) -> str:
    return _("{token} (position {position})", token=repr(str(tokens[position])), position=position)


def _two(value: float) -> str:
    return localised(f"{value:.2f}")


def _percent(value: float) -> str:
    return localised(f"{value:.1%}")


def top_key(
    attention: np.ndarray, tokens: list[str], query: int, layer: int, head: int
) -> Prediction:
    """predictions.top_key, said in this run's language."""
    asked = predictions.top_key(attention, tokens, query, layer, head)
    row = np.asarray(attention[layer, head, query], dtype=np.float64)  # [key]
    best = int(row.argmax())
    where = head_text(predictions.head_label(layer, head))
    q = _token_named(tokens, query)

    def explain(guess: str) -> str:
        truth = _(
            "in {head}, {query} gives its most attention, {weight}, to {key}",
            head=where,
            query=q,
            weight=_two(row[best]),
            key=_token_named(tokens, best),
        )
        picked = predictions._position(guess, len(tokens))
        if picked is None:
            return _("You skipped: {said}.", said=truth)
        if picked == best:
            return _("Right: {said}.", said=truth)
        ratio = row[best] / max(row[picked], 1e-12)
        return _(
            "Not quite: {said}; your {token} gets {weight}, {ratio}x less.",
            said=truth,
            token=repr(tokens[picked]),
            weight=_two(row[picked]),
            ratio=localised(f"{ratio:.1f}"),
        )

    question = _("In {head}, which token does {query} attend to most?", head=where, query=q)
    return replace(asked, question=question, _explain=explain)


def strongest_head(effects: pd.DataFrame) -> Prediction:
    """predictions.strongest_head, said in this run's language."""
    asked = predictions.strongest_head(effects)
    in_order = effects.sort_values(["layer", "head"])
    change = {predictions.head_label(r.layer, r.head): r.change for r in in_order.itertuples()}
    truth = asked.truth
    median = float(effects["change"].median())

    def explain(guess: str) -> str:
        said = _(
            "switching off {head} changes the output by {change} on average over the tokens, the "
            "most of the {count} heads (the median head: {median})",
            head=head_text(truth),
            change=_percent(change[truth]),
            count=len(change),
            median=_percent(median),
        )
        if guess not in change:
            return _("You skipped: {said}.", said=said)
        if guess == truth:
            return _("Right: {said}.", said=said)
        return _(
            "Not quite: {said}; your {head} changes it by {change}.",
            said=said,
            head=head_text(guess),
            change=_percent(change[guess]),
        )

    question = _("Which head, switched off, changes the model's output most?")
    return replace(asked, question=question, _explain=explain)


def _zero_share_explain(trace: Trace, sentence: int, activation: str):
    share, count = predictions.zero_share_of(trace, sentence)
    name = {"relu": "ReLU", "gelu": "GELU"}.get(activation, activation)
    why = (
        _("ReLU turns every negative input into exactly 0")
        if activation == "relu"
        else _(
            "GELU is exactly 0 only at an input of 0 and at inputs of {limit} or below, where "
            "float32 rounds x·Φ(x) to 0",
            limit=_two(predictions.gelu_zero_from()),
        )
    )

    def explain(guess: str) -> str:
        said = _(
            "after {name}, {share} of the {count} feed-forward values are exactly 0: {why}",
            name=name,
            share=_percent(share),
            count=localised(f"{count:,}"),
            why=why,
        )
        picked = predictions._percent(guess)
        if picked is None:
            return _("You skipped: {said}.", said=said)
        gap = picked - 100 * share
        points = localised(f"{abs(gap):.0f}")
        how = (
            _("spot on")
            if abs(gap) < 5
            else _("{points} points too high", points=points)
            if gap > 0
            else _("{points} points too low", points=points)
        )
        return _(
            "You said {guess}%, {how}: {said}.",
            guess=localised(f"{picked:g}"),
            how=how,
            said=said,
        )

    return explain


def zero_shares(traces: dict[str, Trace], sentence: int) -> Prediction:
    """predictions.zero_shares, said in this run's language."""
    asked = predictions.zero_shares(traces, sentence)
    relu, gelu = (_zero_share_explain(traces[name], sentence, name) for name in ("relu", "gelu"))
    return replace(
        asked,
        question=_(
            "What share of the feed-forward values are exactly 0 after ReLU, and after GELU? "
            "(percent)"
        ),
        parts=(_("after ReLU"), _("after GELU")),
        _explain=_paired(relu, gelu),
    )


def _paired(first, second):
    def explain(guess: str) -> str:
        guesses = predictions.split_guess(guess, 2)
        return " ".join(said(g.strip()) for said, g in zip((first, second), guesses, strict=True))

    return explain


def _norm_growth_explain(trace: Trace, sentence: int, norm_first: bool):
    norms = mean_norm_by_depth(residual_norms(trace), sentence)
    first, last = float(norms.iloc[0]), float(norms.iloc[-1])
    ratio = last / first
    truth = predictions.growth(ratio)
    values = {
        "first": localised(f"{first:.1f}"),
        "last": localised(f"{last:.1f}"),
        "block": len(norms) - 2,  # depth d is the stream after block d - 1
        "ratio": localised(f"{ratio:.2f}"),
    }

    def explain(guess: str) -> str:
        said = (
            _(
                "in this pre-norm run the stream's mean norm goes from {first} at the embeddings "
                "to {last} after block {block} (x{ratio}): it {change}",
                change=choice_text(truth),
                **values,
            )
            if norm_first
            else _(
                "in this post-norm run the stream's mean norm goes from {first} at the "
                "embeddings to {last} after block {block} (x{ratio}): it {change}",
                change=choice_text(truth),
                **values,
            )
        )
        if guess not in predictions.GROWTH_CHOICES:
            return _("You skipped: {said}.", said=said)
        if guess == truth:
            return _("Right: {said}.", said=said)
        return _("Not quite: you said it {guess}; {said}.", guess=choice_text(guess), said=said)

    return explain


def norm_growths(traces: dict[bool, Trace], sentence: int) -> Prediction:
    """predictions.norm_growths, said in this run's language."""
    asked = predictions.norm_growths(traces, sentence)
    pre, post = (_norm_growth_explain(traces[first], sentence, first) for first in (True, False))
    return replace(
        asked,
        question=_(
            "Through the blocks, does the residual stream's norm grow: in a pre-norm model, and "
            "in a post-norm one?"
        ),
        parts=(_("pre-norm"), _("post-norm")),
        _explain=_paired(pre, post),
    )


# --- drawing ------------------------------------------------------------------------------------


def guess_widget(prediction: Prediction, label: str | None = None) -> str | None:
    """The answer control for the question's kind; the guess as text (None: not chosen; the
    stored value, the same in every language). The caller clears the controls when the
    question changes (app.controls.classroom)."""
    label = _("Your guess") if label is None else label
    key = WIDGET_KEYS[prediction.kind]
    if prediction.parts:  # one box per part, side by side; chosen only when both are
        boxes = st.columns(len(prediction.parts))
        guesses = [
            _one_guess(
                prediction,
                _("{label}, {part}", label=label, part=part),
                key + SECOND_PART * index,
                box,
            )  # fmt: skip
            for index, (part, box) in enumerate(zip(prediction.parts, boxes, strict=True))
        ]
        return None if None in guesses else predictions.PART_SEPARATOR.join(guesses)
    return _one_guess(prediction, label, key, st)


def _one_guess(prediction: Prediction, label: str, key: str, where) -> str | None:
    if prediction.kind == "number":
        value = where.number_input(
            _("{label} (percent)", label=label), 0.0, 100.0, step=5.0, value=None, key=key
        )
        return None if value is None else f"{value:g}"
    if prediction.kind == "token":
        return where.pills(label, prediction.options, key=key)
    if prediction.kind == "head":
        return where.selectbox(label, prediction.options, index=None, key=key,
                               placeholder=_("a head"), format_func=head_text)  # fmt: skip
    return where.radio(label, prediction.options, index=None, key=key, format_func=choice_text)


def answer_text(prediction: Prediction, answer: str) -> str:
    """An answer as shown, in this run's language: percent signs on numbers, each part of a
    paired one."""
    parts = answer.split(predictions.PART_SEPARATOR)
    if prediction.kind != "number":
        return predictions.PART_SEPARATOR.join(option_text(prediction, part) for part in parts)
    return predictions.PART_SEPARATOR.join(f"{localised(part)}%" for part in parts)


def header(prediction: Prediction, present: bool) -> None:
    """The question on its own, large in presenter mode."""
    if present:
        presenter_question_style()
    st.subheader(literal(prediction.question), anchor=False)
    st.caption(_("Predict first: the step's figures appear with the answer."))


def show_reveal(prediction: Prediction, guess: str | None) -> None:
    truth = answer_text(prediction, prediction.truth)
    mine = answer_text(prediction, guess) if guess else _("skipped")
    st.success(literal(_("{question} The answer: {truth} · your guess: {guess}. {explain}",
                         question=prediction.question, truth=truth, guess=mine,
                         explain=prediction.explain(guess))))  # fmt: skip
