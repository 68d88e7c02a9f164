"""Two more readings of attention, for the Attention view: what each head moves (norm-weighted
attention, Kobayashi et al. 2020) beside its weights, and attention rollout (Abnar & Zuidema
2020). Their matrices are modes of the attention explorer (app.explorer_payloads sends them); this
section says what they show in numbers: the sentences and the shares to [CLS], [SEP] and
punctuation. A section of a view, drawn only while its expander is open."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.runs import Run, Runs
from app.views.layout import number_table, stacked
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


def draw(runs: Runs, sentence: int) -> None:
    """Both readings in numbers, inside the Attention view's section."""
    draw_moves(runs, sentence)
    draw_rollout(runs, sentence)


def draw_moves(runs: Runs, sentence: int) -> None:
    st.markdown(
        "**What a head moves, not only where it looks.** A head's output at a token is the sum "
        "over keys of weight × f(key), where f is the head's value projection and its slice of "
        "the output projection. The explorer's *What it moves* counts both: ‖weight × f(key)‖ "
        "(Kobayashi et al., 2020). A key with a short f(key) moves little, however much weight "
        "it gets."
    )
    found = {id(run): _shares(run, sentence) for _, run in runs.named()}  # stacked passes runs
    for name, run in runs.named():
        summary = moves.share_summary(found[id(run)][0])
        prefix = "" if runs.b is None else f"**Setup {name}.** "
        st.markdown(prefix + moves.readings_sentence(summary))
    st.caption(
        "Share of each query's attention that goes to [CLS], [SEP] and punctuation in this "
        "sentence, mean over heads, per layer (first tab) and per head; norm-weighted rows are "
        "first rescaled to sum to 1."
    )
    per_layer, per_head = st.tabs(["Per layer", "Every head"])
    with per_layer:
        table = stacked(runs, lambda run: moves.share_summary(found[id(run)][0]))
        number_table(table, SHARE_LABELS, height=36 * (len(table) + 1))
    with per_head:
        heads = stacked(runs, lambda run: found[id(run)][1])
        number_table(heads, ("setup", "layer", "head"), height=400)


def draw_rollout(runs: Runs, sentence: int) -> None:
    st.markdown(
        "**Where the last layer's tokens draw from (rollout).** Attention rollout (Abnar & "
        "Zuidema, 2020) composes the layers: each layer's attention, averaged over heads, counts "
        "half, the residual connection the other half (0.5·A + 0.5·I, rows rescaled to sum to "
        "1), multiplied from the first layer up. The explorer's *Rollout* draws it after the "
        "chosen layer."
    )
    for name, run in runs.named():
        one = slice(sentence, sentence + 1)
        rolled = rollout(run.trace.attention[:, one], run.trace.attention_mask[one])[:, 0]
        query = pick_query(run.tokens[sentence])
        prefix = "" if runs.b is None else f"**Setup {name}.** "
        st.markdown(prefix + rollout_sentence(rolled[-1], run.tokens[sentence], query))
