"""The lesson as one self-contained HTML file: every step's text, numbers, tables, code and
figures for one run and sentence, with plotly.js, the attention explorer's module and each
figure module it draws embedded once, so it opens offline. A step's attention figure is drawn by
the explorer (encoder/web), the same one as on the page and in notebooks, opened on the step's
head; a figure a browser module draws on the page (app.page.figures.Drawn) is drawn by that
module here too.

User text is escaped with html.escape (tokens inside sentences, the sentence itself, table
cells); figures escape their own labels (app.charts.common); the explorer's tokens travel inside
its payload and are drawn as text.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.io as pio
from plotly.offline import get_plotlyjs

from app.explorer_payloads import in_page_language
from app.i18n import _, direction, language, localised, quoted
from app.lesson.explorer import step_payload
from app.lesson.steps import STEPS
from app.lesson.text import ExplorerAt, Lesson, Paragraph, Step, Typed, shown_table
from app.page.figures import Drawn, spoken
from encoder.web.offline import explorer_element, explorer_scripts, figure_element, figure_scripts

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2rem auto; padding: 0 1rem;
       color: #222; line-height: 1.5; }
section { border-top: 2px solid #ddd; margin-top: 2rem; padding-top: 0.5rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: right; }
th { background: #f3f3f3; }
pre { background: #f6f6f6; padding: 0.8rem; overflow-x: auto; font-size: 0.85rem; }
.caption { color: #555; font-size: 0.9rem; margin-bottom: 0; }
"""


def paragraph_html(paragraph: Paragraph) -> str:
    return "".join(
        html.escape(quoted(part.text)) if isinstance(part, Typed) else html.escape(part)
        for part in paragraph
    )


def table_html(table: pd.DataFrame) -> str:
    """A table with its cells escaped; floats to 6 significant digits."""
    return shown_table(table).to_html(
        index=False, escape=True, float_format=lambda value: localised(f"{value:.6g}")
    )


def explorer_html(lesson: Lesson, number: int, at: ExplorerAt) -> str | None:
    """The step's explorer element, or None where its attention cannot be drawn: the step then
    keeps its figure."""
    data = step_payload(lesson, at)
    if data is None:
        return None
    return explorer_element(in_page_language(data), f"step-{number}", **at.start())


def step_html(number: int, title: str, step: Step, explorer: str | None = None) -> str:
    """One step; `explorer` (an explorer element) stands in for the figure step.explorer names."""
    parts = [f"<section><h2>{number}. {html.escape(title)}</h2>"]
    parts += [f"<p>{paragraph_html(paragraph)}</p>" for paragraph in step.text.paragraphs]
    for key, figure in step.figures:
        if explorer is not None and step.explorer is not None and key == step.explorer.figure:
            parts.append(explorer)
        elif isinstance(figure, Drawn):
            parts.append(figure_element(figure.module, spoken(figure.data), f"step-{number}-{key}"))
        else:
            parts.append(pio.to_html(figure, include_plotlyjs=False, full_html=False))
    for caption, table in step.tables:
        parts.append(f'<p class="caption">{html.escape(caption)}</p>{table_html(table)}')
    if step.code is not None:
        parts.append(f"<pre><code>{html.escape(step.code)}</code></pre>")
    parts.append(f'<p class="caption">{html.escape(_("The numbers behind this step"))}</p>')
    parts.append(table_html(step.numbers()))
    return "\n".join(parts) + "</section>"


def lesson_html(lesson: Lesson) -> str:
    """Every step of the lesson for this run and sentence, as one HTML page."""
    sentence = lesson.run.sentences[lesson.sentence]
    heading = _("Encoder Explorer: a lesson on {model}", model=lesson.model_name)
    steps, modules = [], []
    for number, listed in enumerate(STEPS, 1):
        step = listed.build(lesson)
        explorer = explorer_html(lesson, number, step.explorer) if step.explorer else None
        steps.append(step_html(number, listed.title, step, explorer))
        drawn = (figure.module for __, figure in step.figures if isinstance(figure, Drawn))
        modules += [module for module in drawn if module not in modules]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{language()}" dir="{direction()}"><head><meta charset="utf-8">',
            f"<title>{html.escape(heading)}</title>",
            f"<style>{STYLE}</style>",
            f'<script type="text/javascript">{get_plotlyjs()}</script>',
            explorer_scripts(),
            *(figure_scripts(module) for module in modules),
            "</head><body>",
            f"<h1>{html.escape(heading)}</h1>",
            "<p>"
            + html.escape(_("The {unit}: “{sentence}”")).format(
                unit=html.escape(lesson.unit), sentence=html.escape(sentence)
            )
            + "</p>",
            *steps,
            "</body></html>",
        ]
    )
