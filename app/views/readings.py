"""Two more readings of attention, for the Attention view: what each head moves (norm-weighted
attention, Kobayashi et al. 2020) beside its weights, and attention rollout (Abnar & Zuidema
2020). Sections of a view, not a view of their own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.charts.attention import attention_head
from app.charts.heads import norm_weighted_figure, rollout_lines_figure, rollout_matrix_figure
from app.keys import Selection
from app.runs import Run, Runs
from app.views.layout import missing, number_table, pair, show_for, side_by_side, stacked
from encoder.inspect import moves
from encoder.inspect.lesson import pick_query
from encoder.inspect.rollout import rollout, rollout_sentence
from encoder.inspect.token_kinds import SINK_KINDS

SHARE_LABELS = ("setup", "reading", "layer")


def norm_weighted_head(run: Run, layer: int, sentence: int, head: int) -> np.ndarray:
    """One head's norm-weighted attention in one sentence: [query, key]."""
    norms = moves.value_norms(run.trace, run.model())[layer, sentence, head]  # [key]
    return run.attention[layer, sentence, head] * norms.numpy()[None, :]


def _shares(run: Run, sentence: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per head and reading, the shares to [CLS], [SEP] and punctuation over one
    sentence: moves.sink_shares' table, and one row per head with both readings side by side."""
    shares = moves.sink_shares(run.trace, run.model(), run.tokens, sentence=sentence)
    wide = shares.pivot(index=["layer", "head"], columns="reading", values=list(SINK_KINDS))
    wide.columns = [f"{kind} ({reading})" for kind, reading in wide.columns]
    return shares, wide.reset_index()


def draw(runs: Runs, chosen: Selection, sentence: int) -> None:
    """Both sections, after the Attention view's own."""
    draw_moves(runs, chosen, sentence)
    draw_rollout(runs, sentence)


def draw_moves(runs: Runs, chosen: Selection, sentence: int) -> None:
    st.subheader("What a head moves, not only where it looks")
    st.markdown(
        "A head's output at a token is the sum over keys of weight × f(key), where f is the "
        "head's value projection and its slice of the output projection. The right-hand matrix "
        "counts both: ‖weight × f(key)‖ (Kobayashi et al., 2020). A key with a short f(key) "
        "moves little, however much weight it gets."
    )
    for name, run in side_by_side(runs):
        label = name or "A"
        if missing(label, "layer", chosen.layer, run.cfg.num_layers) or missing(
            label, "head", chosen.head, run.cfg.num_heads
        ):
            continue
        layer, head = chosen.layer, chosen.head
        moved = norm_weighted_head(run, layer, sentence, head)  # [query, key]
        tokens, n = run.padded_tokens[sentence], run.n_valid(sentence)
        left, right = pair(name)
        with left:
            title = f"Layer {layer}, head {head}: weights"
            show_for(
                attention_head(run.attention[layer, sentence, head], tokens, n, title=title),
                "moves_weights",
                name,
            )
        with right:
            title = f"Layer {layer}, head {head}: what is moved"
            show_for(norm_weighted_figure(moved, tokens, n, title), "moves_norms", name)
    found = {id(run): _shares(run, sentence) for _, run in runs.named()}  # stacked passes runs
    for name, run in runs.named():
        summary = moves.share_summary(found[id(run)][0])
        prefix = "" if runs.b is None else f"**Setup {name}.** "
        st.markdown(prefix + moves.readings_sentence(summary))
    st.caption(
        "Share of each query's attention that goes to [CLS], [SEP] and punctuation in this "
        "sentence, mean over heads, per layer; norm-weighted rows are first rescaled to sum to 1."
    )
    table = stacked(runs, lambda run: moves.share_summary(found[id(run)][0]))
    number_table(table, SHARE_LABELS, height=36 * (len(table) + 1))
    with st.expander("Every head's shares"):
        heads = stacked(runs, lambda run: found[id(run)][1])
        number_table(heads, ("setup", "layer", "head"), height=400)


def draw_rollout(runs: Runs, sentence: int) -> None:
    st.subheader("Where the last layer's tokens draw from (rollout)")
    st.markdown(
        "Attention rollout (Abnar & Zuidema, 2020) composes the layers: each layer's attention, "
        "averaged over heads, counts half, the residual connection the other half "
        "(0.5·A + 0.5·I, rows rescaled to sum to 1), multiplied from the first layer up."
    )
    for name, run in side_by_side(runs):
        one = slice(sentence, sentence + 1)
        rolled = rollout(run.trace.attention[:, one], run.trace.attention_mask[one])[:, 0]
        tokens, n = run.padded_tokens[sentence], run.n_valid(sentence)
        query = pick_query(run.tokens[sentence])
        st.markdown(rollout_sentence(rolled[-1], run.tokens[sentence], query))
        left, right = pair(name)
        with left:
            title = f"Rollout after layer {run.cfg.num_layers - 1}: row = what a token draws on"
            show_for(rollout_matrix_figure(rolled[-1].numpy(), tokens, n, title), "rollout", name)
        with right:
            rows = np.asarray(rolled[:, query, :n])
            show_for(rollout_lines_figure(rows, run.tokens[sentence], query), "rollout_lines", name)
        st.caption(
            f"The lines follow “{run.tokens[sentence][query]}”, the token the lesson picks "
            "(the last pronoun, else the last word)."
        )
