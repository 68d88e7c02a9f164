"""Encoder Explorer: `streamlit run app/main.py`.

Thin on purpose: let ended sessions' models go (app.session_end), read the link (app.controls.url),
draw the navigation over the views' pages (app.registry: one st.Page each, at its own path) and
the sidebar (app.controls), then run the page: resolve each setup's model source once
(app.sources, the session's own models included), fetch the run the view needs, draw the view,
say what happened. The runs and models the page gets stay in the memory budget's
cache until it is drawn (CACHE.holding)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import streamlit as st

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:  # `app` and `encoder` importable; the script reruns on every change
    sys.path.insert(0, ROOT)

from app import i18n, logs, registry, session_end, training_session  # noqa: E402
from app.charts.common import plural  # noqa: E402
from app.controls import session_models, setup_keys, sidebar, state, url  # noqa: E402
from app.memory import CACHE, collect_garbage, freeze_startup_heap  # noqa: E402
from app.runs import Run, Runs, run_for, split_lines, warm_landing  # noqa: E402
from app.settings import Settings, Setup  # noqa: E402
from app.streamlit_private import (  # noqa: E402
    announce,
    page_language,
    page_script,
    page_style,
)
from app.user_text import literal  # noqa: E402
from encoder.inspect import ablation  # noqa: E402
from encoder.inspect.limits import MAX_SENTENCES  # noqa: E402
from encoder.inspect.token_kinds import UNKNOWN  # noqa: E402


def status_line(runs: Runs, page_start: float) -> str:
    page_ms = (time.perf_counter() - page_start) * 1000
    run = runs.a
    parameters = " vs ".join(f"{r.parameters:,}" for _, r in runs.named())
    forward = " + ".join(f"{r.forward_ms:.0f}" for _, r in runs.named())
    return (
        f"Device {run.device} · {len(run.sentences)} sentence(s), "
        f"{int(run.attention_mask.sum())} tokens · {parameters} parameters · "
        f"traced forward pass {forward} ms (once, hooks capturing) · page {page_ms:.0f} ms"
    )


def run_finished(title: str, runs: Runs) -> str:
    """What a screen reader hears once a view is drawn from a new run (nothing that changes
    from one rerun to the next, such as a time, so that it is said once)."""
    run = runs.a
    tokens = plural(int(run.attention_mask.sum()), "token")
    setups = " and ".join(f"{r.parameters:,} parameters" for _, r in runs.named())
    return f"{title} drawn: {tokens}, {plural(len(run.sentences), 'sentence')}, {setups}."


def _heads_off(setup: Setup, name: str) -> tuple[tuple[int, int], ...]:
    """The heads a setup switches off; the page says which items it left out."""
    cfg = setup.cfg
    heads, problems = ablation.parse_heads(setup.heads_off, cfg.num_layers, cfg.num_heads)
    for problem in problems:
        st.warning(literal(f"Setup {name}: left out {problem}."))
    return heads


def _with_setup_b(run: Run, b: Setup, run_b) -> Runs:
    """A's run with B's, or with why B cannot be drawn (A is drawn either way)."""
    if b.cfg is None:
        return Runs(run, b_problem=f"Setup B is impossible: {b.error}")
    try:
        return Runs(run, run_b())
    except ValueError as error:
        return Runs(run, b_problem=f"Setup B cannot run: {error}")
    except RuntimeError as error:
        return Runs(run, b_problem=f"Setup B's forward pass failed: {error}")


def input_messages(line_count: int, run: Run) -> None:
    """Say what was cut, dropped or unknown in the input."""
    if line_count > MAX_SENTENCES:
        st.warning(
            f"Only the first {MAX_SENTENCES} of {line_count} lines are used "
            f"(at most {MAX_SENTENCES} sentences per run)."
        )
    for cut in run.truncations:
        kept = run.sentences[cut.sentence_index][: cut.kept_chars]
        st.warning(
            f"Sentence {cut.sentence_index + 1} has {cut.total_tokens:,} tokens; only the first "
            f"{cut.kept_tokens} are used (the model's max_len is {run.cfg.max_len}). "
            f"It was cut after: …{literal(kept[-60:])}"
        )
    unknown = [token for tokens in run.tokens for token in tokens if token in UNKNOWN]
    if unknown:
        st.info(
            f"{len(unknown)} {'token is' if len(unknown) == 1 else 'tokens are'} "
            f"{literal(unknown[0])}: pieces of the text that this tokenizer's vocabulary does "
            "not hold."
        )


i18n.speak_with(sidebar.spoken_language)


def main(make_run=run_for) -> None:
    """The page; `make_run` builds the run a view draws (the benchmark's floor passes a
    stand-in made of random numbers)."""
    page_start = time.perf_counter()
    freeze_startup_heap()
    logs.configure()
    session_end.sweep()
    if make_run is run_for:  # a real server (not the benchmark's stand-in)
        warm_landing(setup_keys.DEFAULTS["text"])
    with CACHE.holding():
        frame(make_run, page_start)
    collect_garbage()


@dataclass
class Frame:
    """What every view's page is drawn with: the run maker, when the page started, and the
    sidebar's settings (filled in once the sidebar is drawn, before the page runs)."""

    make_run: Callable
    page_start: float
    settings: Settings | None = None


def frame(make_run, page_start: float) -> None:
    """The frame around every page: the link, the navigation, the sidebar; then the page."""
    first, notices, linked_view = url.start_page(
        tuple(registry.BY_TITLE), session_models.is_session_source
    )
    notices = state.carried_notices() + notices
    st.set_page_config(
        page_title="Encoder Explorer",
        page_icon="🔍",
        layout="wide",
        initial_sidebar_state=state.sidebar_state(),
    )
    page_style()
    page_script()
    page_language(i18n.language(), i18n.direction())
    held = Frame(make_run, page_start)
    pages = {
        view.title: st.Page(partial(draw_page, view, held), title=view.title, url_path=view.path)
        for view in registry.VIEWS
    }
    # The root ("/"): no view of its own; a link there opens the view it names, or by its
    # settings the Lesson (none) or the Attention view (some).
    start = st.Page(
        lambda: None, title="Encoder Explorer", url_path="start", default=True, visibility="hidden"
    )
    current = st.navigation([start, *pages.values()], position="top")
    landing = current.url_path in ("", pages["Lesson"].url_path)
    if first and landing and url.first_visit():  # no settings: the lesson, on MiniLM
        sidebar.select_source(url.FIRST_VISIT_SOURCE)
    wanted = state.view_to_open() or linked_view
    if current is start and wanted is None:
        wanted = "Lesson" if url.first_visit() else url.FIRST_VIEW
    if wanted is not None and wanted != current.title:
        state.switch_to(pages[wanted], notices)
    state.put("view", current.title)
    held.settings = sidebar.render(notices)
    url.sync(held.settings.text)
    st.title("Encoder Explorer")
    current.run()


def draw_page(view: registry.View, held: Frame) -> None:
    """One view's page: its run (and setup B's), what happened to the input, then the view, and
    the developer's status line last (not in presenter mode: the room sees the lesson alone)."""
    settings, make_run = held.settings, held.make_run
    for notice in settings.notices:
        st.warning(notice)
    if view.trains:
        view.draw(settings, *training_session.lab_and_actions())
        return
    if settings.error:
        st.error(f"This architecture is impossible: {settings.error}")
        return
    sentences, line_count = split_lines(settings.text)
    if not sentences:
        st.info("The text box is empty: type a sentence in the sidebar (one per line).")
        return
    setups = [settings.a] + ([settings.b] if settings.b is not None else [])
    chosen = state.selection([setup.cfg for setup in setups if setup.cfg is not None])

    def run_of(setup: Setup, name: str):
        heads = _heads_off(setup, name) if settings.b is not None else ()
        names = view.hooks(setup.cfg, chosen)
        source = session_models.resolve(setup.source, setup.cfg)
        return make_run(setup.cfg, source, settings.device, sentences, names, ablate=heads)

    try:
        run = run_of(settings.a, "A")
    except ValueError as error:  # RunTooLarge, a device that vanished, bad input (quoted)
        st.error(literal(str(error)))
        return
    except RuntimeError as error:  # e.g. out of memory on a GPU
        st.error(f"The forward pass failed on {settings.device}: {error}")
        return
    runs = Runs(run)
    if settings.b is not None:
        runs = _with_setup_b(run, settings.b, lambda: run_of(settings.b, "B"))
    input_messages(line_count, run)
    if runs.b_problem:  # A is drawn all the same
        st.error(literal(runs.b_problem))
    chosen = state.fit_to_sentences(chosen, run.lengths)
    view.draw(runs, chosen)
    announce(run_finished(view.title, runs))
    if not (view.title == "Lesson" and chosen.present):
        st.caption(status_line(runs, held.page_start))


if __name__ == "__main__":
    main()
