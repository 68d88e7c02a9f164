"""The Shapes view: what the run costs, one block drawn with this run's shapes, its equations,
and the shape trace of every operation. Every number is from encoder.core.block's table."""

from __future__ import annotations

import streamlit as st

from app.charts.diagram import block_diagram
from app.runs import Run
from app.state import Selection
from app.views.widgets import show
from encoder.core.config import placement_of


def block_figure(run: Run):
    return block_diagram(run.block_ops(), run.cfg.norm_first)


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


def draw(run: Run, chosen: Selection) -> None:
    cfg, cost = run.cfg, run.cost
    a, b, c, d = st.columns(4)
    a.metric("Parameters", f"{cost['params']:,}")
    b.metric("FLOPs (forward)", f"{cost['flops'] / 1e6:,.1f} M")
    c.metric("Activation memory", f"{cost['activation_bytes'] / 1e6:,.2f} MB")
    d.metric("Tokens (with padding)", f"{cost['tokens']} ({cost['padded_tokens']})")
    st.caption(
        f"Attention scores and weighted sums grow as n² d: {cost['attention_flops'] / 1e6:,.2f} "
        f"MFLOPs here; the feed-forward grows as n d d_ff: {cost['ffn_flops'] / 1e6:,.2f} MFLOPs."
    )
    placement = f"{placement_of(cfg.norm_first)}-norm"
    st.subheader(f"One block ({placement}), with this run's shapes")
    show(block_figure(run), "block_diagram")
    st.latex(EQUATIONS[cfg.norm_first])
    st.latex(
        r"\mathrm{MHA}(x) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_{"
        + str(cfg.num_heads)
        + r"})W^O,\quad \mathrm{head}_i = \mathrm{softmax}\Big(\frac{Q_i K_i^\top}{\sqrt{"
        + str(cfg.head_dim)
        + r"}}\Big)V_i"
    )
    act = r"\mathrm{GELU}" if cfg.activation == "gelu" else r"\mathrm{ReLU}"
    st.latex(r"\mathrm{FFN}(x) = W_2\," + act + r"(W_1 x + b_1) + b_2")
    st.latex(NORM_EQUATIONS[cfg.norm_type])
    st.subheader("Shape trace: every operation, in the order the data flows")
    st.dataframe(run.ledger, width="stretch", hide_index=True, height=420)
    with st.expander("Parameters by component"):
        st.dataframe(run.parameter_counts, hide_index=True)
