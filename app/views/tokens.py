"""The Tokens view: how the text became tokens and ids, and the padded batch with its mask."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts.attention import batch_mask_grid
from app.i18n import _, n_
from app.keys import Selection
from app.page.changes import what_changed
from app.page.figures import token_table
from app.page.layout import headers, show_for, side_by_side
from app.runs import Run, Runs


def tokenizer_caption(run: Run) -> str:
    """What split the text into tokens: MiniLM's WordPiece, a task's symbols, or a checkpoint's
    own (uploaded, or found on this machine)."""
    model = run.task_model
    if model is not None:
        return _(
            "This {task} model's own tokenizer: one token per symbol, split on spaces, symbol i "
            "as id i, exactly as in training. No [CLS] or [SEP]: the model reads {length} "
            "symbols and answers one class per position (the last two columns).",
            task=model.task,
            length=model.seq_len,
        )
    if run.source is not None and run.source.check is not None:  # random weights, a task's size
        return _(
            "This model's vocabulary is a toy task's: one token per symbol, split on spaces, "
            "symbol i as id i. No [CLS] or [SEP]."
        )
    if run.key.source in ("random", "pretrained"):
        return _(
            "The MiniLM WordPiece tokenizer splits each line into tokens; [CLS] and [SEP] mark "
            "the start and end. '##' means the piece continues the previous word."
        )
    return _(
        "The checkpoint's own tokenizer (its tokenizer.json: {name}) splits each line.",
        name=run.tokenizer_name,
    )


POSITIONS_PER_ROW = 12  # token positions in one line of the tokenizations (at 1280 px, the main
# area has room for twelve tokens of ten characters beside the setup's name)


def tokenizations(runs: Runs, sentence: int) -> pd.DataFrame:
    """One sentence as each setup splits it, one row per setup (A above B): its token count,
    then its tokens by position (empty past its last)."""
    width = max(len(run.tokens[sentence]) for _, run in runs.named())
    rows = {
        n_(
            "{name} · {count} token",
            "{name} · {count} tokens",
            len(run.tokens[sentence]),
            name=name,
        ): run.tokens[sentence] + [""] * (width - len(run.tokens[sentence]))
        for name, run in runs.named()
    }
    return pd.DataFrame.from_dict(rows, orient="index", columns=[str(p) for p in range(width)])


def _both(runs: Runs) -> None:
    """Compare mode where A and B split the text differently: each sentence's two tokenizations,
    one above the other, with their counts."""
    st.header(_("How A and B split the text"))
    for s in range(len(runs.a.sentences)):
        st.text(_("Sentence {number}", number=s + 1))
        both = tokenizations(runs, s).rename_axis("setup").reset_index()
        width = len(both.columns) - 1  # positions
        for start in range(0, width, POSITIONS_PER_ROW):  # wrapped: no column past the edge
            end = min(start + POSITIONS_PER_ROW, width)
            line = both.iloc[:, [0, *range(1 + start, 1 + end)]]
            st.dataframe(  # tokens drawn literally
                line, hide_index=True, width="stretch", column_config=headers(line)
            )


def _panel(run: Run, name: str) -> None:
    st.caption(tokenizer_caption(run))
    columns = st.columns(min(len(run.sentences), 3 if not name else 2))
    for s, tokens in enumerate(run.tokens):
        with columns[s % len(columns)]:
            st.text(
                n_(
                    "Sentence {number}: {count} token",
                    "Sentence {number}: {count} tokens",
                    len(tokens),
                    number=s + 1,
                )
            )
            height = min(35 * len(tokens) + 38, 420)
            table = token_table(run, s)
            st.dataframe(table, width="stretch", height=height, column_config=headers(table))
    if len(run.sentences) > 1:
        st.header(_("The padded batch and its attention mask"))
        st.caption(
            _(
                "Shorter sentences are padded with [PAD] to the longest ({count} tokens). The "
                "attention mask is 1 for real tokens and 0 for padding, so no token attends to "
                "padding.",
                count=run.input_ids.shape[1],
            )
        )
        show_for(batch_mask_grid(run.padded_tokens, run.attention_mask), "mask_grid", name)


def draw(runs: Runs, chosen: Selection) -> None:
    st.header(_("Tokens"))
    what_changed(runs)
    if runs.b is not None and not runs.same_tokens:
        _both(runs)
    for name, run in side_by_side(runs):
        _panel(run, name)
