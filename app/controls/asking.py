"""Predict, then reveal: a lesson step's question, asked before anything of the step, alone (a
guess, Reveal, Skip) or in a class (the teacher's panel: open, live tally, reveal to everyone; a
student's answer box). What this browser answered stays in its session; the class's side is
app.controls.classroom."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.classroom.store import ClassError
from app.controls import state
from app.controls.classroom import (
    TALLY_POLL_S,
    class_store,
    guarded,
    state_unsaid,
    still,
    student,
    teacher,
)
from app.i18n import _
from app.lesson.questions import (
    PAIRED_KINDS,
    SECOND_PART,
    WIDGET_KEYS,
    guess_widget,
    header,
    show_reveal,
)
from app.user_text import literal
from encoder.inspect.predictions import Prediction


def ask(prediction: Prediction, present: bool) -> bool:
    """The step's question, before anything of the step: True once this browser has the answer
    (the reveal drawn here, the step follows), False while it is asked (alone, or in a class)."""
    guess = answered(prediction)
    if guess is None and student():
        guess = _revealed_to_me(prediction)
    if guess is not None:
        show_reveal(prediction, guess)
        return True
    header(prediction, present)
    if state.get("_predict_for") != prediction.question_id:  # a new question: fresh controls
        for kind in PAIRED_KINDS:
            state.pop(WIDGET_KEYS[kind] + SECOND_PART)
        for name in WIDGET_KEYS.values():
            state.pop(name)
        state.put("_predict_for", prediction.question_id)
    if not class_question(prediction):
        ask_alone(prediction)
    return False


def _revealed_to_me(prediction: Prediction) -> str | None:
    """A student's answer ("" none) once the teacher revealed this question, marked answered
    here, before the page draws the question (a rerun from the answer box, inside this run,
    could end the run half drawn); None while it is not revealed."""
    code, me = student()
    current = state_unsaid(code)
    if current is None or current.question != prediction.question_id or not current.revealed:
        return None
    try:
        guess = class_store().my_answer(code, me, prediction.question_id) or ""
    except (ClassError, ValueError):  # the answer box says so
        return None
    mark_answered(prediction, guess)
    return guess


def answered(prediction: Prediction) -> str | None:
    """This browser's guess once it revealed or skipped the question ("" skipped), else None."""
    return (state.get("_predict_done") or {}).get(prediction.question_id)


def mark_answered(prediction: Prediction, guess: str) -> None:
    done = state.get("_predict_done") or {}
    state.put("_predict_done", {**done, prediction.question_id: guess})


def ask_alone(prediction: Prediction) -> None:
    """Outside a class: the guess, Reveal and Skip (the page reruns with the reveal)."""
    guess = guess_widget(prediction)
    check, skip = st.columns([1, 1])
    if check.button(_("Reveal"), type="primary", key="predict_reveal", disabled=guess is None):
        mark_answered(prediction, guess or "")
        st.rerun()
    if skip.button(_("Skip"), key="predict_skip"):
        mark_answered(prediction, "")
        st.rerun()


def class_question(prediction: Prediction) -> bool:
    """In a class: the teacher's question panel (open, live tally, reveal) or the student's
    answer box; False outside a class (the page asks on its own). The teacher's panel polls the
    tally while the question is open; the student's has no timer (the page's one timer,
    _student_poll, reruns the page when the class changes)."""
    if teacher():
        current = state_unsaid(teacher()[0])
        if current is None and state.get("_class_away"):  # the class's line says so, once;
            return True  # the page's watch (_store_watch) draws the panel again when it is back
        asking = current is not None and current.question == prediction.question_id
        polling = TALLY_POLL_S if asking and not current.revealed else None
        st.fragment(_teacher_question, run_every=polling)(prediction)
    elif student():
        st.fragment(_student_question)(prediction)
    return bool(teacher() or student())


def _teacher_question(prediction: Prediction) -> None:
    code, secret = still(teacher())
    away = _(
        "The class is unavailable right now (its store cannot be reached): the tally and Reveal "
        "come back by themselves when it is back."
    )
    current = guarded(lambda: class_store().state(code), away=away)
    if current is None:
        return
    qid = prediction.question_id
    if current.question != qid:
        if st.button(_("Ask the class"), key="class_open", type="primary"):
            guarded(lambda: class_store().open_question(code, secret, qid))
            st.rerun()
        return
    tally = guarded(lambda: class_store().tally(code, qid, secret), away=away)
    if tally is None:
        return
    joined = guarded(lambda: class_store().students(code), away=away) or 0
    st.markdown(_("**{count} of {joined}** students answered", count=tally.count, joined=joined))
    _tally_chart(tally, prediction if current.revealed else None)
    revealing = not current.revealed and st.button(_("Reveal to everyone"), key="class_reveal")
    if revealing and guarded(lambda: class_store().reveal(code, secret)) is not None:
        mark_answered(prediction, "")
        st.rerun()


def _tally_chart(tally, prediction: Prediction | None) -> None:
    answer, students = _("answer"), _("students")
    table = pd.DataFrame(tally.counts, columns=[answer, students])
    if prediction is not None:
        table[_("true")] = table[answer] == prediction.truth
    st.dataframe(table, hide_index=True)


def _student_question(prediction: Prediction) -> None:
    code, me = still(student())
    qid = prediction.question_id
    current = state_unsaid(code)  # the follow line says what is wrong with the class
    away = current is None and state.get("_class_away")  # the question stays; Send is refused
    if not away and (current is None or current.question != qid):
        st.info(_("Wait for your teacher to open the question."))
        return
    if current is not None and current.revealed:  # revealed since this page was drawn
        st.rerun()
    with st.form("class_answer", border=False):  # choosing sends nothing: one rerun, on Send
        guess = guess_widget(prediction, _("Your answer"))
        sent = st.form_submit_button(_("Send"), key="class_send", type="primary")
    if sent:
        if guess is None:
            st.warning(_("Choose an answer first (or leave it: skipping is fine)."))
        else:
            counted = not away and guarded(
                lambda: class_store().answer(code, me, qid, guess) or True
            )
            state.put("_class_refused", None if counted else qid)
    mine = None if away else guarded(lambda: class_store().my_answer(code, me, qid))
    if mine:
        counted = _("Counted: {answer} (you can change it until the reveal).", answer=mine)
        st.success(literal(counted))
    elif state.get("_class_refused") == qid:  # said until it is counted, the page redrawn too
        if away:
            st.info(
                _(
                    "Your answer was not counted (the class is unavailable right now): send it "
                    "again."
                )
            )
        else:
            st.info(_("Your answer was not counted: send it again."))
