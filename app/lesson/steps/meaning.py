"""The lesson's closing step, what it is all for: the live model's sentence embeddings, asked
first as a question (which of these sentences does it find closest to the first?), then the
cosine matrix at every depth; and whether it predicts masked words."""

from __future__ import annotations

from app.i18n import _, told
from app.lesson.asked import closest_to_first
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text, Typed, sentence
from app.page.figures import matrix_figure
from app.runs import Run
from app.sources import no_head_text
from encoder.inspect.closest import CLOSEST_SENTENCES
from encoder.inspect.masked import mask_token_of
from encoder.inspect.predictions import Prediction


def _reading(lesson: Lesson) -> Run | str:
    """The live model reading the step's sentences, or why it cannot (a toy task's symbols, a
    masked-word model's vocabulary without one of their words): the step says it."""
    run = lesson.run
    if run.reading is None or (run.source is not None and run.source.reads_symbols):
        return _(
            "{model} reads a toy task's symbols, not sentences: open What it is for with MiniLM "
            "to see sentence embeddings.",
            model=lesson.model_title,
        )
    try:
        return run.reading(list(CLOSEST_SENTENCES))
    except ValueError as error:  # a word its vocabulary lacks (the task's check says which)
        return _("{model} cannot read the step's sentences: {why}", model=lesson.model_title,
                 why=told(error))  # fmt: skip


def closest_question(lesson: Lesson) -> Prediction | None:
    reading = _reading(lesson)
    if isinstance(reading, str):
        return None
    return closest_to_first(reading.similarity[-1], list(CLOSEST_SENTENCES))


def meaning_step(lesson: Lesson) -> Step:
    text, reading = Text(), _reading(lesson)
    text.say(
        _(
            "Everything so far serves an output. {model} pools its last stream into one vector "
            "per sentence ({pooling}). Two sentences whose vectors point the same way (a high "
            "cosine) mean alike to it: this is what search, retrieval and clustering use.",
            model=lesson.model_title,
            pooling=told(lesson.run.pooling.why),
        )
    )
    if isinstance(reading, str):
        text.say(reading)
        return Step(text, links=[OpenIn("What it is for", {})])
    cosines = reading.similarity[-1][0]
    first, swapped, paraphrase, other = (Typed(s) for s in CLOSEST_SENTENCES)
    text.say(
        *sentence(
            _(
                "To {first}, the same words in another order, {swapped}, have a cosine of "
                "{a}; the same meaning in other words, {paraphrase}, {b}; another topic, "
                "{other}, {c}."
            ),
            first=first,
            swapped=swapped,
            paraphrase=paraphrase,
            other=other,
            a=text.num("cosine: same words, other order", float(cosines[1]), ".3f"),
            b=text.num("cosine: same meaning, other words", float(cosines[2]), ".3f"),
            c=text.num("cosine: another topic", float(cosines[3]), ".3f"),
        )
    )
    text.say(
        _(
            "Mean pooling adds the tokens up, so it cannot see their order on its own: only "
            "what attention mixed into each token can tell the two first sentences apart. The "
            "figure shows the cosines at every depth: drag its slider to see where the "
            "sentences become alike."
        )
    )
    head, why = lesson.run.masked_head()
    if head is None:
        text.say(_("The other output, the masked word: {why}", why=no_head_text(why)))
    else:
        text.say(
            _(
                "{model} also has a masked-LM head: type {mask} in a sentence in What it is for "
                "to see its guesses at every layer.",
                model=lesson.model_title,
                mask=mask_token_of(lesson.run.source.reader),
            )
        )
    figure = matrix_figure([reading], _("Cosine of each pair of sentences"))
    return Step(
        text,
        figures=[("lesson_similarity", figure)],
        links=[OpenIn("What it is for", {})],
    )


MEANING = LessonStep(lambda: _("What it is all for"), meaning_step, question=closest_question)
