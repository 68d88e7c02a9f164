"""The Attention steps view's steps before the scores: the query token's row entering the block,
its query, every token's key and value, and in a RoPE model how q and k turn by position."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app.charts.steps import (
    rope_turns,
    token_matrix,
    vector_strips,
    weight_matrix,
)
from app.i18n import _, localised
from app.page.changes import norm_does
from app.page.layout import pair, show_for
from app.user_text import quoted
from app.views.step_tables import norm, said
from encoder.core.block import shape_text
from encoder.inspect.attention_steps import AttentionSteps


def input_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    d, i = steps.d_model, steps.query
    st.subheader(
        _("1 · The query token's row entering the block, x_i {shape}", shape=shape_text((d,)))
    )
    rows = [(_("x_i (block input)"), steps.block_input)]
    if steps.norm_first and math.isnan(steps.ln1_std):
        st.caption(
            _(
                "Pre-norm, but block {layer} has no norm before its attention (the embeddings' "
                "norm already normalised its input): attention reads row {i} ({token}) as it "
                "is, ‖x_i‖ = {length}.",
                layer=steps.layer,
                i=i,
                token=quoted(tokens[i]),
                length=said(norm(steps.block_input)),
            )
        )
    elif steps.norm_first:
        rows.append((_("LN1(x_i) (attention reads this)"), steps.normalised))
        st.caption(
            _(
                "Pre-norm: attention reads a normalised copy of row {i} ({token}).",
                i=i,
                token=quoted(tokens[i]),
            )
            + " "
            + norm_does("LN1", steps.norm_type, steps.ln1_mean, steps.ln1_std, steps.norm_bias)
            + " "
            + _(
                "‖x_i‖ = {before} becomes ‖LN1(x_i)‖ = {after}.",
                before=said(norm(steps.block_input)),
                after=said(norm(steps.normalised)),
            )
        )
    else:
        st.caption(
            _(
                "Post-norm: attention reads row {i} ({token}) of the block input as it is "
                "(‖x_i‖ = {length}); the norm comes after the residual add (step 8).",
                i=i,
                token=quoted(tokens[i]),
                length=said(norm(steps.block_input)),
            )
        )
    show_for(
        vector_strips(rows, title=_("{d} numbers per token", d=d), robust=True), "step_input", name
    )


def query_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    dk, d = steps.head_dim, steps.d_model
    reads = r"\mathrm{LN}_1(x_i)" if steps.norm_first and not math.isnan(steps.ln1_std) else "x_i"
    st.subheader(
        _(
            "2 · The query vector q_i {shape}: head {head} projects with W_Q",
            shape=shape_text((dk,)),
            head=steps.head,
        )
    )
    st.latex(
        rf"q_i = W_Q^{{({steps.head})}}\,{reads} + b_Q^{{({steps.head})}}"
        rf"\qquad [{dk}] = [{dk} \times {d}]\,[{d}] + [{dk}]"
    )
    left, right = pair(name, (3, 2))
    with left:
        show_for(
            weight_matrix(
                steps.w_q,
                title=_(
                    "W_Q slice of head {head}: {rows} rows x {columns} columns",
                    head=steps.head,
                    rows=dk,
                    columns=d,
                ),
                row_title=_("query dimension"),
            ),
            "step_wq",
            name,
        )
    with right:
        show_for(
            vector_strips(
                [("q_i", steps.q), ("b_Q", steps.b_q)], title=_("q_i: {dk} numbers", dk=dk)
            ),
            "step_q",
            name,
        )
    st.caption(
        _(
            "Each of q_i's {dk} numbers is one row of W_Q times the {d} input numbers, plus a "
            "bias. ‖q_i‖ = {length}. The keys and values below are made the same way from every "
            "token with W_K and W_V.",
            dk=dk,
            d=d,
            length=said(norm(steps.q)),
        )
    )


def keys_values_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    T, dk = steps.keys.shape
    st.subheader(
        _("3 · Every token's key k_j and value v_j, {shape} each", shape=shape_text((T, dk)))
    )
    padding = T - steps.n_valid
    note = _(
        "One row per token of the sentence: the key says what a token offers to be found by, the "
        "value what it passes on when attended to."
    )
    if padding:
        note += " " + _(
            "The {padding} padding rows (grey) are computed too, but step 4 masks them out.",
            padding=padding,
        )
    st.caption(note)
    _side_by_side(
        steps,
        tokens,
        name,
        (steps.keys, _("Keys K {shape}", shape=shape_text((T, dk))), "k", "step_keys"),
        (steps.values, _("Values V {shape}", shape=shape_text((T, dk))), "v", "step_values"),
    )


def rope_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    T, dk = steps.keys.shape
    i = steps.query
    if steps.rotated_q is None:  # compare mode: the other setup rotates, this one does not
        st.caption(
            _(
                "This setup adds its positions to the embeddings before block 0: nothing turns q "
                "and k here."
            )
        )
        return
    st.subheader(
        _(
            "3b · RoPE: q_i and every k_j turned by their position {shape}",
            shape=shape_text((dk,)),
        )
    )
    st.latex(
        r"\mathrm{RoPE}_p\begin{pmatrix} x_j \\ x_{j + d_k/2} \end{pmatrix} = "
        r"\begin{pmatrix} \cos p\theta_j & -\sin p\theta_j \\ \sin p\theta_j & \cos p\theta_j"
        rf"\end{{pmatrix}}\begin{{pmatrix}} x_j \\ x_{{j + d_k/2}} \end{{pmatrix}},\quad"
        rf"\theta_j = {steps.rope_base:g}^{{-2j/{dk}}}"
    )
    st.caption(_rope_read(steps))
    show_for(
        vector_strips(
            [("q_i (W_Q x + b_Q)", steps.q), (f"RoPE_{i}(q_i)", steps.rotated_q)],
            title=_("q_i before and after the turn: {dk} numbers", dk=dk),
        ),
        "step_rope_q",
        name,
    )
    show_for(rope_turns(steps.q_turned, steps.rope_angles, position=i), "step_rope_turns", name)
    after = _("Keys after, each turned by its position {shape}", shape=shape_text((T, dk)))
    _side_by_side(
        steps,
        tokens,
        name,
        (steps.keys, _("Keys before {shape}", shape=shape_text((T, dk))), "k", "step_rope_keys"),
        (steps.rotated_keys, after, "k", "step_rope_rotated_keys"),
    )


def _rope_read(steps: AttentionSteps) -> str:
    """How q_i turned: by which angles, within how far of the formula's, and its length kept."""
    i, half = steps.query, steps.keys.shape[1] // 2
    gap = float(np.max(np.abs(np.angle(np.exp(1j * (steps.q_turned - steps.rope_angles))))))
    before, after = norm(steps.q), norm(steps.rotated_q)
    values = dict(
        half=half,
        base=localised(f"{steps.rope_base:g}"),
        gap=localised(f"{gap:.1e}"),
        before=said(before),
        after=said(after),
    )
    if i == 0:
        caption = _(
            "Nothing was added to the embeddings for positions: this layer turns each of the "
            "{half} pairs of dimensions (j, j + {half}) of q_i and k_j by its position times θ_j "
            "(base {base}). At position 0 nothing turns: RoPE(q_0) = q_0; read from this run's "
            "vectors, every pair turned by the formula's angle to within {gap} rad (a full turn "
            "aside). A turn keeps lengths: ‖q_i‖ = {before} before, {after} after. Each key k_j "
            "turns by its own position j, so the score q_i · k_j sees how far apart i and j are.",
            **values,
        )
    else:
        first, last = steps.rope_angles[0], steps.rope_angles[-1]
        caption = _(
            "Nothing was added to the embeddings for positions: this layer turns each of the "
            "{half} pairs of dimensions (j, j + {half}) of q_i and k_j by its position times θ_j "
            "(base {base}). At position {i}, pair 0 turns by {first} rad ({first_degrees}°), "
            "pair {last_pair} by {last} rad ({last_degrees}°); read from this run's vectors, "
            "every pair turned by the formula's angle to within {gap} rad (a full turn aside). A "
            "turn keeps lengths: ‖q_i‖ = {before} before, {after} after. Each key k_j turns by "
            "its own position j, so the score q_i · k_j sees how far apart i and j are.",
            i=i,
            first=said(first),
            first_degrees=said(math.degrees(first), 1),
            last_pair=half - 1,
            last=format(last, ".3g"),
            last_degrees=format(math.degrees(last), ".3g"),
            **values,
        )
    return caption


def _side_by_side(steps: AttentionSteps, tokens: list[str], name: str, *matrices: tuple) -> None:
    """Two [T, dk] matrices of one query's step side by side, each (values, title, colour
    title, key)."""
    for where, (values, title, colour, key) in zip(pair(name), matrices, strict=True):
        with where:
            matrix = token_matrix(values, tokens, steps.n_valid, title=title, colour_title=colour)
            show_for(matrix, key, name)
