"""The Attention steps view's steps after the weights: why the scores are divided by √d_k, the
values mixed by the weights, every head projected by W_O, and the residual add."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app.charts.steps import (
    softmax_comparison,
    token_matrix,
    vector_strips,
)
from app.i18n import _
from app.page.changes import norm_does
from app.page.layout import show_for
from app.user_text import quoted
from app.views.step_tables import norm, said
from encoder.core.block import shape_text
from encoder.inspect.attention_steps import AttentionSteps


def scaling_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    dk, n = steps.head_dim, steps.n_valid
    real = steps.table[~steps.table["padding"]]
    seen = int((~real["outside_window"]).sum())  # the keys the softmax spreads over
    root = math.sqrt(dk)
    st.subheader(_("5 · Why divide by √d_k = √{dk} = {root}?", dk=dk, root=said(root, 2)))
    unscaled_top = int(np.argmax(steps.unscaled_weight))
    spread = real["q_dot_k"].max() - real["q_dot_k"].min()
    unscaled = steps.unscaled_weight[unscaled_top]
    values = dict(
        dk=dk,
        spread=said(spread, 2),
        scaled=said(spread / root, 2),
        unscaled=said(unscaled, 4),
        token=quoted(tokens[unscaled_top]),
        rest=said(1 - unscaled, 4),
        unscaled_entropy=said(steps.unscaled_entropy, 4),
        entropy=said(steps.entropy, 4),
        seen=seen,
        even=said(math.log(seen), 3),
    )
    st.caption(
        _(
            "A dot product of two {dk}-number vectors grows with d_k: here the raw scores q·k "
            "span {spread}, the scaled ones {scaled}. Without the division the softmax is "
            "peakier: it would give {unscaled} to {token} and {rest} to the rest (entropy "
            "{unscaled_entropy} nats instead of {entropy}; an even spread over {seen} keys is ln "
            "{seen} = {even}). Peaky softmaxes learn slowly: their gradients are nearly zero.",
            **values,
        )
        if steps.unscaled_entropy < steps.entropy
        else _(
            "A dot product of two {dk}-number vectors grows with d_k: here the raw scores q·k "
            "span {spread}, the scaled ones {scaled}. Without the division the softmax is no "
            "peakier: it would give {unscaled} to {token} and {rest} to the rest (entropy "
            "{unscaled_entropy} nats instead of {entropy}; an even spread over {seen} keys is ln "
            "{seen} = {even}). Peaky softmaxes learn slowly: their gradients are nearly zero.",
            **values,
        )
    )
    show_for(
        softmax_comparison(
            tokens[:n],
            real["weight"].to_numpy(),
            steps.unscaled_weight[:n],
            head_dim=dk,
            entropies=(steps.entropy, steps.unscaled_entropy),
        ),
        "step_scaling",
        name,
    )


def mix_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    T, dk = steps.values.shape
    top = int(steps.table["contribution_norm"].idxmax())
    st.subheader(_("6 · Mix the values: z_i = Σ_j weight_j v_j {shape}", shape=shape_text((dk,))))
    st.caption(
        _(
            "Each value row is scaled by its weight; z_i is the sum of the rows (‖z_i‖ = "
            "{length}). The largest row is key {index} {token}: ‖weight v‖ = {largest}.",
            length=said(norm(steps.z)),
            index=top,
            token=quoted(tokens[top]),
            largest=said(steps.table["contribution_norm"][top]),
        )
    )
    show_for(
        token_matrix(
            steps.weighted_values,
            tokens,
            steps.n_valid,
            title=_("weight_j v_j {shape}: the rows that are summed", shape=shape_text((T, dk))),
            colour_title="w·v",
        ),
        "step_weighted",
        name,
    )
    show_for(
        vector_strips([("z_i", steps.z)], title=_("z_i = the column sums: {dk} numbers", dk=dk)),
        "step_z",
        name,
    )


def output_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    H, dk, d, h = steps.num_heads, steps.head_dim, steps.d_model, steps.head
    st.subheader(
        _(
            "7 · All {heads} heads side by side, projected by W_O {shape}",
            heads=H,
            shape=shape_text((d,)),
        )
    )
    st.latex(
        rf"\mathrm{{attn}}_i = \mathrm{{concat}}(z_i^{{(0)}},\dots,z_i^{{({H - 1})}})\,W_O^\top"
        rf" + b_O \qquad [{d}] = [{H} \cdot {dk}]\,[{d} \times {d}] + [{d}]"
    )
    concat = steps.all_z.reshape(-1)
    show_for(
        vector_strips(
            [(_("concat of every head's z_i"), concat)],
            title=_(
                "{heads} heads x {dk} numbers = {d}; head {head} outlined",
                heads=H,
                dk=dk,
                d=d,
                head=h,
            ),
            group_size=dk,
            highlight_group=h,
        ),
        "step_concat",
        name,
    )
    show_for(
        vector_strips(
            [
                (_("head {head}'s share: W_O[:, head {head}] z_i", head=h), steps.head_share),
                ("attn_i", steps.attention_out),
            ],
            title=_("The attention output: {d} numbers", d=d),
            robust=True,
        ),
        "step_attn_out",
        name,
    )
    st.caption(
        _(
            "Head {head}'s z_i meets only its {dk} columns of W_O: its share of the output has "
            "length {share}, the whole attention output {output} (every head's share plus the "
            "bias b_O, ‖b_O‖ = {bias}). Switching the head off (Attention view) zeroes exactly "
            "this share.",
            head=h,
            dk=dk,
            share=said(norm(steps.head_share)),
            output=said(norm(steps.attention_out)),
            bias=said(norm(steps.b_o)),
        )
    )


def residual_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    d = steps.d_model
    if steps.norm_first:
        st.subheader(
            _("8 · Residual add: the stream after attention {shape}", shape=shape_text((d,)))
        )
        st.latex(r"h_i = x_i + \mathrm{attn}_i")
        rows = [
            ("x_i", steps.block_input),
            ("attn_i", steps.attention_out),
            ("h_i = x_i + attn_i", steps.block_mid),
        ]
        note = _(
            "Pre-norm adds the attention output to the un-normalised stream: ‖x_i‖ = {x}, "
            "‖attn_i‖ = {attn}, ‖h_i‖ = {h}. The feed-forward half of the block follows.",
            x=said(norm(steps.block_input)),
            attn=said(norm(steps.attention_out)),
            h=said(norm(steps.block_mid)),
        )
    else:
        st.subheader(
            _(
                "8 · Residual add, then the norm: the stream after attention {shape}",
                shape=shape_text((d,)),
            )
        )
        st.latex(r"h_i = \mathrm{LN}_1(x_i + \mathrm{attn}_i)")
        rows = [
            ("x_i", steps.block_input),
            ("attn_i", steps.attention_out),
            ("x_i + attn_i", steps.residual_sum),
            ("h_i = LN1(sum)", steps.block_mid),
        ]
        note = " ".join(
            (
                _("Post-norm normalises the sum."),
                norm_does("LN1", steps.norm_type, steps.ln1_mean, steps.ln1_std, steps.norm_bias),
                _(
                    "‖x_i + attn_i‖ = {before} becomes ‖h_i‖ = {after}. The feed-forward half of "
                    "the block follows.",
                    before=said(norm(steps.residual_sum)),
                    after=said(norm(steps.block_mid)),
                ),
            )
        )
    show_for(
        vector_strips(rows, title=_("{d} numbers per row", d=d), robust=True),
        "step_residual",
        name,
    )
    st.caption(note)
