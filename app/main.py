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
from starlette.middleware import Middleware

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:  # `app` and `encoder` importable; the script reruns on every change
    sys.path.insert(0, ROOT)

from app import i18n, logs, registry, session_end, training_session  # noqa: E402
from app.controls import session_models, setup_keys, sidebar, state, url  # noqa: E402
from app.heap import collect_garbage, frozen_at_start  # noqa: E402
from app.i18n import _, n_, number, told  # noqa: E402
from app.memory import CACHE  # noqa: E402
from app.run_cache import run_for, split_lines, warm_landing  # noqa: E402
from app.runs import Run, Runs  # noqa: E402
from app.settings import Settings, Setup  # noqa: E402
from app.streamlit_private import (  # noqa: E402
    NameTheRootOnViewPaths,
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
    counts = [number(r.parameters) for _name, r in runs.named()]
    parameters = counts[0] if len(counts) == 1 else _("{a} vs {b}", a=counts[0], b=counts[1])
    forward = " + ".join(number(r.forward_ms, grouped=False) for _name, r in runs.named())
    return _(
        "Device {device} · {sentences} sentence(s), {tokens} tokens · {parameters} parameters · "
        "traced forward pass {forward} ms (once, hooks capturing) · page {page} ms",
        device=run.device,
        sentences=len(run.sentences),
        tokens=int(run.attention_mask.sum()),
        parameters=parameters,
        forward=forward,
        page=number(page_ms, grouped=False),
    )


def run_finished(title: str, runs: Runs) -> str:
    """What a screen reader hears once a view is drawn from a new run (nothing that changes
    from one rerun to the next, such as a time, so that it is said once)."""
    run = runs.a
    tokens = n_("{count} token", "{count} tokens", int(run.attention_mask.sum()))
    sentences = n_("{count} sentence", "{count} sentences", len(run.sentences))
    setups = [n_("{count} parameter", "{count} parameters", r.parameters) for _n, r in runs.named()]
    both = setups[0] if len(setups) == 1 else _("{a} and {b}", a=setups[0], b=setups[1])
    return _(
        "{view} drawn: {tokens}, {sentences}, {setups}.",
        view=title,
        tokens=tokens,
        sentences=sentences,
        setups=both,
    )


def _heads_off(setup: Setup, name: str) -> tuple[tuple[int, int], ...]:
    """The heads a setup switches off; the page says which items it left out."""
    cfg = setup.cfg
    heads, problems = ablation.parse_heads(setup.heads_off, cfg.num_layers, cfg.num_heads)
    for problem in problems:
        st.warning(
            literal(_("Setup {name}: left out {problem}.", name=name, problem=told(problem)))
        )
    return heads


def _with_setup_b(run: Run, b: Setup, run_b) -> Runs:
    """A's run with B's, or with why B cannot be drawn (A is drawn either way)."""
    if b.cfg is None:
        return Runs(run, b_problem=_("Setup B is impossible: {error}", error=told(b.error)))
    try:
        return Runs(run, run_b())
    except ValueError as error:
        return Runs(run, b_problem=_("Setup B cannot run: {error}", error=told(error)))
    except RuntimeError as error:
        return Runs(run, b_problem=_("Setup B's forward pass failed: {error}", error=told(error)))


def input_messages(line_count: int, run: Run) -> None:
    """Say what was cut, dropped or unknown in the input."""
    if line_count > MAX_SENTENCES:
        st.warning(
            _(
                "Only the first {most} of {lines} lines are used (at most {most} sentences per "
                "run).",
                most=MAX_SENTENCES,
                lines=line_count,
            )
        )
    for cut in run.truncations:
        kept = run.sentences[cut.sentence_index][: cut.kept_chars]
        st.warning(
            _(
                "Sentence {number} has {total} tokens; only the first {kept} are used (the "
                "model's max_len is {max_len}). It was cut after: …{text}",
                number=cut.sentence_index + 1,
                total=number(cut.total_tokens),
                kept=cut.kept_tokens,
                max_len=run.cfg.max_len,
                text=literal(kept[-60:]),
            )
        )
    unknown = [token for tokens in run.tokens for token in tokens if token in UNKNOWN]
    if unknown:
        st.info(
            n_(
                "{count} token is {token}: pieces of the text that this tokenizer's vocabulary "
                "does not hold.",
                "{count} tokens are {token}: pieces of the text that this tokenizer's "
                "vocabulary does not hold.",
                len(unknown),
                token=literal(unknown[0]),
            )
        )


i18n.speak_with(sidebar.spoken_language)


def main(make_run=run_for) -> None:
    """The page; `make_run` builds the run a view draws (the benchmark's floor passes a
    stand-in made of random numbers)."""
    page_start = time.perf_counter()
    i18n.speak_now(None)  # not known until the link is read (frame)
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


def view_title(current, pages: dict) -> str:
    """The English title (the view's identity, a key) of the page being shown: the navigation
    shows it in the page's language."""
    for title, page in pages.items():
        if page.url_path == current.url_path:
            return title
    return current.title


def frame(make_run, page_start: float) -> None:
    """The frame around every page: the link, the navigation, the sidebar; then the page."""
    first, notices, linked_view = url.start_page(
        tuple(registry.BY_TITLE), session_models.is_session_source
    )
    notices = state.carried_notices() + notices
    i18n.speak_now(sidebar.spoken_language())  # the link and the sidebar have said
    st.set_page_config(
        page_title="Encoder Explorer",
        page_icon="🔍",
        layout="wide",
        initial_sidebar_state=state.sidebar_state(),
    )
    page_style(bool(state.get("present")))  # presenter mode: large type on every view
    page_script()
    page_language(i18n.language(), i18n.direction())
    held = Frame(make_run, page_start)
    titles = registry.shown_titles()  # what the navigation shows; the pages stay English inside
    pages = {
        view.title: st.Page(
            partial(draw_page, view, held), title=titles[view.title], url_path=view.path
        )
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
    if wanted is not None and wanted != view_title(current, pages):
        state.switch_to(pages[wanted], notices)
    state.put("view", view_title(current, pages))
    held.settings = sidebar.render(notices)
    url.sync(held.settings.text)
    st.title("Encoder Explorer")
    current.run()


def draw_page(view: registry.View, held: Frame) -> None:
    """One view's page: its run (and setup B's), what happened to the input, then the view, and
    the developer's status line last, where asked for (`timing`; not in presenter mode: the room
    sees the view alone)."""
    settings, make_run = held.settings, held.make_run
    for notice in settings.notices:
        st.warning(notice)
    if view.trains:
        view.draw(settings, *training_session.lab_and_actions())
        return
    if settings.error:
        st.error(_("This architecture is impossible: {error}", error=told(settings.error)))
        return
    sentences, line_count = split_lines(settings.text)
    if not sentences:
        st.info(_("The text box is empty: type a sentence in the sidebar (one per line)."))
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
        st.error(literal(told(error)))
        return
    except RuntimeError as error:  # e.g. out of memory on a GPU
        st.error(
            _(
                "The forward pass failed on {device}: {error}",
                device=settings.device,
                error=told(error),
            )
        )
        return
    runs = Runs(run)
    if settings.b is not None:
        runs = _with_setup_b(run, settings.b, lambda: run_of(settings.b, "B"))
    input_messages(line_count, run)
    if runs.b_problem:  # A is drawn all the same
        st.error(literal(runs.b_problem))
    chosen = state.fit_to_sentences(chosen, run.lengths)
    view.draw(runs, chosen)
    announce(run_finished(registry.shown_titles()[view.title], runs))
    if state.get("timing") and not state.get("present"):
        st.caption(status_line(runs, held.page_start))


if __name__ == "__main__":  # a session's run of the page
    main()
else:  # `streamlit run app/main.py` finds this app (st.App) and serves it, the page above
    streamlit_app = st.App(
        __file__, middleware=[Middleware(NameTheRootOnViewPaths)], lifespan=frozen_at_start
    )
