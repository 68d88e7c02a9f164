"""The lesson's text model: what a step is made of (its paragraphs and every number they show,
figures, tables, code, the views that show it in full), what every step reads (`Lesson`: one run
and sentence) and a step as the lesson lists it (`LessonStep`: title, builder, question). The
steps themselves are app.lesson.steps; nothing here draws: the Lesson view (app/lesson/page.py)
lays a step out on the page and app/lesson/handout.py writes every step into one HTML file.

Every number a step's text shows is computed from the run and registered with the step (`Text.num`),
so the step's "numbers behind this step" table holds each of them, and a test checks that no
number appears in a text without being in its table. User text (tokens) stays apart from ours
(`Typed`), so each renderer escapes it for its medium.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from string import Formatter

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.i18n import _, localised, percent
from app.page import layout
from app.page.figures import Drawn
from app.runs import Run
from encoder.inspect.ablation import head_effects
from encoder.inspect.lesson import Links, attention_links, is_special, pick_query
from encoder.inspect.predictions import Prediction
from encoder.web.payload import start_at


@dataclass(frozen=True)
class Typed:
    """User text (a token) inside our sentences: each renderer shows it literally, in quotes."""

    text: str


Part = str | Typed
Paragraph = tuple[Part, ...]


@dataclass(frozen=True)
class OpenIn:
    """A view at a selection: the values are URL parameters (app.controls.url.follow_link)."""

    view: str
    values: dict[str, object]


def sentence(message: str, **values: object) -> tuple[Part, ...]:
    """A translated message (`_(message)` without values) with its placeholders filled as parts:
    a Typed stays a Typed, a tuple of parts is spliced in, anything else is put in as text."""
    parts: list[Part] = []
    for literal_text, name, spec, _conversion in Formatter().parse(message):
        if literal_text:
            parts.append(literal_text)
        if name is None:
            continue
        value = values[name]
        if isinstance(value, Typed):
            parts.append(value)
        elif isinstance(value, tuple):
            parts.extend(value)
        else:
            parts.append(format(value, spec or ""))
    merged: list[Part] = []
    for part in parts:  # neighbouring strings joined, as the English wrote them
        if merged and isinstance(part, str) and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    return tuple(merged)


def placement_name(norm_first: bool) -> str:
    """ "pre-norm" or "post-norm", in this run's language."""
    return _("pre-norm") if norm_first else _("post-norm")


class Text:
    """A step's paragraphs and every number they show."""

    def __init__(self) -> None:
        self.paragraphs: list[Paragraph] = []
        self.values: dict[str, object] = {}
        self.shown: dict[str, str] = {}
        self.labels: dict[str, str] = {}  # name -> its name in the run's language

    def num(
        self, name: str, value: object, spec: str = "", whose: tuple[str, str] | None = None
    ) -> str:
        """`value` as the text shows it, registered under `name` for the numbers table. `name` is
        English (the code and the tests read the numbers by it) and a message (extracted as
        `num`'s first argument): the table shows it translated. `whose`: the name is one of
        several things' (a role's, the other placement's), given as (its English, its name in
        the run's language): registered as "whose: name"."""
        if isinstance(value, np.generic):
            value = value.item()
        shown = format(value, spec)
        zero = shown.startswith("-") and not shown.strip("-0.,%e+")  # -0.000: a rounded zero
        shown = shown[1:] if zero else shown
        share = re.fullmatch(r"\.(\d+)%", spec)
        if share and not isinstance(value, str):  # a percentage, as the language writes one
            shown = percent(0.0 if zero else value, int(share[1]))
        elif not isinstance(value, str):
            shown = localised(shown)
        label = _(name)
        if whose is not None:
            name, label = (
                f"{whose[0]}: {name}",
                _("{whose}: {number}", whose=whose[1], number=label),
            )
        if name in self.shown and self.shown[name] != shown:
            raise ValueError(f"{name!r} shown as {self.shown[name]} and as {shown}")
        self.values[name], self.shown[name], self.labels[name] = value, shown, label
        return shown

    def say(self, *parts: Part) -> None:
        self.paragraphs.append(tuple(part for part in parts if part != ""))


@dataclass(frozen=True)
class ExplorerAt:
    """The attention explorer (encoder/web) standing in for one of the step's figures wherever a
    host can draw it (the handout): this run's attention for the sentence, opened on a head."""

    figure: str  # the key of the figure it stands in for
    layer: int
    head: int
    mode: str  # "lines" | "matrix" | "heads"
    query: int | None = None  # the token pinned, if any

    def start(self) -> dict:
        """Where the explorer opens: its payload header's "start" (encoder.web.payload)."""
        return start_at(self.layer, self.head, self.mode, self.query)


@dataclass
class Step:
    """One step of the lesson, ready to lay out (its title is its LessonStep's)."""

    text: Text
    # (key, figure): a Plotly figure, or one a browser module draws (app.page.figures.Drawn)
    figures: list[tuple[str, go.Figure | Drawn]] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)  # (caption, table)
    code: str | None = None
    links: list[OpenIn] = field(default_factory=list)
    uses_query: bool = False
    wide: bool = False  # tables below the text, the page's full width (a wide table)
    explorer: ExplorerAt | None = None

    def numbers(self) -> pd.DataFrame:
        """The numbers behind this step: each one the text shows, its value and how it is shown."""
        return pd.DataFrame(
            {
                _("number"): list(self.text.labels.values()),
                _("value"): [_full(value) for value in self.text.values.values()],
                _("in the text"): list(self.text.shown.values()),
            }
        )


def shown_table(table: pd.DataFrame) -> pd.DataFrame:
    """A step's table as the page and the handout show it: its columns, its rows' names and its
    word cells in the run's language (app.page.layout.shown)."""
    named = layout.shown(table)
    return named.rename(index=lambda name: layout.header(name) if isinstance(name, str) else name)


def _full(value: object) -> str:
    """A number to every digit it has, as the run's language writes it (0,99986… in Spanish)."""
    return localised(repr(float(value))) if isinstance(value, float) else str(value)


# --- what every step reads ---------------------------------------------------------------------


@dataclass
class Lesson:
    """One run and sentence, and what the steps share: the query, its link, the head metrics."""

    run: Run
    sentence: int
    chosen_query: int | None = None  # the user's; None: the rule's

    @property
    def cfg(self):
        return self.run.cfg

    @property
    def tokens(self) -> list[str]:
        return self.run.tokens[self.sentence]

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def kind(self) -> str:
        """ "pretrained", "random", "task" (trained here on a toy task) or "uploaded"."""
        if self.run.task_model is not None:
            return "task"
        source = self.run.key.source
        return source if source in ("random", "pretrained") else "uploaded"

    @property
    def random(self) -> bool:
        return self.kind == "random"

    @property
    def model_name(self) -> str:
        if self.kind == "pretrained":
            return "MiniLM"
        if self.kind == "random":
            return _("this random model")
        if self.kind == "task":
            task = self.run.task_model.task if self.run.task_model else ""
            return _("this {task} model", task=task)
        return _("this loaded model")  # uploaded, or found on this machine

    @property
    def model_title(self) -> str:
        """model_name at the start of a sentence."""
        return self.model_name[0].upper() + self.model_name[1:]

    @property
    def unit(self) -> str:
        """What the model reads: a sentence, or a toy task's sequence (a noun, translated)."""
        return _("sequence") if self.kind == "task" else _("sentence")

    @cached_property
    def rule_query(self) -> int:
        return pick_query(self.tokens)

    @property
    def query(self) -> int:
        return self.rule_query if self.chosen_query is None else self.chosen_query

    @cached_property
    def links(self) -> Links:
        n = self.n
        weights = self.run.attention[:, self.sentence, :, :n, :n]  # [L, H, q, k]
        return attention_links(weights, self.tokens, self.query)

    @property
    def layer(self) -> int:
        return int(self.links.chosen["layer"])

    @property
    def head(self) -> int:
        return int(self.links.chosen["head"])

    @property
    def key(self) -> int:
        return int(self.links.chosen["key"])

    @cached_property
    def metrics(self) -> pd.DataFrame:
        return self.run.head_metrics(self.sentence)

    @cached_property
    def head_effects(self) -> pd.DataFrame:
        """How much switching off each head alone changes the output (layer, head, change;
        largest first: encoder.inspect.ablation.head_effects): the head-off step's question
        and its figures read the same table."""
        run = self.run
        return head_effects(run.trace, lambda head: run.heads_off((head,)).trace, self.sentence)

    def end_name(self, end: str) -> str:
        """The first or last token by name: [CLS] / [SEP] where the model has them."""
        token = self.tokens[0 if end == "first" else -1]
        if is_special(token):
            return token
        return _("the first token") if end == "first" else _("the last token")

    def said(self, position: int) -> Typed:
        return Typed(self.tokens[position])

    def query_said(self, text: Text) -> tuple[Part, ...]:
        """'“it” (position 10)'."""
        position = text.num("query position", self.query)
        return sentence(_("{token} (position {position})"), token=self.said(self.query),
                        position=position)  # fmt: skip

    def attention_steps_link(self, layer: int | None = None) -> OpenIn:
        """The Attention steps view on the lesson's head and query, in `layer` (default: the
        head's)."""
        values = {
            "step_layer": self.layer if layer is None else layer,
            "step_head": self.head,
            "step_query": self.query,
        }
        return OpenIn("Attention steps", values)


@dataclass(frozen=True)
class LessonStep:
    """A step as the lesson lists it (app.lesson.steps.STEPS): its title, what builds its content
    for a lesson, and the question it asks before showing it (predict, then reveal:
    app.lesson.questions), its truth from the lesson's run; None where it asks none, and the
    question None for a run it does not apply to (the step then says why)."""

    name: Callable[[], str]  # the title in this run's language (a lambda around _())
    build: Callable[[Lesson], Step]
    question: Callable[[Lesson], Prediction | None] | None = None

    @property
    def title(self) -> str:
        return self.name()
