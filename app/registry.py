"""The registry the page dispatches through: every view (app.views, app.lesson) by name.

A run view is `draw(runs, selection)`: a plain function of the runs (app.runs.Runs: setup A's
run, and in compare mode setup B's; a Run may be a stand-in with the same fields) and what the
user selected (app.settings.Selection). It reads no session state;
its widgets carry keys registered in app.controls.state and their values reach it as return values.
`hooks(cfg, selection)` names the tensors the run keeps for it (None: every hook), so the run is a
function of (config, selection). The Training view draws no run: it trains one.

User text reaches the page only through dataframes, plotly labels (escaped in app.charts) and
`st.text`/`st.code`, or escaped by app.user_text, never through raw markdown or HTML.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from app.controls import classroom, sidebar, state
from app.lesson import page as lesson
from app.settings import Selection
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
class RunView:
    """A view of one run: what it draws, and the hooks the run keeps for it."""

    draw: Callable[..., None]  # (runs, selection)
    hooks: HookChoice


@dataclass(frozen=True)
class TrainingView:
    """The view that trains a model (draw(settings, lab, actions)); it needs no run."""

    draw: Callable[..., None]


def follow_link(view: str, values: dict[str, object]) -> None:
    """Open `view` with these URL values, as a link would (the lesson's buttons)."""
    state.follow_link(view, values, sidebar.select_source)


VIEWS: dict[str, RunView | TrainingView] = {
    "Lesson": RunView(
        partial(lesson.draw, follow=follow_link, ask=classroom.ask, class_bar=classroom.bar),
        every_hook,
    ),
    "Tokens": RunView(tokens.draw, no_hooks),
    "Attention": RunView(partial(attention.draw, follow=state.follow_explorer), no_hooks),
    "Attention steps": RunView(steps.draw, steps.hooks),
    "LayerNorm": RunView(layernorm.draw, layernorm.hooks),
    "Activations": RunView(activations.draw, activations.hooks),
    "Shapes": RunView(shapes.draw, every_hook),
    "Cost": RunView(cost.draw, no_hooks),
    "Heads across a corpus": RunView(corpus.draw, no_hooks),
    "Exercises": RunView(partial(exercises.draw, new_numbers=state.new_exercise_numbers), no_hooks),
    "Export": RunView(export.draw, every_hook),
    "Training": TrainingView(training.draw),
}  # the view control offers them in this order
