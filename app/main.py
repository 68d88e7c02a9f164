"""Encoder Explorer: `streamlit run app/main.py`.

Thin on purpose: start the session's state, draw the sidebar, fetch the run the chosen view needs,
draw the view through the registry (app.views), say what happened.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import streamlit as st

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:  # `app` and `encoder` importable; the script reruns on every change
    sys.path.insert(0, ROOT)

from app import session_models, sidebar, state, training_session, views  # noqa: E402
from app.runs import Run, run_for, split_lines  # noqa: E402
from app.user_text import literal  # noqa: E402
from encoder.inspect.limits import MAX_SENTENCES  # noqa: E402


def status_line(run: Run, page_start: float) -> str:
    page_ms = (time.perf_counter() - page_start) * 1000
    return (
        f"Device {run.device} · {len(run.sentences)} sentence(s), "
        f"{int(run.attention_mask.sum())} tokens · {run.parameters:,} parameters · "
        f"forward pass {run.forward_ms:.0f} ms · page {page_ms:.0f} ms"
    )


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
    if any("[UNK]" in tokens for tokens in run.tokens):
        st.info(
            "Some characters (for example emoji) are not in the tokenizer's vocabulary and "
            "became [UNK]."
        )


def main(make_run=run_for) -> None:
    """The page; `make_run` builds the run a view draws (the benchmark's floor passes a
    stand-in made of random numbers)."""
    page_start = time.perf_counter()
    notices = state.start_page(tuple(views.VIEWS), session_models.is_session_source)
    st.set_page_config(
        page_title="Encoder Explorer",
        page_icon="🔍",
        layout="wide",
        initial_sidebar_state=state.sidebar_state(),
    )
    settings = sidebar.render(notices)
    state.sync_url(settings.text)
    st.title("Encoder Explorer")
    name = st.segmented_control("View", views.VIEWS, key="view", label_visibility="collapsed")
    status = st.empty()
    for notice in settings.notices:
        st.warning(notice)
    view = views.VIEWS[name]
    if isinstance(view, views.TrainingView):
        view.draw(settings, *training_session.lab_and_actions())
        return
    if settings.error:
        st.error(f"This architecture is impossible: {settings.error}")
        return
    sentences, line_count = split_lines(settings.text)
    if not sentences:
        st.info("The text box is empty: type a sentence in the sidebar (one per line).")
        return
    chosen = state.selection(settings.cfg)
    try:
        run = make_run(
            settings.cfg,
            settings.source,
            settings.device,
            sentences,
            view.hooks(settings.cfg, chosen),
        )
    except ValueError as error:  # RunTooLarge, a device that vanished, bad input (quoted)
        st.error(literal(str(error)))
        return
    except RuntimeError as error:  # e.g. out of memory on a GPU
        st.error(f"The forward pass failed on {settings.device}: {error}")
        return
    input_messages(line_count, run)
    view.draw(run, state.fit_to_sentences(chosen, run.lengths))
    status.caption(status_line(run, page_start))


if __name__ == "__main__":
    main()
