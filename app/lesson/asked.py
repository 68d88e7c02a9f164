"""The lesson's questions in this run's language: the encoder's predictions
(encoder.inspect.predictions) give each question's id, options and truth (what a class stores:
the same in every language) and its text, parts and explanation as Saids, told here in this run's
language; and the answers' display. No Streamlit: the lesson's chapters (app.lesson.steps) build
their questions here, and app.lesson.questions draws them."""

from __future__ import annotations

import re
from dataclasses import replace

from app.i18n import told
from encoder.inspect import closest, predictions
from encoder.inspect.patching import question
from encoder.inspect.predictions import GROWTH_CHOICES, Prediction

HEAD_LABEL = re.compile(r"layer (\d+), head (\d+)")


def head_text(label: str) -> str:
    """A head as an answer ("layer 2, head 1", the stored value) in this run's language."""
    found = HEAD_LABEL.fullmatch(label)
    if found is None:
        return label
    return told(predictions.head_label(int(found[1]), int(found[2])))


def choice_text(choice: str) -> str:
    """A norm-growth answer (the stored value: GROWS, STAYS or SHRINKS) in this run's language."""
    return next((told(said) for said in GROWTH_CHOICES if said == choice), choice)


def option_text(prediction: Prediction, option: str) -> str:
    """One answer as shown (a head, a choice in this run's language; a token as it is)."""
    if prediction.kind == "head":
        return head_text(option)
    if prediction.kind == "choice":
        return choice_text(option)
    return option


def _told(asked: Prediction) -> Prediction:
    """The prediction with its question, parts and explanations in this run's language."""
    return replace(
        asked,
        question=told(asked.question),
        parts=tuple(told(part) for part in asked.parts),
        _explain=lambda guess: told(asked.explain(guess)),
    )


def top_key(*args) -> Prediction:
    """predictions.top_key, said in this run's language."""
    return _told(predictions.top_key(*args))


def strongest_head(*args) -> Prediction:
    """predictions.strongest_head, said in this run's language."""
    return _told(predictions.strongest_head(*args))


def zero_shares(*args) -> Prediction:
    """predictions.zero_shares, said in this run's language."""
    return _told(predictions.zero_shares(*args))


def norm_growths(*args) -> Prediction:
    """predictions.norm_growths, said in this run's language."""
    return _told(predictions.norm_growths(*args))


def closest_to_first(*args) -> Prediction:
    """closest.closest_to_first, said in this run's language."""
    return _told(closest.closest_to_first(*args))


def deciding_token(*args) -> Prediction:
    """encoder.inspect.patching's deciding_token, said in this run's language."""
    return _told(question.deciding_token(*args))
