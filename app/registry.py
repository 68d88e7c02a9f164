"""The registry the page is built from: every view (app.views, app.lesson) as a `View` record, its
page's title and path, how it draws, the hooks its run keeps and the session keys it declares.

A run view is `draw(runs, selection)`: a plain function of the runs (app.runs.Runs: setup A's
run, and in compare mode setup B's; a Run may be a stand-in with the same fields) and what the
user selected (app.keys.Selection). It reads no session state; its widgets carry the keys it
declares (gathered here and registered with app.controls.state) and their values reach it as
return values. `hooks(cfg, selection)` names the tensors the run keeps for it (None: every hook),
so the run is a function of (config, selection). The Training view draws no run: it trains one.

Adding a view: its module (draw, and where it has them hooks and KEYS) and one line in VIEWS,
`view(N_("Title"), "path", "module")` (README's "How to add a view").

User text reaches the page only through dataframes, plotly labels (escaped in app.charts) and
`st.text`/`st.code`, or escaped by app.user_text, never through raw markdown or HTML.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from app.charts import common
from app.controls import asking, classroom, setup_keys, sidebar, state, url
from app.i18n import N_, _
from app.keys import SHARED_KEYS, Key, Selection
from app.lesson import page as lesson
from app.lesson import questions
from app.views import exercises
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


def view(title: str, path: str, module: str, **given: object) -> View:
    """A view's line in VIEWS: app.views.<module> draws it (`draw`) and, where it has them, names
    the hooks its run keeps (`hooks`) and its session keys (`KEYS`); `draw_with` gives its draw
    the page's callbacks; `given` sets the rest (every hook, trains)."""
    found = importlib.import_module(f"app.views.{module}")
    draw_with = given.pop("draw_with", {})
    return View(
        title,
        path,
        partial(found.draw, **draw_with) if draw_with else found.draw,
        **{"hooks": getattr(found, "hooks", no_hooks), "keys": getattr(found, "KEYS", ()), **given},
    )


def follow_link(view: str, values: dict[str, object]) -> None:
    """Open `view` with these URL values, as a link would (the lesson's buttons)."""
    url.follow_link(view, values, sidebar.select_source)


def new_exercise_numbers() -> None:
    """The Exercises view's "New numbers" button: the next set, its answers cleared."""
    state.update(exercises.new_numbers_values(state.get("ex_set")))


VIEWS: tuple[View, ...] = (  # the navigation offers them in this order; titles marked N_
    View(
        N_("Lesson"),
        "lesson",
        partial(lesson.draw, follow=follow_link, ask=asking.ask, class_bar=classroom.bar),
        every_hook,
        (*lesson.KEYS, *questions.KEYS, *classroom.KEYS),
    ),
    view(N_("Tokens"), "tokens", "tokens"),
    view(N_("Attention"), "attention", "attention", draw_with={"follow": state.follow_explorer}),
    view(N_("Attention steps"), "attention-steps", "steps"),
    view(N_("LayerNorm"), "layernorm", "layernorm"),
    view(N_("Activations"), "activations", "activations"),
    view(N_("Shapes"), "shapes", "shapes", hooks=every_hook),
    view(N_("Cost"), "cost", "cost"),
    view(N_("Heads across a corpus"), "heads-across-a-corpus", "corpus"),
    view(
        N_("Exercises"),
        "exercises",
        "exercises",
        draw_with={"new_numbers": new_exercise_numbers},
    ),
    view(N_("What it is for"), "meaning", "meaning", draw_with={"follow": follow_link}),
    view(N_("Interventions"), "interventions", "interventions"),
    view(N_("Export"), "export", "export", hooks=every_hook),
    view(N_("Training"), "training", "training", trains=True),
)
BY_TITLE = {view.title: view for view in VIEWS}


def shown_titles() -> dict[str, str]:
    """Each view's title as the navigation shows it, in this run's language ({English title:
    shown}); the English title stays the view's identity (keys, links, BY_TITLE)."""
    return {view.title: _(view.title) for view in VIEWS}


KEYS = (*setup_keys.KEYS, *SHARED_KEYS, *(key for view in VIEWS for key in view.keys))
state.register(KEYS)
common.presenting_from(lambda: bool(state.get("present")))  # presenter mode, for every figure
