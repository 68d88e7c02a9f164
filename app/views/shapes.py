"""The Shapes view: what the run costs, one block drawn with this run's shapes, its equations,
and the shape trace of every operation. Every number is from encoder.core.block's table."""

from __future__ import annotations

import streamlit as st

from app.components.module_figures import module_figure
from app.i18n import _, localised, number
from app.keys import Selection
from app.page.changes import what_changed
from app.page.figures import block_figure
from app.page.layout import (
    key_for,
    operations_named,
    setup_title,
    shown,
    side_by_side,
    stacked,
    wide_table,
    written,
)
from app.runs import Run, Runs

EQUATIONS = {
    True: r"""\begin{aligned}
h &= x + \mathrm{MHA}\big(\mathrm{Norm}_1(x)\big)\\
y &= h + \mathrm{FFN}\big(\mathrm{Norm}_2(h)\big)
\end{aligned}""",
    False: r"""\begin{aligned}
h &= \mathrm{Norm}_1\big(x + \mathrm{MHA}(x)\big)\\
y &= \mathrm{Norm}_2\big(h + \mathrm{FFN}(h)\big)
\end{aligned}""",
}
NORM_EQUATIONS = {
    "layernorm": r"\mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}}"
    r" + \beta",
    "rmsnorm": r"\mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\tfrac{1}{d}\sum_i x_i^2 + "
    r"\epsilon}}",
}


def metrics() -> tuple:
    """(label, cost key, how it is written), in the run's language."""
    return (
        (_("Parameters"), "params", lambda v: number(v)),
        (_("FLOPs (forward)"), "flops", lambda v: f"{number(v / 1e6, 1)} M"),
        (_("Activation memory"), "activation_bytes", lambda v: f"{number(v / 1e6, 2)} MB"),
    )


def _costs(run: Run, against: Run | None, narrow: bool) -> None:
    """What the run costs (and, for B, how much more or less than A); in two rows of two when
    it has half the page."""
    cost = run.cost
    columns = [*st.columns(2), *st.columns(2)] if narrow else st.columns(4)
    for column, (label, key, write) in zip(columns, metrics(), strict=False):
        change = None if against is None else cost[key] - against.cost[key]
        column.metric(
            label,
            write(cost[key]),
            delta=None if change is None else write(change),
            delta_color="off",
            help=_("B − A below the value") if against is not None else None,
        )
    columns[3].metric(_("Tokens (with padding)"), f"{cost['tokens']} ({cost['padded_tokens']})")
    st.caption(
        _(
            "Attention scores and weighted sums grow as n² d: {attention} "
            "MFLOPs here; the feed-forward grows as n d d_ff: {ffn} MFLOPs.",
            attention=number(cost["attention_flops"] / 1e6, 2),
            ffn=number(cost["ffn_flops"] / 1e6, 2),
        )
    )


ACTIVATION_TEX = {
    "relu": r"\mathrm{ReLU}",
    "gelu": r"\mathrm{GELU}",
    "gelu_tanh": r"\mathrm{GELU}_{\tanh}",
    "geglu": r"\mathrm{GELU}",
    "swiglu": r"\mathrm{SiLU}",
}
GELU_TANH = (
    r"\mathrm{GELU}_{\tanh}(x) = \tfrac{1}{2}\,x\,\Big(1 + \tanh\big(\sqrt{2/\pi}\,"
    r"(x + 0.044715\,x^3)\big)\Big)"
)


def _local_layers(cfg) -> list[int]:
    return [layer for layer in range(cfg.num_layers) if cfg.is_local(layer)]


def _attention_equation(cfg) -> str:
    """MHA's equation: RoPE's turn of Q and K, the window's mask, where the config has them."""
    rope = cfg.positional == "rope"
    scores = r"\mathrm{RoPE}(Q_i)\,\mathrm{RoPE}(K_i)^\top" if rope else r"Q_i K_i^\top"
    mask = " + M" if _local_layers(cfg) else ""
    return (
        r"\mathrm{MHA}(x) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_{"
        + str(cfg.num_heads)
        + r"})W^O,\quad \mathrm{head}_i = \mathrm{softmax}\Big(\frac{"
        + scores
        + r"}{\sqrt{"
        + str(cfg.head_dim)
        + r"}}"
        + mask
        + r"\Big)V_i"
    )


def _feed_forward_equation(cfg) -> str:
    """FFN's equation: gated or not, with or without biases."""
    act = ACTIVATION_TEX[cfg.activation]
    b = (lambda name: f" + b_{{{name}}}") if cfg.linear_bias else (lambda name: "")
    if cfg.gated:
        inner = rf"{act}(x W_{{\mathrm{{in}}}}{b('in')}) \odot (x W_{{\mathrm{{gate}}}}{b('gate')})"
        return rf"\mathrm{{FFN}}(x) = \big({inner}\big)\,W_2{b('2')}"
    return rf"\mathrm{{FFN}}(x) = {act}(x W_1{b('1')})\,W_2{b('2')}"


def _equations(run: Run) -> None:
    cfg = run.cfg
    st.latex(EQUATIONS[cfg.norm_first])
    st.latex(_attention_equation(cfg))
    notes = []
    if cfg.positional == "rope":
        notes.append(
            _(
                "RoPE turns each pair of dimensions (j, j + d_k/2) of q and k at position p by "
                "p · {base}^(−2j/{head_dim}); nothing is added to the embeddings.",
                base=localised(f"{cfg.rope_base:g}"),
                head_dim=cfg.head_dim,
            )
        )
    if local := _local_layers(cfg):
        notes.append(
            _(
                "M is −∞ where a key is more than {reach} positions from its "
                "query (window {window}), 0 elsewhere, in layers "
                "{layers}; the other layers are global (M = 0).",
                reach=cfg.attention_window // 2,
                window=cfg.attention_window,
                layers=", ".join(map(str, local)),
            )
        )
    for note in notes:
        st.caption(note)
    st.latex(_feed_forward_equation(cfg))
    if cfg.activation == "gelu_tanh":
        st.latex(GELU_TANH)
    norm = NORM_EQUATIONS[cfg.norm_type]
    st.latex(norm if cfg.norm_bias else norm.removesuffix(r" + \beta"))
    if cfg.embedding_size:
        st.caption(
            _(
                "The embeddings are {size} numbers wide; a linear layer projects them "
                "to d_model = {d_model} before block 0.",
                size=cfg.embedding_size,
                d_model=cfg.d_model,
            )
        )
    if cfg.shared_layers:
        st.caption(
            _(
                "Every one of the {layers} blocks applies the same weights: the parameters "
                "above count them once.",
                layers=cfg.num_layers,
            )
        )


def draw(runs: Runs, chosen: Selection) -> None:
    what_changed(runs)
    for name, run in side_by_side(runs):
        _costs(run, runs.a if name == "B" else None, narrow=bool(name))
    for name, run in runs.named():  # a diagram needs the whole width: one after the other
        setup = f"{setup_title(name, run)} · " if runs.b is not None else ""
        header = (
            _("One block (pre-norm), with this run's shapes")
            if run.cfg.norm_first
            else _("One block (post-norm), with this run's shapes")
        )
        st.header(f"{setup}{header}")
        # drawn by block_diagram.js (SVG), not plotly: the view loads no plotly at all
        module_figure(
            block_figure(run), key=key_for("block_diagram", name if runs.b is not None else "")
        )
        _equations(run)
    st.header(_("Shape trace: every operation, in the order the data flows"))
    operations = shown(stacked(runs, lambda run: operations_named(run.ledger, run.cfg)))
    wide_table(written(operations, 0), height=420)
    with st.expander(_("Parameters by component"), key="shape_params", on_change="rerun") as box:
        if box.open:  # computed and sent only once opened
            wide_table(written(shown(stacked(runs, lambda run: run.parameter_counts)), 0))
