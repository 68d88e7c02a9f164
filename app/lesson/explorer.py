"""The attention explorer of a lesson step (app.lesson.text.ExplorerAt): the Attention view's
payload for the lesson's run and sentence (app.explorer_payloads, from the shared cache), for the
page and the handout alike (presenter mode's large labels are the page's:
app.components.attention_explorer)."""

from __future__ import annotations

from app.explorer_payloads import explorer_payload
from app.lesson.text import ExplorerAt, Lesson
from app.runs import Runs


def step_payload(lesson: Lesson, at: ExplorerAt) -> bytes | None:
    """The explorer's bytes for the step (the step's head at full resolution), or None where its
    attention cannot be drawn (a NaN in the weights, too many tokens or heads, the memory
    budget): the step then keeps its figure."""
    try:
        return explorer_payload(Runs(lesson.run), lesson.sentence, at.layer, at.head, lesson.random)
    except ValueError:
        return None
