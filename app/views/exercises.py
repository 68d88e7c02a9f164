"""The Exercises view: attention, a norm and an activation worked by hand, with small numbers.

A set of numbers (encoder.exercises.by_hand) is one attention row of a tiny single-head model
(d_k = 2 to 4, three to five tokens, every number with one decimal), a short vector for the
sidebar's norm and one for its activation. Each question checks the answer typed within the
tolerance it states, and shows its worked solution after an answer or on "Show me". What a
student types is read as numbers only; nothing is evaluated. The set number is in the link, so a
teacher can give a whole class the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from app.i18n import _, language, localised, symbols, told
from app.keys import Key, Selection
from app.runs import Runs
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES
from encoder.exercises import by_hand
from encoder.exercises.by_hand import AnswerError, HandNumbers, Question, number

# The set of numbers (in the link, so a class can share one), and each question's answer typed
# and its "Show me".
ANSWER_KEYS = tuple(f"ex_{question}" for question in by_hand.QUESTION_KEYS)
SHOW_KEYS = tuple(f"ex_show_{question}" for question in by_hand.QUESTION_KEYS)
KEYS = (
    Key("ex_set", 0, in_url=True, bounds=(0, by_hand.MAX_SET)),
    *(Key(name, "") for name in ANSWER_KEYS),
    *(Key(name, False) for name in SHOW_KEYS),
)


def new_numbers_values(current: int) -> dict[str, object]:
    """The next set of numbers after `current`, with its answers and solutions cleared (what the
    "New numbers" button writes)."""
    return {
        "ex_set": (current + 1) % (by_hand.MAX_SET + 1),
        **dict.fromkeys(ANSWER_KEYS, ""),
        **dict.fromkeys(SHOW_KEYS, False),
    }


def _row(values: tuple[float, ...]) -> str:
    return "(" + ", ".join(number(v) for v in values) + ")"


def _givens(numbers: HandNumbers) -> None:
    """The numbers every question works from."""
    attention, vectors = st.columns([3, 2])
    with attention:
        st.markdown(
            _(
                "**One attention head**, d_k = {d_k}, {tokens} tokens. "
                "Query {query}'s row: **q = {q}**",
                d_k=numbers.d_k,
                tokens=numbers.tokens,
                query=numbers.query + 1,
                q=_row(numbers.q),
            )
        )
        table = pd.DataFrame(
            {
                _("token"): [
                    _("{position} (the query)", position=j + 1)
                    if j == numbers.query
                    else f"{j + 1}"
                    for j in range(numbers.tokens)
                ],
                _("key k_j"): [_row(k) for k in numbers.keys],
                _("value v_j"): [_row(v) for v in numbers.values],
            }
        )
        st.table(table, hide_index=True)
    with vectors:
        norm = NORM_TYPE_NAMES[numbers.norm_type]
        st.markdown(
            _("**A vector x** for the {norm}:", norm=norm) + f"  \nx = {_row(numbers.vector)}"
        )
        activation = ACTIVATION_NAMES[numbers.activation]
        gate = (
            "  \n" + _("and its gate g = {gate}", gate=_row(numbers.gate)) if numbers.gate else ""
        )
        st.markdown(
            _("**A hidden vector h** of the feed-forward ({activation}):", activation=activation)
            + f"  \nh = {_row(numbers.hidden)}{gate}"
        )


def _answer(question: Question, index: int) -> None:
    """One question: its answer box, the verdict, and the worked solution once answered or asked
    for."""
    with st.container(border=True):
        st.markdown(f"**{index}.** {told(question.ask)}")
        between = "; " if symbols()[0] == "," else ", "  # as by_hand.parse_answer reads them
        example = (
            localised("0.25")
            if question.count == 1
            else between.join([localised("0.1")] * question.count)
        )
        typed = st.text_input(
            _("Your answer"),
            key=f"ex_{question.key}",
            persist_state="session",
            max_chars=by_hand.MAX_ANSWER_CHARS,
            placeholder=_("e.g. {example}", example=example),
            help=_("Numbers only, separated by commas or spaces; nothing you type is run."),
        )
        st.caption(
            _("Checked within ±{tolerance}.", tolerance=number(question.tolerance))
            if question.count == 1
            else _("Checked within ±{tolerance} each.", tolerance=number(question.tolerance))
        )
        answered = False
        if typed.strip():
            try:
                verdict = question.check(by_hand.parse_answer(typed, question.count, symbols()[0]))
            except AnswerError as problem:
                st.warning(told(problem))
            else:
                answered = True
                (st.success if verdict.correct else st.error)(verdict_text(verdict))
        shown = st.toggle(
            _("Show me"), key=f"ex_show_{question.key}", persist_state="session", disabled=answered
        )
        if answered or shown:
            st.code("\n".join(question.steps), language=None, wrap_lines=True)


def verdict_text(verdict: by_hand.Verdict) -> str:
    """A verdict's sentences in the run's language (in English, `verdict.message`); Chinese
    puts no space between sentences."""
    return ("" if language() == "zh" else " ").join(told(s) for s in verdict.sentences)


def _where_set(runs: Runs) -> str:
    """Where the norm and activation are chosen: the sidebar for random weights; a trained or
    uploaded model's are its own."""
    if runs.a.key.source == "random":
        return _("set them in the sidebar")
    return _("this model's own: to choose others, pick random weights in the sidebar")


def draw(runs: Runs, chosen: Selection, *, new_numbers: Callable[[], None]) -> None:
    """The view for setup A's architecture (its norm and activation); `new_numbers` is the
    "New numbers" button's callback."""
    cfg = runs.a.cfg
    st.header(_("Exercises: attention by hand"))
    norm, activation = NORM_TYPE_NAMES[cfg.norm_type], ACTIVATION_NAMES[cfg.activation]
    st.caption(
        _(
            "Pencil or calculator: every number has one decimal. Work through one attention row, "
            "then the {norm} and the {activation} this architecture uses ({where}). "
            "Each answer is checked as you press Enter.",
            norm=norm,
            activation=activation,
            where=_where_set(runs),
        )
    )
    left, right = st.columns([1, 3], vertical_alignment="bottom")
    seed = left.number_input(
        _("Set of numbers"),
        min_value=0,
        max_value=by_hand.MAX_SET,
        key="ex_set",
        persist_state="session",
        help=_("The same set gives everyone the same numbers: name one for the whole class."),
    )
    right.button(_("New numbers"), key="ex_new", on_click=new_numbers)
    notes = [told(note) for note in by_hand.attention_notes(cfg)]
    if notes:  # what this model's attention does that the row by hand leaves out
        st.info(" ".join(notes))
    numbers = by_hand.draw(int(seed), cfg.norm_type, cfg.activation)
    _givens(numbers)
    for index, question in enumerate(numbers.questions, start=1):
        _answer(question, index)
