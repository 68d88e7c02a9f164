"""Predict, then reveal, in the Lesson: four steps ask a question about the live run before they
show anything that gives the answer away; the step's text and figures appear with the reveal,
beside the true value, the student's guess and one sentence on the gap (encoder.inspect.
predictions). A student may skip. In a class (app.lesson.classroom) the teacher opens the
question to the room and reveals it to everyone at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from app import state
from app.user_text import literal
from encoder.inspect import activations, predictions
from encoder.inspect.predictions import Prediction

if TYPE_CHECKING:  # the lesson's page imports this module
    from app.views.lesson_steps import Lesson

# lesson step (1-based) -> what it asks
ASKING_STEPS = {3: "top_key", 6: "strongest_head", 7: "norm_growth", 8: "zero_share"}
WIDGET_KEYS = {"token": "predict_token", "head": "predict_head", "number": "predict_number",
               "choice": "predict_choice"}  # fmt: skip
PRESENTER_QUESTION_CSS = """<style>
[data-testid="stMainBlockContainer"] [data-testid="stHeading"] h2 { font-size: 2.6rem; }
</style>"""


def hooks_needed(number: int, cfg) -> list[str]:
    """The hooks a step's question reads beyond the step's own (the feed-forward values)."""
    return activations.hook_names(cfg) if ASKING_STEPS.get(number) == "zero_share" else []


def prediction_for(lesson: Lesson, number: int) -> Prediction | None:
    """The question of lesson step `number`, its truth from this run; None where it asks none."""
    kind = ASKING_STEPS.get(number)
    run, sentence = lesson.run, lesson.sentence
    if kind == "top_key":
        n = lesson.n
        attention = run.attention[:, sentence, :, :n, :n]  # [L, H, n, n]
        return predictions.top_key(
            attention, lesson.tokens, lesson.query, lesson.layer, lesson.head
        )
    if kind == "strongest_head":
        effects = predictions.head_effects(
            run.trace, lambda head: run.heads_off((head,)).trace, sentence
        )
        return predictions.strongest_head(effects)
    if kind == "norm_growth":
        return predictions.norm_growth(run.trace, sentence, run.cfg.norm_first)
    if kind == "zero_share":
        return predictions.zero_share(run.trace, sentence, run.cfg.activation)
    return None


def guess_widget(prediction: Prediction, label: str = "Your guess") -> str | None:
    """The answer control for the question's kind; the guess as text (None: not chosen)."""
    key = WIDGET_KEYS[prediction.kind]
    if state.get("_predict_for") != prediction.question_id:  # a new question: a fresh control
        for name in WIDGET_KEYS.values():
            state.pop(name)
        state.put("_predict_for", prediction.question_id)
    if prediction.kind == "number":
        value = st.number_input(label + " (percent)", 0.0, 100.0, step=5.0, value=None, key=key)
        return None if value is None else f"{value:g}"
    if prediction.kind == "token":
        return st.pills(label, prediction.options, key=key)
    if prediction.kind == "head":
        return st.selectbox(label, prediction.options, index=None, key=key,
                            placeholder="layer.head")  # fmt: skip
    return st.radio(label, prediction.options, index=None, key=key)


def answered(prediction: Prediction) -> str | None:
    """This browser's guess once it revealed or skipped the question ("" skipped), else None."""
    return (state.get("_predict_done") or {}).get(prediction.question_id)


def header(prediction: Prediction, present: bool) -> None:
    """The question on its own, large in presenter mode."""
    if present:
        st.markdown(PRESENTER_QUESTION_CSS, unsafe_allow_html=True)
    st.header(literal(prediction.question), anchor=False)
    st.caption("Predict first: the step's figures appear with the answer.")


def ask_alone(prediction: Prediction) -> None:
    """Outside a class: the guess, Reveal and Skip (the page reruns with the reveal)."""
    guess = guess_widget(prediction)
    check, skip = st.columns([1, 1])
    if check.button("Reveal", type="primary", key="predict_reveal", disabled=guess is None):
        mark_answered(prediction, guess or "")
        st.rerun()
    if skip.button("Skip", key="predict_skip"):
        mark_answered(prediction, "")
        st.rerun()


def mark_answered(prediction: Prediction, guess: str) -> None:
    state.put("_predict_done", {**(state.get("_predict_done") or {}),
                                prediction.question_id: guess})  # fmt: skip


def show_reveal(prediction: Prediction, guess: str | None) -> None:
    truth = prediction.truth + ("%" if prediction.kind == "number" else "")
    mine = (guess + ("%" if prediction.kind == "number" else "")) if guess else "skipped"
    st.success(literal(f"{prediction.question} The answer: {truth} · your guess: {mine}. "
                       f"{prediction.explain(guess)}"))  # fmt: skip
