"""The "Attention steps" view: one query's attention computation with the live model's numbers,
laid out in the order the data flows, each step with its shape.

Every number comes from the run's trace and the model's weights through
encoder.inspect.attention_steps; this module only lays them out and words them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from app.charts.steps import (
    rope_turns,
    softmax_comparison,
    token_matrix,
    vector_strips,
    weight_matrix,
    window_matrix,
)
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
from app.runs import Runs
from app.user_text import quoted
from app.views.changes import norm_does, what_changed
from app.views.layout import missing, pair, show_for, side_by_side
from app.views.widgets import pick_index, pick_sentence, pick_token
from encoder import EncoderConfig
from encoder.core.block import shape_text
from encoder.inspect.attention_steps import AttentionSteps, names_for_steps

PAD_ROW_STYLE = "background-color: #d0d0d0; color: #555555"
WINDOW_ROW_STYLE = "background-color: #e6e6e6; color: #555555; font-style: italic"
TOP_ROW_STYLE = "background-color: #fff3b0"


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


def draw(runs: Runs, chosen: Selection) -> None:
    run = runs.a
    sentence = pick_sentence(run.sentences, chosen.sentence)
    setups = runs.named()
    left, middle, right = st.columns(3)
    layer = pick_index("Layer", max(r.cfg.num_layers for _, r in setups), "step_layer", left)
    head = pick_index("Head", max(r.cfg.num_heads for _, r in setups), "step_head", middle)
    query = pick_token(
        "Query token (position)",
        run.tokens[sentence],
        "step_query",
        right,
        help="The token whose attention is computed; positions count from 0.",
    )
    what_changed(runs)
    shown = []  # (name, steps, padded tokens) of each setup that has this layer, head and query
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
        if step is _rope_step and not any(steps.rotated_q is not None for _, steps, _ in shown):
            continue  # positions are added to the embeddings: nothing turns q and k
        with st.expander(label, expanded=open_at_first, key=key, on_change="rerun") as box:
            if not box.open:  # a closed step is neither computed nor sent
                continue
            for (name, steps, tokens), where in zip(shown, _places(len(shown)), strict=True):
                with where:
                    step(steps, tokens, name)
            if step is _table_step and len(shown) == 2:
                _weights_compared(shown)


STEP_SPACING = "medium"


def _places(count: int) -> list:
    """Where each setup's step goes: the main area, or two columns side by side."""
    return [st.container()] if count == 1 else list(st.columns(2, gap=STEP_SPACING))


def _introduction(steps: AttentionSteps, tokens: list[str]) -> None:
    table = steps.table
    top = int(table["weight"].idxmax())
    query = steps.query
    st.header(
        f"Layer {steps.layer}, head {steps.head}: how query {query} {quoted(tokens[query])} attends"
    )
    st.markdown(
        f"It gives its largest weight, **{table['weight'][top]:.3f}**, to key {top} "
        f"{quoted(tokens[top])}. Below, every step from the block's input to the stream after "
        f"attention, with this model's numbers (d_model = {steps.d_model}, "
        f"{steps.num_heads} heads of d_k = {steps.head_dim})."
    )


def _weights_compared(shown: list) -> None:
    """The two setups' weights of this query, key by key, and B − A (when the keys agree)."""
    (_, a, tokens_a), (_, b, tokens_b) = shown
    if tokens_a != tokens_b:
        return
    weights = pd.DataFrame(
        {
            "position": a.table["position"],
            "key": a.table["key"],
            "weight A": a.table["weight"],
            "weight B": b.table["weight"],
        }
    )
    weights["B − A"] = weights["weight B"] - weights["weight A"]
    st.caption("This query's weights in A and in B, key by key:")
    st.dataframe(
        weights.style.format(precision=4, subset=["weight A", "weight B", "B − A"]),
        hide_index=True,
        width="stretch",
        height=min(35 * len(weights) + 38, 320),
    )


def _input_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    d, i = steps.d_model, steps.query
    st.subheader(f"1 · The query token's row entering the block, x_i {shape_text((d,))}")
    rows = [("x_i (block input)", steps.block_input)]
    if steps.norm_first and math.isnan(steps.ln1_std):
        st.caption(
            f"Pre-norm, but block {steps.layer} has no norm before its attention (the "
            f"embeddings' norm already normalised its input): attention reads row {i} "
            f"({quoted(tokens[i])}) as it is, ‖x_i‖ = {norm(steps.block_input):.3f}."
        )
    elif steps.norm_first:
        rows.append(("LN1(x_i) (attention reads this)", steps.normalised))
        st.caption(
            f"Pre-norm: attention reads a normalised copy of row {i} ({quoted(tokens[i])}). "
            f"LN1 {norm_does(steps.norm_type, steps.ln1_mean, steps.ln1_std, steps.norm_bias)}: "
            f"‖x_i‖ = {norm(steps.block_input):.3f} becomes ‖LN1(x_i)‖ = "
            f"{norm(steps.normalised):.3f}."
        )
    else:
        st.caption(
            f"Post-norm: attention reads row {i} ({quoted(tokens[i])}) of the block input as it "
            f"is (‖x_i‖ = {norm(steps.block_input):.3f}); the norm comes after the residual add "
            "(step 8)."
        )
    show_for(vector_strips(rows, title=f"{d} numbers per token", robust=True), "step_input", name)


def _query_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    dk, d = steps.head_dim, steps.d_model
    reads = r"\mathrm{LN}_1(x_i)" if steps.norm_first and not math.isnan(steps.ln1_std) else "x_i"
    st.subheader(
        f"2 · The query vector q_i {shape_text((dk,))}: head {steps.head} projects with W_Q"
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
                title=f"W_Q slice of head {steps.head}: {dk} rows x {d} columns",
                row_title="query dimension",
            ),
            "step_wq",
            name,
        )
    with right:
        show_for(
            vector_strips([("q_i", steps.q), ("b_Q", steps.b_q)], title=f"q_i: {dk} numbers"),
            "step_q",
            name,
        )
    st.caption(
        f"Each of q_i's {dk} numbers is one row of W_Q times the {d} input numbers, plus a bias. "
        f"‖q_i‖ = {norm(steps.q):.3f}. The keys and values below are made the same way from "
        "every token with W_K and W_V."
    )


def _keys_values_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    T, dk = steps.keys.shape
    st.subheader(f"3 · Every token's key k_j and value v_j, {shape_text((T, dk))} each")
    padding = T - steps.n_valid
    note = (
        f" The {padding} padding rows (grey) are computed too, but step 4 masks them out."
        if padding
        else ""
    )
    st.caption(
        f"One row per token of the sentence: the key says what a token offers to be found by, "
        f"the value what it passes on when attended to.{note}"
    )
    left, right = pair(name)
    with left:
        show_for(
            token_matrix(
                steps.keys,
                tokens,
                steps.n_valid,
                title=f"Keys K {shape_text((T, dk))}",
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
                title=f"Values V {shape_text((T, dk))}",
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
            "This setup adds its positions to the embeddings before block 0: nothing turns q "
            "and k here."
        )
        return
    st.subheader(f"3b · RoPE: q_i and every k_j turned by their position {shape_text((dk,))}")
    st.latex(
        r"\mathrm{RoPE}_p\begin{pmatrix} x_j \\ x_{j + d_k/2} \end{pmatrix} = "
        r"\begin{pmatrix} \cos p\theta_j & -\sin p\theta_j \\ \sin p\theta_j & \cos p\theta_j"
        rf"\end{{pmatrix}}\begin{{pmatrix}} x_j \\ x_{{j + d_k/2}} \end{{pmatrix}},\quad"
        rf"\theta_j = {steps.rope_base:g}^{{-2j/{dk}}}"
    )
    gap = float(np.max(np.abs(np.angle(np.exp(1j * (steps.q_turned - steps.rope_angles))))))
    before, after = norm(steps.q), norm(steps.rotated_q)
    if i == 0:
        turns = "At position 0 nothing turns: RoPE(q_0) = q_0"
    else:
        first, last = steps.rope_angles[0], steps.rope_angles[-1]
        turns = (
            f"At position {i}, pair 0 turns by {first:.3f} rad ({math.degrees(first):.1f}°), "
            f"pair {half - 1} by {last:.3g} rad ({math.degrees(last):.3g}°)"
        )
    st.caption(
        f"Nothing was added to the embeddings for positions: this layer turns each of the "
        f"{half} pairs of dimensions (j, j + {half}) of q_i and k_j by its position times "
        f"θ_j (base {steps.rope_base:g}). {turns}; read from this run's vectors, every pair "
        f"turned by the formula's angle to within {gap:.1e} rad (a full turn aside). A turn keeps "
        f"lengths: ‖q_i‖ = {before:.3f} before, {after:.3f} after. Each key k_j turns by its "
        f"own position j, so the score q_i · k_j sees how far apart i and j are."
    )
    show_for(
        vector_strips(
            [("q_i (W_Q x + b_Q)", steps.q), (f"RoPE_{i}(q_i)", steps.rotated_q)],
            title=f"q_i before and after the turn: {dk} numbers",
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
                title=f"Keys before {shape_text((T, dk))}",
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
                title=f"Keys after, each turned by its position {shape_text((T, dk))}",
                colour_title="k",
            ),
            "step_rope_rotated_keys",
            name,
        )


def _styled_table(table: pd.DataFrame) -> pd.io.formats.style.Styler:
    """The step table for the page: padding rows grey and labelled, the top weight highlighted,
    numbers rounded for display only."""
    shown = table.assign(
        padding=np.where(table["padding"], "PADDING", ""),
        outside_window=np.where(table["outside_window"], "OUTSIDE", ""),
    )
    top = int(table["weight"].idxmax())

    def row_style(row: pd.Series) -> list[str]:
        if table["padding"][row.name]:
            style = PAD_ROW_STYLE
        elif table["outside_window"][row.name]:
            style = WINDOW_ROW_STYLE
        elif row.name == top:
            style = TOP_ROW_STYLE
        else:
            style = ""
        return [style] * len(row)

    def number(value: float) -> str:
        return "−∞" if value == -math.inf else f"{value:.4f}"

    numbers = ["q_dot_k", "scaled", "masked", "weight", "contribution_norm"]
    return shown.style.apply(row_style, axis=1).format(number, subset=numbers)


def _table_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    table, T, dk = steps.table, steps.keys.shape[0], steps.head_dim
    real = table[~table["padding"]]
    seen = real[~real["outside_window"]]
    st.subheader(f"4 · Scores and weights: one row per key ({T} rows)")
    # two equations a line on the whole page's width, one a line in half of it
    between = r" \\ " if name else r" & \qquad "
    st.latex(
        r"\begin{aligned}"
        + (
            r"\text{q\_dot\_k}_j &= \mathrm{RoPE}_i(q_i) \cdot \mathrm{RoPE}_j(k_j)"
            if steps.rotated_q is not None
            else r"\text{q\_dot\_k}_j &= q_i \cdot k_j"
        )
        + between
        + rf"\text{{scaled}}_j &= \text{{q\_dot\_k}}_j \,/\, \sqrt{{{dk}}} \\"
        r"\text{masked}_j &= \text{scaled}_j \ \text{or}\ -\infty \text{ for padding}"
        + (r"\text{, outside the window}" if steps.window else "")
        + between
        + r"\text{weight}_j &= \frac{e^{\text{masked}_j}}{\sum_{j'} e^{\text{masked}_{j'}}}"
        r"\end{aligned}"
    )
    st.dataframe(
        _styled_table(table),
        column_config={
            "position": "j",
            "key": "key token",
            "padding": "padding?",
            "outside_window": "outside the window?",
            "contribution_norm": "‖weight_j v_j‖",
        },
        hide_index=True,
        width="stretch",
        height=min(35 * T + 38, 640),
    )
    top = int(table["weight"].idxmax())
    padding = T - steps.n_valid
    pad_note = (
        f" The {padding} padding keys get −∞ and so weight exactly 0."
        if padding
        else " This sentence has no padding."
    )
    st.info(
        f"The weight column equals the head's attention row for this query: row {steps.query} "
        f"of layer {steps.layer}, head {steps.head} in the Attention view. Its {len(seen)} "
        f"keys{' inside the window' if len(seen) < len(real) else ''} sum to "
        f"{seen['weight'].sum():.6f}; the largest (highlighted) is "
        f"{table['weight'][top]:.4f} on key {top} {quoted(tokens[top])}.{pad_note}"
    )
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
            f"Layer {layer} is global: every query sees every key (this model's window of "
            f"{steps.model_window} acts in layers {local})."
        )
        return
    removed = int(steps.outside_window[:n, :n].sum())
    in_row = int(steps.table["outside_window"].sum())
    st.caption(
        f"Layer {layer} is local"
        + (
            ", as every layer of this model is"
            if every
            else f" (this model's local layers: {local})"
        )
        + ": a query sees only the "
        f"keys within {steps.window // 2} positions of it (window {steps.window}). In this "
        f"sentence the window removes {removed} of the {n} × {n} = {n * n} query-key pairs of "
        f"layer {layer} (every head alike); in query {i}'s row, {in_row} keys get −∞ and weight "
        f"exactly 0 (rows marked OUTSIDE)."
    )
    show_for(
        window_matrix(
            steps.pattern,
            tokens,
            n,
            steps.outside_window,
            query=i,
            title=f"Layer {layer}, head {steps.head}: every query's weights; crossed cells are "
            f"outside the window ({removed} of {n * n})",
        ),
        "step_window",
        name,
    )


def _scaling_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    dk, n = steps.head_dim, steps.n_valid
    real = steps.table[~steps.table["padding"]]
    seen = int((~real["outside_window"]).sum())  # the keys the softmax spreads over
    root = math.sqrt(dk)
    st.subheader(f"5 · Why divide by √d_k = √{dk} = {root:.2f}?")
    unscaled_top = int(np.argmax(steps.unscaled_weight))
    spread = real["q_dot_k"].max() - real["q_dot_k"].min()
    unscaled = steps.unscaled_weight[unscaled_top]
    peakier = "peakier" if steps.unscaled_entropy < steps.entropy else "no peakier"
    st.caption(
        f"A dot product of two {dk}-number vectors grows with d_k: here the raw scores q·k span "
        f"{spread:.2f}, the scaled ones {spread / root:.2f}. Without the division the softmax "
        f"is {peakier}: it would give {unscaled:.4f} to {quoted(tokens[unscaled_top])} and "
        f"{1 - unscaled:.4f} to the rest (entropy "
        f"{steps.unscaled_entropy:.4f} nats instead of {steps.entropy:.4f}; an even spread over "
        f"{seen} keys is ln {seen} = {math.log(seen):.3f}). Peaky softmaxes learn slowly: their "
        "gradients are nearly zero."
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
    st.subheader(f"6 · Mix the values: z_i = Σ_j weight_j v_j {shape_text((dk,))}")
    st.caption(
        f"Each value row is scaled by its weight; z_i is the sum of the rows (‖z_i‖ = "
        f"{norm(steps.z):.3f}). The largest row is key {top} {quoted(tokens[top])}: "
        f"‖weight v‖ = {steps.table['contribution_norm'][top]:.3f}."
    )
    show_for(
        token_matrix(
            steps.weighted_values,
            tokens,
            steps.n_valid,
            title=f"weight_j v_j {shape_text((T, dk))}: the rows that are summed",
            colour_title="w·v",
        ),
        "step_weighted",
        name,
    )
    show_for(
        vector_strips([("z_i", steps.z)], title=f"z_i = the column sums: {dk} numbers"),
        "step_z",
        name,
    )


def _output_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    H, dk, d, h = steps.num_heads, steps.head_dim, steps.d_model, steps.head
    st.subheader(f"7 · All {H} heads side by side, projected by W_O {shape_text((d,))}")
    st.latex(
        rf"\mathrm{{attn}}_i = \mathrm{{concat}}(z_i^{{(0)}},\dots,z_i^{{({H - 1})}})\,W_O^\top"
        rf" + b_O \qquad [{d}] = [{H} \cdot {dk}]\,[{d} \times {d}] + [{d}]"
    )
    concat = steps.all_z.reshape(-1)
    show_for(
        vector_strips(
            [("concat of every head's z_i", concat)],
            title=f"{H} heads x {dk} numbers = {d}; head {h} outlined",
            group_size=dk,
            highlight_group=h,
        ),
        "step_concat",
        name,
    )
    show_for(
        vector_strips(
            [
                (f"head {h}'s share: W_O[:, head {h}] z_i", steps.head_share),
                ("attn_i", steps.attention_out),
            ],
            title=f"The attention output: {d} numbers",
            robust=True,
        ),
        "step_attn_out",
        name,
    )
    st.caption(
        f"Head {h}'s z_i meets only its {dk} columns of W_O: its share of the output has length "
        f"{norm(steps.head_share):.3f}, the whole attention output {norm(steps.attention_out):.3f}"
        f" (every head's share plus the bias b_O, ‖b_O‖ = {norm(steps.b_o):.3f}). Switching the "
        "head off (Attention view) zeroes exactly this share."
    )


def _residual_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    d = steps.d_model
    if steps.norm_first:
        st.subheader(f"8 · Residual add: the stream after attention {shape_text((d,))}")
        st.latex(r"h_i = x_i + \mathrm{attn}_i")
        rows = [
            ("x_i", steps.block_input),
            ("attn_i", steps.attention_out),
            ("h_i = x_i + attn_i", steps.block_mid),
        ]
        note = (
            f"Pre-norm adds the attention output to the un-normalised stream: ‖x_i‖ = "
            f"{norm(steps.block_input):.3f}, ‖attn_i‖ = {norm(steps.attention_out):.3f}, "
            f"‖h_i‖ = {norm(steps.block_mid):.3f}. The feed-forward half of the block follows."
        )
    else:
        st.subheader(
            f"8 · Residual add, then the norm: the stream after attention {shape_text((d,))}"
        )
        st.latex(r"h_i = \mathrm{LN}_1(x_i + \mathrm{attn}_i)")
        rows = [
            ("x_i", steps.block_input),
            ("attn_i", steps.attention_out),
            ("x_i + attn_i", steps.residual_sum),
            ("h_i = LN1(sum)", steps.block_mid),
        ]
        note = (
            f"Post-norm normalises the sum: LN1 "
            f"{norm_does(steps.norm_type, steps.ln1_mean, steps.ln1_std, steps.norm_bias)}: "
            f"‖x_i + attn_i‖ = {norm(steps.residual_sum):.3f} becomes ‖h_i‖ = "
            f"{norm(steps.block_mid):.3f}. The feed-forward half of the block follows."
        )
    show_for(vector_strips(rows, title=f"{d} numbers per row", robust=True), "step_residual", name)
    st.caption(note)


# Each step in data-flow order, its expander's label, whether it opens at first and its key: the
# keys, RoPE's turn and the scores-and-weights table are the view's main figures; every other
# step is computed and sent only once its expander is opened.
STEP_LABELS = {  # step: its label, whether it opens at first, its expander's key
    _input_step: ("1 · The query token's row entering the block", False, "step_open_0"),
    _query_step: ("2 · Its query q_i", False, "step_open_1"),
    _keys_values_step: ("3 · Every token's key and value", True, "step_open_2"),
    # RoPE models only: where the positions enter
    _rope_step: ("3b · RoPE turns q and k by position", True, "step_open_rope"),
    _table_step: ("4 · Scores and weights, one row per key", True, "step_open_3"),
    _scaling_step: ("5 · Why divide by √d_k?", False, "step_open_4"),
    _mix_step: ("6 · Mix the values", False, "step_open_5"),
    _output_step: ("7 · All heads, projected by W_O", False, "step_open_6"),
    _residual_step: ("8 · The residual add", False, "step_open_7"),
}
STEPS = tuple(STEP_LABELS)
