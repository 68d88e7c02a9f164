"""The "Attention steps" view: one query's attention computation with the live model's numbers,
laid out in the order the data flows, each step with its shape.

Every number comes from the run's trace and the model's weights through
encoder.inspect.attention_steps; this module only lays them out and words them.
"""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app.charts.steps import (
    rope_turns,
    softmax_comparison,
    token_matrix,
    vector_strips,
    weight_matrix,
    window_matrix,
)
from app.i18n import _, localised, number
from app.keys import (
    FITS_HEAD,
    FITS_LAYER,
    FITS_POSITION,
    HEAD_BOUNDS,
    LAYER_BOUNDS,
    POSITION_BOUNDS,
    Key,
    Selection,
)
from app.page.changes import norm_does, what_changed
from app.page.layout import header, missing, pair, setup_title, show_for, side_by_side
from app.page.widgets import pick_index, pick_sentence, pick_token
from app.runs import Runs
from app.user_text import quoted
from app.views.step_tables import styled_table, weights_compared
from encoder import EncoderConfig
from encoder.core.block import shape_text
from encoder.inspect.attention_steps import AttentionSteps, names_for_steps

KEYS = (  # one query's attention: its layer, head and query, each in the link
    Key("step_layer", 0, in_url=True, bounds=LAYER_BOUNDS, selects=True, fits=FITS_LAYER),
    Key("step_head", 0, in_url=True, bounds=HEAD_BOUNDS, selects=True, fits=FITS_HEAD),
    Key("step_query", 0, in_url=True, bounds=POSITION_BOUNDS, selects=True, fits=FITS_POSITION),
)


def hooks(cfg: EncoderConfig, chosen: Selection) -> list[str]:
    """Only the chosen layer's tensors are kept for this view (the last layer's for a setup that
    has fewer layers; the view says it has no such layer)."""
    return names_for_steps(cfg, min(chosen.step_layer, cfg.num_layers - 1))


def norm(values: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(values, dtype=np.float64)))


def said(value: float, digits: int = 3) -> str:
    """A number in a sentence, as the page's language writes it (f"{value:.3f}" in English)."""
    return number(value, digits, grouped=False)


def draw(runs: Runs, chosen: Selection) -> None:
    run = runs.a
    sentence = pick_sentence(run.sentences, chosen.sentence)
    setups = runs.named()
    left, middle, right = st.columns(3)
    layer = pick_index(_("Layer"), max(r.cfg.num_layers for __, r in setups), "step_layer", left)
    head = pick_index(_("Head"), max(r.cfg.num_heads for __, r in setups), "step_head", middle)
    query = pick_token(
        _("Query token (position)"),
        run.tokens[sentence],
        "step_query",
        right,
        help=_("The token whose attention is computed; positions count from 0."),
    )
    what_changed(runs)
    shown = []  # (name, steps, padded tokens) of each setup that has this layer, head and query
    titles = {name: setup_title(name, setup) for name, setup in runs.named()}
    for name, setup in side_by_side(runs):
        label = name or "A"
        if (
            missing(label, "layer", layer, setup.cfg.num_layers)
            or missing(label, "head", head, setup.cfg.num_heads)
            or missing(label, "token", query, setup.n_valid(sentence))
        ):
            continue
        steps = setup.attention_steps(sentence, layer, head, query)
        tokens = setup.padded_tokens[sentence]
        _introduction(steps, tokens)
        shown.append((name, steps, tokens))
    for step in STEPS:
        label, open_at_first, key = STEP_LABELS[step]
        if step is _rope_step and not any(s.rotated_q is not None for __, s, ___ in shown):
            continue  # positions are added to the embeddings: nothing turns q and k
        with st.expander(label(), expanded=open_at_first, key=key, on_change="rerun") as box:
            if not box.open:  # a closed step is neither computed nor sent
                continue
            stacked = step is _table_step  # every column of a setup's table on the page's width
            for (name, steps, tokens), where in zip(
                shown, _places(len(shown), stacked), strict=True
            ):
                with where:
                    if stacked and len(shown) == 2:
                        st.markdown(f"**{titles[name]}**")
                    step(steps, tokens, name)
            if step is _table_step and len(shown) == 2:
                weights_compared(shown)


STEP_SPACING = "medium"


def _places(count: int, stacked: bool = False) -> list:
    """Where each setup's step goes: the main area, or two columns side by side (`stacked`: one
    under the other, each on the page's width, as a table of nine columns needs)."""
    if count == 1 or stacked:
        return [st.container() for __ in range(count)]
    return list(st.columns(2, gap=STEP_SPACING))


def _introduction(steps: AttentionSteps, tokens: list[str]) -> None:
    table = steps.table
    top = int(table["weight"].idxmax())
    query = steps.query
    st.header(
        _(
            "Layer {layer}, head {head}: how query {query} {token} attends",
            layer=steps.layer,
            head=steps.head,
            query=query,
            token=quoted(tokens[query]),
        )
    )
    st.markdown(
        _(
            "It gives its largest weight, **{weight}**, to key {index} {token}. Below, every "
            "step from the block's input to the stream after attention, with this model's "
            "numbers (d_model = {d_model}, {heads} heads of d_k = {d_k}).",
            weight=said(table["weight"][top]),
            index=top,
            token=quoted(tokens[top]),
            d_model=steps.d_model,
            heads=steps.num_heads,
            d_k=steps.head_dim,
        )
    )


def _input_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
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


def _query_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
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


def _keys_values_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
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
    left, right = pair(name)
    with left:
        show_for(
            token_matrix(
                steps.keys,
                tokens,
                steps.n_valid,
                title=_("Keys K {shape}", shape=shape_text((T, dk))),
                colour_title="k",
            ),
            "step_keys",
            name,
        )
    with right:
        show_for(
            token_matrix(
                steps.values,
                tokens,
                steps.n_valid,
                title=_("Values V {shape}", shape=shape_text((T, dk))),
                colour_title="v",
            ),
            "step_values",
            name,
        )


def _rope_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    T, dk = steps.keys.shape
    i, half = steps.query, dk // 2
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
    st.caption(caption)
    show_for(
        vector_strips(
            [("q_i (W_Q x + b_Q)", steps.q), (f"RoPE_{i}(q_i)", steps.rotated_q)],
            title=_("q_i before and after the turn: {dk} numbers", dk=dk),
        ),
        "step_rope_q",
        name,
    )
    show_for(rope_turns(steps.q_turned, steps.rope_angles, position=i), "step_rope_turns", name)
    left, right = pair(name)
    with left:
        show_for(
            token_matrix(
                steps.keys,
                tokens,
                steps.n_valid,
                title=_("Keys before {shape}", shape=shape_text((T, dk))),
                colour_title="k",
            ),
            "step_rope_keys",
            name,
        )
    with right:
        show_for(
            token_matrix(
                steps.rotated_keys,
                tokens,
                steps.n_valid,
                title=_(
                    "Keys after, each turned by its position {shape}", shape=shape_text((T, dk))
                ),
                colour_title="k",
            ),
            "step_rope_rotated_keys",
            name,
        )


def _tex_text(words: str) -> str:
    """Words inside an equation (KaTeX's \\text), LaTeX's special characters escaped."""
    escaped = "".join(f"\\{c}" if c in "&%$#_{}" else c for c in words)
    return rf"\text{{{escaped}}}"


def _table_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    table, T, dk = steps.table, steps.keys.shape[0], steps.head_dim
    real = table[~table["padding"]]
    seen = real[~real["outside_window"]]
    st.subheader(_("4 · Scores and weights: one row per key ({rows} rows)", rows=T))
    between = r" & \qquad "  # two equations a line: the table step has the page's width
    # the columns' names, as the equations name them: in the page's language
    scaled, masked, weight = (
        _tex_text(header(column)) for column in ("scaled", "masked", "weight")
    )
    either = _tex_text(_("or"))
    hidden = _tex_text(_("for padding, outside the window") if steps.window else _("for padding"))
    st.latex(
        r"\begin{aligned}"
        + (
            r"\text{q\_dot\_k}_j &= \mathrm{RoPE}_i(q_i) \cdot \mathrm{RoPE}_j(k_j)"
            if steps.rotated_q is not None
            else r"\text{q\_dot\_k}_j &= q_i \cdot k_j"
        )
        + between
        + rf"{scaled}_j &= \text{{q\_dot\_k}}_j \,/\, \sqrt{{{dk}}} \\"
        + rf"{masked}_j &= {scaled}_j \ {either}\ -\infty\ {hidden}"
        + between
        + rf"{weight}_j &= \frac{{e^{{{masked}_j}}}}{{\sum_{{j'}} e^{{{masked}_{{j'}}}}}}"
        r"\end{aligned}"
    )
    st.dataframe(
        styled_table(table),
        column_config={
            "position": "j",
            "key": _("key token"),
            "padding": _("padding?"),
            "outside_window": _("outside the window?"),
            "scaled": header("scaled"),
            "masked": header("masked"),
            "weight": header("weight"),
            "contribution_norm": f"‖{header('weight')}_j v_j‖",
        },
        hide_index=True,
        width="stretch",
        height=min(35 * T + 38, 640),
    )
    top = int(table["weight"].idxmax())
    padding = T - steps.n_valid
    pad_note = (
        _("The {padding} padding keys get −∞ and so weight exactly 0.", padding=padding)
        if padding
        else _("This sentence has no padding.")
    )
    values = dict(
        query=steps.query,
        layer=steps.layer,
        head=steps.head,
        keys=len(seen),
        total=said(seen["weight"].sum(), 6),
        largest=said(table["weight"][top], 4),
        index=top,
        token=quoted(tokens[top]),
    )
    row = (
        _(
            "The weight column equals the head's attention row for this query: row {query} of "
            "layer {layer}, head {head} in the Attention view. Its {keys} keys inside the window "
            "sum to {total}; the largest (highlighted) is {largest} on key {index} {token}.",
            **values,
        )
        if len(seen) < len(real)
        else _(
            "The weight column equals the head's attention row for this query: row {query} of "
            "layer {layer}, head {head} in the Attention view. Its {keys} keys sum to {total}; "
            "the largest (highlighted) is {largest} on key {index} {token}.",
            **values,
        )
    )
    st.info(row + " " + pad_note)
    if steps.model_window:
        _window(steps, tokens, name)


def _window(steps: AttentionSteps, tokens: list[str], name: str) -> None:
    """Which keys this layer's local window masks (or that the layer is global), counted from
    the run's scores, and the head's weights with the masked cells drawn as masked."""
    n, i, layer = steps.n_valid, steps.query, steps.layer
    local = ", ".join(str(index) for index in steps.local_layers)
    every = len(steps.local_layers) == steps.num_layers  # no global layer
    if not steps.window:
        st.caption(
            _(
                "Layer {layer} is global: every query sees every key (this model's window of "
                "{window} acts in layers {local}).",
                layer=layer,
                window=steps.model_window,
                local=local,
            )
        )
        return
    removed = int(steps.outside_window[:n, :n].sum())
    in_row = int(steps.table["outside_window"].sum())
    values = dict(
        layer=layer,
        local=local,
        reach=steps.window // 2,
        window=steps.window,
        removed=removed,
        n=n,
        pairs=n * n,
        i=i,
        in_row=in_row,
    )
    st.caption(
        _(
            "Layer {layer} is local, as every layer of this model is: a query sees only the keys "
            "within {reach} positions of it (window {window}). In this sentence the window "
            "removes {removed} of the {n} × {n} = {pairs} query-key pairs of layer {layer} "
            "(every head alike); in query {i}'s row, {in_row} keys get −∞ and weight exactly 0 "
            "(rows marked OUTSIDE).",
            **values,
        )
        if every
        else _(
            "Layer {layer} is local (this model's local layers: {local}): a query sees only the "
            "keys within {reach} positions of it (window {window}). In this sentence the window "
            "removes {removed} of the {n} × {n} = {pairs} query-key pairs of layer {layer} "
            "(every head alike); in query {i}'s row, {in_row} keys get −∞ and weight exactly 0 "
            "(rows marked OUTSIDE).",
            **values,
        )
    )
    show_for(
        window_matrix(
            steps.pattern,
            tokens,
            n,
            steps.outside_window,
            query=i,
            title=_(
                "Layer {layer}, head {head}: every query's weights; crossed cells are outside "
                "the window ({removed} of {pairs})",
                layer=layer,
                head=steps.head,
                removed=removed,
                pairs=n * n,
            ),
        ),
        "step_window",
        name,
    )


def _scaling_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
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


def _mix_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
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


def _output_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
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


def _residual_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
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


# Each step in data-flow order, its expander's label, whether it opens at first and its key: the
# scores-and-weights table, the view's answer (which key the query weighs most, and why), opens
# at first under the outline of every step; each other step is computed and sent only once its
# expander is opened, as a teacher walks through them (the keys' and values' heatmaps open at
# first cost a rerun half as long again: docs/performance.md).
STEP_LABELS = {  # step: its label (in the page's language), whether it opens at first, its key
    _input_step: (
        lambda: _("1 · The query token's row entering the block"),
        False,
        "step_open_0",
    ),
    _query_step: (lambda: _("2 · Its query q_i"), False, "step_open_1"),
    _keys_values_step: (lambda: _("3 · Every token's key and value"), False, "step_open_2"),
    # RoPE models only: where the positions enter
    _rope_step: (lambda: _("3b · RoPE turns q and k by position"), False, "step_open_rope"),
    _table_step: (lambda: _("4 · Scores and weights, one row per key"), True, "step_open_3"),
    _scaling_step: (lambda: _("5 · Why divide by √d_k?"), False, "step_open_4"),
    _mix_step: (lambda: _("6 · Mix the values"), False, "step_open_5"),
    _output_step: (lambda: _("7 · All heads, projected by W_O"), False, "step_open_6"),
    _residual_step: (lambda: _("8 · The residual add"), False, "step_open_7"),
}
STEPS = tuple(STEP_LABELS)
