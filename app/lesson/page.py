"""The Lesson view: a guided path through the live model, one step at a time, every number this
run's. The steps are app.lesson.steps (their text model app.lesson.text); this module lays one
step out (text and its numbers on the left, figures and tables on the right), moves between
steps, opens each step's views at the same selection, switches presenter mode and offers the
whole lesson as a handout. Every move (a step, another view) goes through `follow(view,
values)`, which app.registry binds to the controls' link-following, as a link would. Four steps
ask a question first (each step declares its own; app.lesson.questions draws the answer
controls): `ask(prediction, present)` draws it and says whether this browser has the answer yet,
and `class_bar(step, present)` draws the class's line; app.registry binds both to the session's
side (app.controls.asking, app.controls.classroom).
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from app.charts.common import presenting
from app.components.attention_explorer import attention_explorer
from app.components.module_figures import module_figure
from app.i18n import _, in_this_language, localised
from app.keys import FITS_QUERY, POSITION_BOUNDS, Key, Selection
from app.lesson import handout
from app.lesson.explorer import step_payload
from app.lesson.steps import STEPS
from app.lesson.text import Lesson, Paragraph, Step, Typed, shown_table
from app.page.figures import Drawn
from app.page.layout import wide_table, written
from app.page.widgets import pick_sentence, show
from app.runs import Runs
from app.settings import LESSON_RULE_QUERY
from app.streamlit_private import announce
from app.user_text import literal, quoted
from encoder.inspect.predictions import Prediction
from encoder.web.payload import with_start

KEYS = (  # the step (1-based), its query (a position, or the rule's)
    Key("lesson", 1, in_url=True, bounds=(1, len(STEPS)), selects=True),
    Key(
        "lesson_query",
        LESSON_RULE_QUERY,
        in_url=True,
        bounds=(LESSON_RULE_QUERY, POSITION_BOUNDS[1]),
        selects=True,
        fits=FITS_QUERY,
    ),
)
Follow = Callable[[str, dict[str, object]], None]  # (view, URL values): open it, as a link would
Ask = Callable[[Prediction, bool], bool]  # (question, presenting): has this browser the answer?
ClassBar = Callable[..., None]  # (step, presenting, below=False): the class's line

PRESENTER_FIGURE_HEIGHT = 470  # the first figure fits beside the text; the others follow
TABLE_ROWS, PRESENTER_TABLE_ROWS = 12, 8  # a longer table scrolls past this many rows
TABLE_ROW_PX = 42  # an HTML table's row, about (presenter mode's larger type included)
# a figure title's line in the step's figure column (3/5 of the main area): 20 px titles beside
# the sidebar, and presenter mode's 23 px with the sidebar folded away
NORMAL_TITLE_CHARS, PRESENTER_TITLE_CHARS = 43, 56


def markdown(paragraph: Paragraph) -> str:
    """A paragraph for st.markdown: our text and the user's, both shown literally."""
    return "".join(
        quoted(part.text) if isinstance(part, Typed) else literal(part) for part in paragraph
    )


def draw(runs: Runs, chosen: Selection, follow: Follow, ask: Ask, class_bar: ClassBar) -> None:
    run = runs.a  # the lesson tells one model's story
    sentence = pick_sentence(run.sentences, chosen.sentence)
    number = min(max(chosen.lesson, 1), len(STEPS))
    query = None if chosen.lesson_query == LESSON_RULE_QUERY else chosen.lesson_query
    lesson = Lesson(run, sentence, query)
    present = presenting()
    _top_bar(lesson, number, present, follow)
    title = STEPS[number - 1].title
    st.header(f"{number}. {title}")
    announce(_("Step {number} of {count}: {title}.", number=number, count=len(STEPS), title=title))
    class_bar(number, present)
    question = STEPS[number - 1].question
    prediction = question(lesson) if question else None
    if prediction is None or ask(prediction, present):  # else the step would give it away
        _step(lesson, number, runs, present, follow)
    class_bar(number, present, below=True)


def _step(lesson: Lesson, number: int, runs: Runs, present: bool, follow: Follow) -> None:
    """The step's text, figures, controls and numbers."""
    if runs.compare:
        st.caption(
            _(
                "The lesson follows setup A; every other view shows A and B side by side, and the "
                "Attention, LayerNorm and Activations views say what B changes."
            )
        )
    step = STEPS[number - 1].build(lesson)  # the query is the picker's value (Selection's)
    if step.wide:  # the text, the wide table below it, then the controls
        text, media, controls = st.container(), st.container(), st.container()
    else:  # the text and its controls on the left, the figures on the right
        text, media = st.columns([2, 3], gap="large")
        controls = text
    with text:
        for paragraph in step.text.paragraphs:
            st.markdown(markdown(paragraph))
    with media:
        _step_figures(lesson, step, present, narrow=not step.wide)
    with controls:
        if step.uses_query:
            _query_picker(lesson)
        _open_buttons(step, follow)
        label = _("The numbers behind this step")
        with st.expander(label, key="lesson_numbers", on_change="rerun") as numbers:
            if numbers.open:  # built and sent only once opened
                table = step.numbers()
                _table(table, len(table), present)


def _top_bar(lesson: Lesson, number: int, present: bool, follow: Follow) -> None:
    """Previous, the step's label and progress, Next; a button into presenter mode, or in it a
    button out of it (the sidebar's switch is the same setting, on every view) and the handout:
    one row that wraps (on a phone, the tools go below)."""
    bar = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    bar.button(
        _("◀ Previous"),
        key="lesson_previous",
        disabled=number == 1,
        on_click=follow,
        args=("Lesson", {"lesson": number - 1}),
    )
    bar.progress(
        number / len(STEPS),
        text=_(
            "Step {number} of {count} · {title}",
            number=number,
            count=len(STEPS),
            title=STEPS[number - 1].title,
        ),
    )
    bar.button(
        _("Next ▶"),
        key="lesson_next",
        type="primary",
        disabled=number == len(STEPS),
        on_click=follow,
        args=("Lesson", {"lesson": number + 1}),
    )
    _tools(bar, lesson, present, follow)


def _tools(bar, lesson: Lesson, present: bool, follow: Follow) -> None:
    """The bar's tools: into or out of presenter mode, and the handout."""
    if present:
        bar.button(
            _("Exit presenter mode"),
            key="lesson_exit_presenter",
            type="tertiary",
            on_click=follow,
            args=("Lesson", {"present": False}),
            help=_("Back to the page with its views, sidebar and normal type."),
        )
    else:
        bar.button(
            _("Presenter"),
            key="lesson_presenter",
            type="tertiary",
            icon=":material/present_to_all:",
            on_click=follow,
            args=("Lesson", {"present": True}),
            help=_(
                "Large type on every view, with the sidebar and the views folded away, for a "
                "projector. In the link as present=1."
            ),
        )
    bar.download_button(
        _("Handout (HTML)"),
        in_this_language(lambda: handout.lesson_html(lesson).encode("utf-8")),
        file_name="encoder-lesson.html",
        mime="text/html",
        on_click="ignore",
        key="lesson_handout",
        help=_(
            "Every step's text, numbers, tables and figures for this sentence and model, in one "
            "file that opens offline."
        ),
    )


def _query_picker(lesson: Lesson) -> None:
    tokens, rule = lesson.tokens, lesson.rule_query
    st.selectbox(
        _("Query token"),
        [LESSON_RULE_QUERY, *range(lesson.n)],
        key="lesson_query",
        persist_state="session",
        format_func=lambda i: (
            _("the lesson's pick: {position} {token}", position=rule, token=tokens[rule])
            if i == LESSON_RULE_QUERY
            else f"{i}: {tokens[i]}"
        ),
        help=_(
            "The token whose attention the lesson follows. The lesson picks the last pronoun, "
            "else the last content word. In the link as lesson_query."
        ),
    )


def _open_buttons(step: Step, follow: Follow) -> None:
    for index, link in enumerate(step.links):
        st.button(
            _("Open in {view}", view=_(link.view)),  # a view's title, marked in app.registry
            key=f"lesson_open_{index}",
            icon=":material/open_in_full:",
            on_click=follow,
            args=(link.view, link.values),
            help=_("The full view at this step's selection (the page's link then reopens it)."),
        )


def _step_figures(lesson: Lesson, step: Step, present: bool, narrow: bool) -> None:
    """The step's figures, tables (HTML, whose cells wrap in a narrow column) and code; in
    presenter mode (whose large figure text app.page.widgets.show draws) the first Plotly figure
    no taller than fits beside the text (a module's figure is drawn to its own height)."""
    for index, (key, figure) in enumerate(step.figures):
        if step.explorer is not None and key == step.explorer.figure and _explorer(lesson, step):
            continue
        if isinstance(figure, Drawn):  # drawn by its module, to its own height
            module_figure(figure, key=key)
            continue
        if present and index == 0:
            height = figure.layout.height or PRESENTER_FIGURE_HEIGHT
            figure.update_layout(height=min(height, PRESENTER_FIGURE_HEIGHT))
        chars = PRESENTER_TITLE_CHARS if present else NORMAL_TITLE_CHARS
        show(figure, key, title_chars=chars if narrow else None)
    for caption, table in step.tables:
        st.caption(caption)
        _table(_rounded(shown_table(table)), len(table), present)
    if step.code is not None:
        st.code(step.code, language="python", height=300 if present else "content", wrap_lines=True)


def _explorer(lesson: Lesson, step: Step) -> bool:
    """Draw the step's attention explorer in place of its figure, opened on the step's head (a
    still explorer: the Attention view's head and the URL stay as they are); False where it
    cannot be drawn (the step then shows its figure)."""
    data = step_payload(lesson, step.explorer)
    if data is None:
        return False
    attention_explorer(
        with_start(data, step.explorer.start()), key=step.explorer.figure, report=False
    )
    return True


def _table(table, rows: int, present: bool) -> None:
    """A table of `rows` rows (a DataFrame or its Styler) in HTML, whose cells wrap in the
    column, none hidden past its edge; past TABLE_ROWS rows (presenter mode: fewer) it scrolls."""
    most = PRESENTER_TABLE_ROWS if present else TABLE_ROWS
    wide_table(table, TABLE_ROW_PX * most if rows > most else None)


def _rounded(table: pd.DataFrame):
    """Floats with four significant decimals for display (the handout and numbers keep more),
    whole numbers grouped as the page's text writes them (11,720,448): app.page.layout.written."""
    floats = [name for name in table.columns if pd.api.types.is_float_dtype(table[name])]
    whole = [
        name
        for name in table.columns
        if pd.api.types.is_integer_dtype(table[name])
        and not pd.api.types.is_bool_dtype(table[name])
    ]
    if not floats and not whole:
        return table
    styler = written(table, 0, whole)
    return styler.format(lambda value: localised(f"{value:.4g}"), subset=floats)
