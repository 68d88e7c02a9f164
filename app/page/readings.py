"""Two more readings of attention, for the Attention view: what each head moves (norm-weighted
attention, Kobayashi et al. 2020) beside its weights, and attention rollout (Abnar & Zuidema
2020). Their matrices are modes of the attention explorer (app.explorer_payloads sends them); this
section says what they show in numbers: the sentences and the shares to [CLS], [SEP] and
punctuation. A section of a view, drawn only while its expander is open."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.i18n import _, percent, quoted
from app.page.layout import number_table, stacked
from app.runs import Run, Runs
from encoder.inspect import moves
from encoder.inspect.lesson import pick_query
from encoder.inspect.rollout import rollout, top_sources
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


def readings_sentence(summary: pd.DataFrame) -> str:
    """How far the two readings differ, with this run's numbers (moves.share_summary's table),
    in the page's language (moves.readings_sentence's words)."""
    overall = summary[summary["layer"] == "all"].set_index("reading")["sinks"]
    raw, moved = float(overall[moves.WEIGHT]), float(overall[moves.NORM_WEIGHTED])
    if raw <= 0:
        return _("No head gives any weight to [CLS], [SEP] or punctuation here.")
    shares = dict(raw=percent(raw, 0), moved=percent(moved, 0))
    little = moved < moves.MOVES_LITTLE * raw
    if moved < raw and little:
        return _(
            "Averaged over every head, {raw} of the attention weight goes to [CLS], [SEP] and "
            "punctuation; counted by what is moved (weight x the size of the transformed "
            "value), that share drops to {moved}. Much of the weight on these tokens moves "
            "little: they act as a place to park attention, not as a source of information.",
            **shares,
        )
    if moved < raw:
        return _(
            "Averaged over every head, {raw} of the attention weight goes to [CLS], [SEP] and "
            "punctuation; counted by what is moved (weight x the size of the transformed "
            "value), that share drops to {moved}. Here the weights and what is moved tell a "
            "similar story.",
            **shares,
        )
    return _(
        "Averaged over every head, {raw} of the attention weight goes to [CLS], [SEP] and "
        "punctuation; counted by what is moved (weight x the size of the transformed value), "
        "that share rises to {moved}. Here the weights and what is moved tell a similar story.",
        **shares,
    )


def rollout_sentence(matrix, tokens: list[str], query: int) -> str:
    """Which tokens `query`'s final representation draws on (matrix: the last layer's rollout of
    one sentence, [T, T]), in the page's language (encoder.inspect.rollout's words)."""
    listed = ", ".join(
        _("{token} ({share})", token=quoted(token), share=percent(share, 0))
        for token, share in top_sources(matrix[query], tokens)
    )
    return _(
        "After the last layer, {token} (position {position}) draws most on {sources}; {own} of "
        "it is still its own input token.",
        token=quoted(tokens[query]),
        position=query,
        sources=listed,
        own=percent(float(matrix[query, query]), 0),
    )


def draw(runs: Runs, sentence: int) -> None:
    """Both readings in numbers, inside the Attention view's section."""
    draw_moves(runs, sentence)
    draw_rollout(runs, sentence)


def draw_moves(runs: Runs, sentence: int) -> None:
    st.markdown(
        _(
            "**What a head moves, not only where it looks.** A head's output at a token is the "
            "sum over keys of weight × f(key), where f is the head's value projection and its "
            "slice of the output projection. The explorer's *What it moves* counts both: "
            "‖weight × f(key)‖ (Kobayashi et al., 2020). A key with a short f(key) moves little, "
            "however much weight it gets."
        )
    )
    found = {id(run): _shares(run, sentence) for _, run in runs.named()}  # stacked passes runs
    for name, run in runs.named():
        summary = moves.share_summary(found[id(run)][0])
        said = readings_sentence(summary)
        st.markdown(said if runs.b is None else _("**Setup {name}.** {said}", name=name, said=said))
    st.caption(
        _(
            "Share of each query's attention that goes to [CLS], [SEP] and punctuation in this "
            "sentence, mean over heads, per layer (first tab) and per head; norm-weighted rows "
            "are first rescaled to sum to 1."
        )
    )
    per_layer, per_head = st.tabs([_("Per layer"), _("Every head")])
    with per_layer:
        table = stacked(runs, lambda run: moves.share_summary(found[id(run)][0]))
        number_table(table, SHARE_LABELS, height=36 * (len(table) + 1))
    with per_head:
        heads = stacked(runs, lambda run: found[id(run)][1])
        number_table(heads, ("setup", "layer", "head"), height=400)


def draw_rollout(runs: Runs, sentence: int) -> None:
    st.markdown(
        _(
            "**Where the last layer's tokens draw from (rollout).** Attention rollout (Abnar & "
            "Zuidema, 2020) composes the layers: each layer's attention, averaged over heads, "
            "counts half, the residual connection the other half (0.5·A + 0.5·I, rows rescaled "
            "to sum to 1), multiplied from the first layer up. The explorer's *Rollout* draws it "
            "after the chosen layer."
        )
    )
    for name, run in runs.named():
        one = slice(sentence, sentence + 1)
        rolled = rollout(run.trace.attention[:, one], run.trace.attention_mask[one])[:, 0]
        query = pick_query(run.tokens[sentence])
        said = rollout_sentence(rolled[-1], run.tokens[sentence], query)
        st.markdown(said if runs.b is None else _("**Setup {name}.** {said}", name=name, said=said))
