"""The registry the page is built from: every view (app.views, app.lesson) as a `View` record, its
page's title and path, how it draws, the hooks its run keeps and the session keys it declares.

A run view is `draw(runs, selection)`: a plain function of the runs (app.runs.Runs: setup A's
run, and in compare mode setup B's; a Run may be a stand-in with the same fields) and what the
user selected (app.keys.Selection). It reads no session state; its widgets carry the keys it
declares (gathered here and registered with app.controls.state) and their values reach it as
return values. `hooks(cfg, selection)` names the tensors the run keeps for it (None: every hook),
so the run is a function of (config, selection). The Training view draws no run: it trains one.

Adding a view: its module (draw, hooks, KEYS) and one line in VIEWS.

User text reaches the page only through dataframes, plotly labels (escaped in app.charts) and
`st.text`/`st.code`, or escaped by app.user_text, never through raw markdown or HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from app.charts import common
from app.controls import asking, classroom, setup_keys, sidebar, state, url
from app.i18n import _
from app.keys import SHARED_KEYS, Key, Selection
from app.lesson import page as lesson
from app.lesson import questions
from app.views import (
    activations,
    attention,
    corpus,
    cost,
    exercises,
    export,
    layernorm,
    shapes,
    steps,
    tokens,
    training,
)
from encoder import EncoderConfig

HookChoice = Callable[[EncoderConfig, Selection], "list[str] | None"]


def no_hooks(cfg: EncoderConfig, chosen: Selection) -> list[str]:
    """Views that draw only the attention weights and the residual stream (always kept), or
    measure the model itself (Cost)."""
    return []


def every_hook(cfg: EncoderConfig, chosen: Selection) -> None:
    """Views that read every captured tensor (sizes, the whole run's downloads, the lesson,
    whose one run serves every step and the handout)."""
    return None


@dataclass(frozen=True)
class View:
    """One view: its page's title and path, what it draws, the hooks the run keeps for it, the
    session keys it declares. `trains`: it draws no run (draw(settings, lab, actions))."""

    title: str
    path: str
    draw: Callable[..., None]
    hooks: HookChoice = no_hooks
    keys: tuple[Key, ...] = ()
    trains: bool = False


def follow_link(view: str, values: dict[str, object]) -> None:
    """Open `view` with these URL values, as a link would (the lesson's buttons)."""
    url.follow_link(view, values, sidebar.select_source)


def new_exercise_numbers() -> None:
    """The Exercises view's "New numbers" button: the next set, its answers cleared."""
    state.update(exercises.new_numbers_values(state.get("ex_set")))


VIEWS: tuple[View, ...] = (  # the navigation offers them in this order
    View(
        "Lesson",
        "lesson",
        partial(lesson.draw, follow=follow_link, ask=asking.ask, class_bar=classroom.bar),
        every_hook,
        (*lesson.KEYS, *questions.KEYS, *classroom.KEYS),
    ),
    View("Tokens", "tokens", tokens.draw),
    View(
        "Attention",
        "attention",
        partial(attention.draw, follow=state.follow_explorer),
        keys=attention.KEYS,
    ),
    View("Attention steps", "attention-steps", steps.draw, steps.hooks, steps.KEYS),
    View("LayerNorm", "layernorm", layernorm.draw, layernorm.hooks, layernorm.KEYS),
    View("Activations", "activations", activations.draw, activations.hooks, activations.KEYS),
    View("Shapes", "shapes", shapes.draw, every_hook),
    View("Cost", "cost", cost.draw, keys=cost.KEYS),
    View("Heads across a corpus", "heads-across-a-corpus", corpus.draw, keys=corpus.KEYS),
    View(
        "Exercises",
        "exercises",
        partial(exercises.draw, new_numbers=new_exercise_numbers),
        keys=exercises.KEYS,
    ),
    View("Export", "export", export.draw, every_hook),
    View("Training", "training", training.draw, keys=training.KEYS, trains=True),
)
BY_TITLE = {view.title: view for view in VIEWS}


def shown_titles() -> dict[str, str]:
    """Each view's title as the navigation shows it, in this run's language ({English title:
    shown}); the English title stays the view's identity (keys, links, BY_TITLE)."""
    shown = {
        "Lesson": _("Lesson"),
        "Tokens": _("Tokens"),
        "Attention": _("Attention"),
        "Attention steps": _("Attention steps"),
        "LayerNorm": _("LayerNorm"),
        "Activations": _("Activations"),
        "Shapes": _("Shapes"),
        "Cost": _("Cost"),
        "Heads across a corpus": _("Heads across a corpus"),
        "Exercises": _("Exercises"),
        "Export": _("Export"),
        "Training": _("Training"),
    }
    return {view.title: shown[view.title] for view in VIEWS}


KEYS = (*setup_keys.KEYS, *SHARED_KEYS, *(key for view in VIEWS for key in view.keys))
state.register(KEYS)
common.presenting_from(lambda: bool(state.get("present")))  # presenter mode, for every figure
