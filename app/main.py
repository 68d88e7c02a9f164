"""Encoder Explorer: `streamlit run app/main.py`.

Thin on purpose: read the controls, fetch the cached run, draw the chosen view, say what happened.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import streamlit as st

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:  # `app` and `encoder` importable; the script reruns on every change
    sys.path.insert(0, ROOT)

from app import views  # noqa: E402
from app.controls import VIEWS, render_sidebar, sync_query_params  # noqa: E402
from app.markdown import literal  # noqa: E402
from app.runs import run_for, split_lines  # noqa: E402
from app.training_view import PERSISTENT_KEYS as TRAINING_KEYS  # noqa: E402
from app.training_view import render_training_view  # noqa: E402
from encoder.inspect.limits import MAX_SENTENCES  # noqa: E402


def keep_widget_state(keys: tuple[str, ...]) -> None:
    """Streamlit forgets a widget's value on a run that does not draw it (another view is
    open); writing the value back marks it as the user's, so it survives."""
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def status_line(run, page_start: float) -> str:
    page_ms = (time.perf_counter() - page_start) * 1000
    return (
        f"Device {run.device} · {len(run.sentences)} sentence(s), "
        f"{int(run.attention_mask.sum())} tokens · {run.parameters:,} parameters · "
        f"forward pass {run.forward_ms:.0f} ms · page {page_ms:.0f} ms"
    )


def input_messages(line_count: int, run) -> None:
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


def main() -> None:
    page_start = time.perf_counter()
    st.set_page_config(page_title="Encoder Explorer", page_icon="🔍", layout="wide")
    keep_widget_state(views.PERSISTENT_KEYS + TRAINING_KEYS)
    settings = render_sidebar()
    if st.session_state["view"] is None:  # a click on the selected view un-selects it
        st.session_state["view"] = st.session_state.get("_last_view", "Attention")
    st.session_state["_last_view"] = st.session_state["view"]
    sync_query_params(settings)
    st.title("Encoder Explorer")
    view = st.segmented_control("View", VIEWS, key="view", label_visibility="collapsed")
    status = st.empty()
    for notice in settings.notices:
        st.warning(notice)
    if view == "Training":
        render_training_view(settings.cfg, settings.error)
        return
    if settings.error:
        st.error(f"This architecture is impossible: {settings.error}")
        return
    sentences, line_count = split_lines(settings.text)
    if not sentences:
        st.info("The text box is empty: type a sentence in the sidebar (one per line).")
        return
    page = views.VIEWS[view]
    try:
        run = run_for(
            settings.cfg, settings.source, settings.device, sentences, page.hooks(settings.cfg)
        )
    except ValueError as error:  # RunTooLarge, a device that vanished, bad input (quoted)
        st.error(literal(str(error)))
        return
    except RuntimeError as error:  # e.g. out of memory on a GPU
        st.error(f"The forward pass failed on {settings.device}: {error}")
        return
    input_messages(line_count, run)
    page.draw(run)
    status.caption(status_line(run, page_start))


main()
