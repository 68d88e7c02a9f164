"""Predict, then reveal, in the Lesson: four steps ask a question about the live run before they
show anything that gives the answer away (each step declares its own: LessonStep.question in
app.lesson.steps); the step's text and figures appear with the reveal, beside the true value, the
student's guess and one sentence on the gap (encoder.inspect.predictions). A student may skip.
In a class the teacher opens the question to the room and reveals it to everyone at once. This
module draws; what a browser answered and the class live in the session
(app.controls.asking), which the page reaches through the registry.
"""

from __future__ import annotations

import streamlit as st

from app.i18n import _, percent
from app.keys import Key
from app.lesson.asked import choice_text, head_text, option_text
from app.streamlit_private import presenter_question_style
from app.user_text import literal
from encoder.inspect import predictions
from encoder.inspect.predictions import Prediction

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


# --- drawing ------------------------------------------------------------------------------------


def guess_widget(prediction: Prediction, label: str | None = None) -> str | None:
    """The answer control for the question's kind; the guess as text (None: not chosen; the
    stored value, the same in every language). The caller clears the controls when the
    question changes (app.controls.asking)."""
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
    return predictions.PART_SEPARATOR.join(  # as typed: "37.5" -> "37.5%", "37,5 %" in Spanish
        percent(float(part) / 100, len(part.partition(".")[2])) for part in parts
    )


def header(prediction: Prediction, present: bool) -> None:
    """The question on its own, large in presenter mode."""
    if present:
        presenter_question_style()
    st.subheader(literal(prediction.question), anchor=False)
    st.caption(_("Predict first: the step's figures appear with the answer."))


def show_reveal(prediction: Prediction, guess: str | None) -> None:
    truth, explain = answer_text(prediction, prediction.truth), prediction.explain(guess)
    said = (
        _("{question} The answer: {truth} · your guess: {guess}. {explain}",
          question=prediction.question, truth=truth, guess=answer_text(prediction, guess),
          explain=explain)
        if guess  # skipped: the explanation says so, once
        else _("{question} The answer: {truth}. {explain}", question=prediction.question,
               truth=truth, explain=explain)
    )  # fmt: skip
    st.success(literal(said))
