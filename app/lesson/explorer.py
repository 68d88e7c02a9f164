"""The attention explorer of a lesson step (app.lesson.text.ExplorerAt): the Attention view's
payload for the lesson's run and sentence (app.explorer_payloads, from the shared cache), for the
page and the handout alike; with large text in presenter mode (every label 16 px or more)."""

from __future__ import annotations

from app.explorer_payloads import explorer_payload
from app.lesson.text import ExplorerAt, Lesson
from app.runs import Runs
from encoder.web.payload import with_large_text


def step_payload(lesson: Lesson, at: ExplorerAt, *, large_text: bool = False) -> bytes | None:
    """The explorer's bytes for the step (the step's head at full resolution; `large_text`:
    presenter mode's labels), or None where its attention cannot be drawn (a NaN in the weights,
    too many tokens or heads, the memory budget): the step then keeps its figure."""
    try:
        data = explorer_payload(Runs(lesson.run), lesson.sentence, at.layer, at.head, lesson.random)
    except ValueError:
        return None
    return with_large_text(data) if large_text else data
