"""The lesson's patching step, asked first: where does the model decide what "it" refers to?
The lesson's sentence and the same with one word changed (encoder.inspect.patching's
one_word_changed); at the middle layer, which token's stream restored from the first brings
back the most of its output; then the residual grid, its sentence, and the Interventions view."""

from __future__ import annotations

from app.charts.patching import grid_figure
from app.i18n import _, told_sentence
from app.jobs import PatchJob
from app.lesson.asked import deciding_token
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text, Typed, sentence
from app.page.patching import patching, token_count
from encoder.inspect.patching import one_word_changed
from encoder.inspect.predictions import Prediction


def _patched(lesson: Lesson) -> tuple[PatchJob | str, str, str]:
    """The residual grid's job for the lesson's sentence and a one-word change (waited for), or
    why there is none; with the two sentences."""
    clean = lesson.run.sentences[lesson.sentence]
    changed = one_word_changed(clean, token_count(lesson.run))
    if changed is None:
        why = _("No word of this sentence can be changed keeping its token count.")
        return why, clean, clean
    job = patching(lesson.run, clean, changed[0], "cosine")
    if isinstance(job, PatchJob):
        job.wait()
        if job.error is not None:
            return told_sentence(job.error), clean, changed[0]
    return job, clean, changed[0]


def deciding_question(lesson: Lesson) -> Prediction | None:
    job, _clean, _corrupted = _patched(lesson)
    if isinstance(job, str):
        return None
    return deciding_token(job.result.residual, job.result.tokens)


def deciding_step(lesson: Lesson) -> Step:
    text = Text()
    job, clean, corrupted = _patched(lesson)
    text.say(
        *sentence(
            _(
                "Two sentences that differ in one word: {clean} and {corrupted}. Run the second, "
                "copy one token's stream from the first into it at one layer, and measure how "
                "much of the first's output comes back (all of it, none, or a share). Where the "
                "number is large, that token at that layer holds what the changed word decides."
            ),
            clean=Typed(clean),
            corrupted=Typed(corrupted),
        )
    )
    if isinstance(job, str):
        text.say(job)
        return Step(text, links=[OpenIn("Interventions", {})])
    result = job.result
    layers = result.residual.shape[0]
    middle, tokens = (layers - 1) // 2, result.tokens
    best = int(result.residual[middle].argmax())
    text.say(
        *sentence(
            _(
                "At layer {layer}, restoring the stream of {token} brings back {value} of the "
                "clean output, the most of any token; at the output, {there}."
            ),
            layer=text.num("the middle layer", middle),
            token=Typed(tokens[best]),
            value=text.num("restored there", float(result.residual[middle, best]), ".2f"),
            there=text.num("restored by it at the output", float(result.residual[-1, best]), ".2f"),
        )
    )
    figure = grid_figure(
        result.residual.T,
        [f"{t} {token}" for t, token in enumerate(tokens)],
        [str(layer) for layer in range(layers)],
        title=_("Restoring the stream entering each layer (L: the output)"),
        colour_title=_("restored"),
        axes=(_("token"), _("layer")),
    )
    return Step(text, figures=[("lesson_patching", figure)], links=[OpenIn("Interventions", {})])


DECIDING = LessonStep(lambda: _("Where it is decided"), deciding_step, question=deciding_question)
