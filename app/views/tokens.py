"""The Tokens view: how the text became tokens and ids, and the padded batch with its mask."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts.attention import batch_mask_grid
from app.keys import Selection
from app.runs import Run, Runs
from app.views.changes import what_changed
from app.views.figures import token_table
from app.views.layout import show_for, side_by_side


def tokenizer_caption(run: Run) -> str:
    """What split the text into tokens: MiniLM's WordPiece, a task's symbols, or a checkpoint's
    own (uploaded, or found on this machine)."""
    model = run.task_model
    if model is not None:
        return (
            f"This {model.task} model's own tokenizer: one token per symbol, split on spaces, "
            f"symbol i as id i, exactly as in training. No [CLS] or [SEP]: the model reads "
            f"{model.seq_len} symbols and answers one class per position (the last two columns)."
        )
    if run.source is not None and run.source.check is not None:  # random weights, a task's size
        return (
            "This model's vocabulary is a toy task's: one token per symbol, split on spaces, "
            "symbol i as id i. No [CLS] or [SEP]."
        )
    if run.key.source in ("random", "pretrained"):
        return (
            "The MiniLM WordPiece tokenizer splits each line into tokens; [CLS] and [SEP] mark "
            "the start and end. '##' means the piece continues the previous word."
        )
    return (
        f"The checkpoint's own tokenizer (its tokenizer.json: {run.tokenizer_name}) splits each "
        "line."
    )


POSITIONS_PER_ROW = 12  # token positions in one line of the tokenizations (at 1280 px, the main
# area has room for twelve tokens of ten characters beside the setup's name)


def tokenizations(runs: Runs, sentence: int) -> pd.DataFrame:
    """One sentence as each setup splits it, one row per setup (A above B): its token count,
    then its tokens by position (empty past its last)."""
    width = max(len(run.tokens[sentence]) for _, run in runs.named())
    rows = {
        f"{name} · {len(run.tokens[sentence])} tokens": run.tokens[sentence]
        + [""] * (width - len(run.tokens[sentence]))
        for name, run in runs.named()
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=[str(p) for p in range(width)])


def _both(runs: Runs) -> None:
    """Compare mode where A and B split the text differently: each sentence's two tokenizations,
    one above the other, with their counts."""
    st.header("How A and B split the text")
    for s in range(len(runs.a.sentences)):
        st.text(f"Sentence {s + 1}")
        both = tokenizations(runs, s).rename_axis("setup").reset_index()
        width = len(both.columns) - 1  # positions
        for start in range(0, width, POSITIONS_PER_ROW):  # wrapped: no column past the edge
            end = min(start + POSITIONS_PER_ROW, width)
            line = both.iloc[:, [0, *range(1 + start, 1 + end)]]
            st.dataframe(line, hide_index=True, width="stretch")  # tokens drawn literally


def _panel(run: Run, name: str) -> None:
    st.caption(tokenizer_caption(run))
    columns = st.columns(min(len(run.sentences), 3 if not name else 2))
    for s, tokens in enumerate(run.tokens):
        with columns[s % len(columns)]:
            st.text(f"Sentence {s + 1}: {len(tokens)} tokens")
            height = min(35 * len(tokens) + 38, 420)
            st.dataframe(token_table(run, s), width="stretch", height=height)
    if len(run.sentences) > 1:
        st.header("The padded batch and its attention mask")
        st.caption(
            f"Shorter sentences are padded with [PAD] to the longest ({run.input_ids.shape[1]} "
            "tokens). The attention mask is 1 for real tokens and 0 for padding, so no token "
            "attends to padding."
        )
        show_for(batch_mask_grid(run.padded_tokens, run.attention_mask), "mask_grid", name)


def draw(runs: Runs, chosen: Selection) -> None:
    st.header("Tokens")
    what_changed(runs)
    if runs.b is not None and not runs.same_tokens:
        _both(runs)
    for name, run in side_by_side(runs):
        _panel(run, name)
