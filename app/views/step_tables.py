"""The Attention steps view's table step and its tables: step 4's, one row per key (padding and
the keys outside the window marked, the top weight highlighted), the layer's local window, and in
compare mode both setups' weights of the query, key by key, with B − A; and how the steps write a
vector's length and a number."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from app.charts.steps import (
    window_matrix,
)
from app.i18n import _, number
from app.page.layout import header, headers, show_for, written
from app.user_text import quoted
from encoder.inspect.attention_steps import AttentionSteps

PAD_ROW_STYLE = "background-color: #d0d0d0; color: #555555"
WINDOW_ROW_STYLE = "background-color: #e6e6e6; color: #555555; font-style: italic"
TOP_ROW_STYLE = "background-color: #fff3b0"


def styled_table(table: pd.DataFrame) -> pd.io.formats.style.Styler:
    """The step table for the page: padding rows grey and labelled, the top weight highlighted,
    numbers rounded for display only."""
    shown = table.assign(
        padding=np.where(table["padding"], _("PADDING"), ""),
        outside_window=np.where(table["outside_window"], _("OUTSIDE"), ""),
    )
    top = table.index == table["weight"].idxmax()
    row_styles = np.select(  # one style a row, padding first
        [table["padding"].to_numpy(), table["outside_window"].to_numpy(), top],
        [PAD_ROW_STYLE, WINDOW_ROW_STYLE, TOP_ROW_STYLE],
        "",
    )

    def row_style(frame: pd.DataFrame) -> pd.DataFrame:  # every cell at once (a row's style)
        return pd.DataFrame(
            np.repeat(row_styles[:, None], frame.shape[1], axis=1),
            index=frame.index,
            columns=frame.columns,
        )

    def write(value: float) -> str:
        return "−∞" if value == -math.inf else number(value, 4)

    numbers = ["q_dot_k", "scaled", "masked", "weight", "contribution_norm"]
    return shown.style.apply(row_style, axis=None).format(write, subset=numbers)


def weights_compared(shown: list) -> None:
    """The two setups' weights of this query, key by key, and B − A (when the keys agree)."""
    (__, a, tokens_a), (___, b, tokens_b) = shown
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
    st.caption(_("This query's weights in A and in B, key by key:"))
    st.dataframe(
        written(weights, 4, ["weight A", "weight B", "B − A"]),
        hide_index=True,
        column_config=headers(weights),
        width="stretch",
        height=min(35 * len(weights) + 38, 320),
    )


def norm(values: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(values, dtype=np.float64)))


def said(value: float, digits: int = 3) -> str:
    """A number in a sentence, as the page's language writes it (f"{value:.3f}" in English)."""
    return number(value, digits, grouped=False)


def _tex_text(words: str) -> str:
    """Words inside an equation (KaTeX's \\text), LaTeX's special characters escaped."""
    escaped = "".join(f"\\{c}" if c in "&%$#_{}" else c for c in words)
    return rf"\text{{{escaped}}}"


def table_step(steps: AttentionSteps, tokens: list[str], name: str = "") -> None:
    table, T = steps.table, steps.keys.shape[0]
    st.subheader(_("4 · Scores and weights: one row per key ({rows} rows)", rows=T))
    _equations(steps)
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
    st.info(_weights_read(steps, tokens))
    if steps.model_window:
        _window(steps, tokens, name)


def _equations(steps: AttentionSteps) -> None:
    """The table's columns as equations, named as the table names them."""
    dk = steps.head_dim
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


def _weights_read(steps: AttentionSteps, tokens: list[str]) -> str:
    """What the weight column says: the Attention view's row, its sum, its largest weight, and
    the padding's weights."""
    table, T = steps.table, steps.keys.shape[0]
    real = table[~table["padding"]]
    seen = real[~real["outside_window"]]
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
    return row + " " + pad_note


def _window(steps: AttentionSteps, tokens: list[str], name: str) -> None:
    """Which keys this layer's local window masks (or that the layer is global), counted from
    the run's scores, and the head's weights with the masked cells drawn as masked."""
    n, i, layer = steps.n_valid, steps.query, steps.layer
    local = ", ".join(str(index) for index in steps.local_layers)
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
    st.caption(_window_read(steps, local, removed))
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


def _window_read(steps: AttentionSteps, local: str, removed: int) -> str:
    """How many query-key pairs the local window removes, in the sentence and in the query's row."""
    n = steps.n_valid
    values = dict(
        layer=steps.layer,
        local=local,
        reach=steps.window // 2,
        window=steps.window,
        removed=removed,
        n=n,
        pairs=n * n,
        i=steps.query,
        in_row=int(steps.table["outside_window"].sum()),
    )
    every = len(steps.local_layers) == steps.num_layers  # no global layer
    return (
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
