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
from encoder.core.said import Said
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


def _formula(activation: str) -> tuple[str, str]:
    """by_hand.ACTIVATION_FORMULAS's (name, formula) of `activation`, in the run's language."""
    name, formula = by_hand.ACTIVATION_FORMULAS[activation]
    if activation in ("gelu", "geglu"):
        formula = _("h · Φ(h), Φ the standard normal's cumulative distribution")
    return name, formula


def ask(question: Question, numbers: HandNumbers) -> str:
    """The question as encoder.exercises.by_hand asks it (`question.ask`), in the run's
    language."""
    query, key, d_k, t = numbers.query + 1, numbers.key + 1, numbers.d_k, numbers.tokens
    if question.key == "score":
        return _("The score of query {query} against key {key}: q · k{key}.", query=query, key=key)
    if question.key == "scaled":
        return _("The scaled score: q · k{key} / √d_k, with d_k = {d_k}.", key=key, d_k=d_k)
    if question.key == "softmax":
        return _(
            "Query {query}'s attention row: the softmax of its {t} scaled scores "
            "(q · k_j / √{d_k} for j = 1..{t}).",
            query=query,
            t=t,
            d_k=d_k,
        )
    if question.key == "weighted":
        return _(
            "Query {query}'s output: the weighted sum of the value rows, Σ_j a_j v_j, with the "
            "attention row a from the question before ({d_k} numbers).",
            query=query,
            d_k=d_k,
        )
    if question.key == "norm":
        n = len(numbers.vector)
        if numbers.norm_type == "layernorm":
            return _(
                "LayerNorm of x (gain 1, bias 0): (x − mean) / std, with the variance averaged "
                "over the {n} features ({n} numbers).",
                n=n,
            )
        return _(
            "RMSNorm of x (gain 1): x / rms, with rms = √(mean of x²) over the {n} features "
            "({n} numbers).",
            n=n,
        )
    if question.key == "activation":
        n = len(numbers.hidden)
        name, formula = _formula(numbers.activation)
        if not numbers.gate:
            return _(
                "{name} of the feed-forward's hidden vector h: {formula}, for each of its {n} "
                "numbers.",
                name=name,
                formula=formula,
                n=n,
            )
        return _(
            "{glu} of the feed-forward: {name}(h) · g for each of its {n} features, h the half "
            "of the first linear layer's output that goes through {name} ({formula}) and g the "
            "other half, the gate.",
            glu=ACTIVATION_NAMES[numbers.activation],
            name=name,
            formula=formula,
            n=n,
        )
    return question.ask


def attention_notes(cfg) -> list[str]:
    """by_hand.attention_notes(cfg) in the run's language: what this model's attention does
    that the row by hand leaves out."""
    notes = []
    if cfg.positional == "rope":
        notes.append(
            _(
                "This model turns each q and k by its position before the dot product (RoPE): "
                "read the q and k here as already turned; every question stays the same."
            )
        )
    local = [layer for layer in range(cfg.num_layers) if cfg.is_local(layer)]
    if local:
        values = dict(window=cfg.attention_window, reach=cfg.attention_window // 2)
        if len(local) == cfg.num_layers:
            notes.append(
                _(
                    "Every layer of this model attends through a local window of {window}: a "
                    "query there sees only the keys at most {reach} positions away, its softmax "
                    "over those alone; the row here sees every key, as a model with the window "
                    "off does.",
                    **values,
                )
            )
        elif len(local) == 1:
            notes.append(
                _(
                    "Layer {listed} of this model (of 0–{last}) attends through a local window "
                    "of {window}: a query there sees only the keys at most {reach} positions "
                    "away, its softmax over those alone; the row here is a global layer's, "
                    "where every key counts.",
                    listed=local[0],
                    last=cfg.num_layers - 1,
                    **values,
                )
            )
        else:
            notes.append(
                _(
                    "Layers {listed} of this model (of 0–{last}) attend through a local window "
                    "of {window}: a query there sees only the keys at most {reach} positions "
                    "away, its softmax over those alone; the row here is a global layer's, "
                    "where every key counts.",
                    listed=", ".join(map(str, local)),
                    last=cfg.num_layers - 1,
                    **values,
                )
            )
    return notes


def _answer(question: Question, index: int, numbers: HandNumbers) -> None:
    """One question: its answer box, the verdict, and the worked solution once answered or asked
    for."""
    with st.container(border=True):
        st.markdown(f"**{index}.** {ask(question, numbers)}")
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


def said(sentence: str) -> str:
    """What by_hand says (a Said) in the run's language, a mistake's name inside it ("It looks
    like {mistake}.", the mistake a Said of its own) told too."""
    values = getattr(sentence, "values", {})
    if any(isinstance(value, Said) for value in values.values()):
        told_values = {k: told(v) if isinstance(v, Said) else v for k, v in values.items()}
        sentence = Said(sentence.template, **told_values)
    return told(sentence)


def verdict_text(verdict: by_hand.Verdict) -> str:
    """A verdict's sentences in the run's language (in English, `verdict.message`); Chinese
    puts no space between sentences."""
    return ("" if language() == "zh" else " ").join(said(s) for s in verdict.sentences)


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
    notes = attention_notes(cfg)
    if notes:  # what this model's attention does that the row by hand leaves out
        st.info(" ".join(notes))
    numbers = by_hand.draw(int(seed), cfg.norm_type, cfg.activation)
    _givens(numbers)
    for index, question in enumerate(numbers.questions, start=1):
        _answer(question, index, numbers)
