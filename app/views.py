"""The page's views, one function each, drawing a Run with the figure builders of app.charts.

User text reaches the page only through dataframes, plotly labels (escaped in app.charts) and
`st.text`/`st.code`, never through markdown or HTML.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from app import export
from app.ablation_view import PERSISTENT_KEYS as ABLATION_KEYS
from app.ablation_view import ablation_section
from app.activations_view import PERSISTENT_KEYS as ACTIVATION_KEYS
from app.activations_view import activations_view
from app.activations_view import downloads as activation_downloads
from app.charts.attention import attention_head, attention_overview, batch_mask_grid
from app.charts.common import figure_to_html, plural
from app.charts.diagram import block_diagram
from app.charts.norms import layernorm_chart, residual_norm_chart
from app.runs import Run
from app.steps_view import PERSISTENT_KEYS as STEPS_KEYS
from app.steps_view import chosen_step, steps_hooks, steps_view
from app.widgets import pick_index, pick_sentence, show
from encoder import EncoderConfig, activations, analysis
from encoder.core.config import placement_of

OVERVIEW_MAX_TOKENS = 48  # per head tile; longer inputs are block-averaged
# Widgets whose values should survive a visit to another view.
PERSISTENT_KEYS = (
    ("sentence", "layer", "head", "ln_layer", "stretch")
    + STEPS_KEYS
    + ABLATION_KEYS
    + ACTIVATION_KEYS
)


def overview_figure(run: Run, sentence: int):
    return attention_overview(
        run.attention[:, sentence],  # [layer, head, query, key]
        run.n_valid(sentence),
        max_tokens=OVERVIEW_MAX_TOKENS,
        stretch=bool(st.session_state.get("stretch")),
    )


def head_figure(run: Run, sentence: int, layer: int, head: int):
    title = f"Layer {layer}, head {head}: each row is a query token's attention over the keys"
    return attention_head(
        run.attention[layer, sentence, head],  # [query, key]
        run.padded_tokens[sentence],
        run.n_valid(sentence),
        title=title,
        stretch=bool(st.session_state.get("stretch")),
    )


def layernorm_figure(run: Run, sentence: int, layer: int):
    stats = run.layernorm_stats[run.layernorm_stats["sentence"] == sentence]
    return layernorm_chart(stats, run.tokens[sentence], layer)


def residual_figure(run: Run, sentence: int):
    resid = run.residual_norms[run.residual_norms["sentence"] == sentence]
    return residual_norm_chart(resid, run.tokens[sentence])


def block_figure(run: Run):
    cfg = run.cfg
    return block_diagram(
        cfg.norm_first,
        run.block_shapes,
        norm_label="LayerNorm" if cfg.norm_type == "layernorm" else "RMSNorm",
        activation=cfg.activation.upper(),
    )


def tokenizer_caption(run: Run) -> str:
    """What split the text into tokens: MiniLM's WordPiece, a task's symbols, or an upload's."""
    model = run.task_model
    if model is not None:
        return (
            f"This {model.task} model's own tokenizer: one token per symbol, split on spaces, "
            f"symbol i as id i, exactly as in training. No [CLS] or [SEP]: the model reads "
            f"{model.seq_len} symbols and answers one class per position (the last two columns)."
        )
    if run.key.source in ("random", "pretrained"):
        return (
            "The MiniLM WordPiece tokenizer splits each line into tokens; [CLS] and [SEP] mark "
            "the start and end. '##' means the piece continues the previous word."
        )
    return "The uploaded checkpoint's own tokenizer (its tokenizer.json) splits each line."


def tokens_view(run: Run) -> None:
    st.subheader("Tokens")
    st.caption(tokenizer_caption(run))
    columns = st.columns(min(len(run.sentences), 3))
    for s, tokens in enumerate(run.tokens):
        with columns[s % len(columns)]:
            st.text(f"Sentence {s + 1}: {len(tokens)} tokens")
            table = pd.DataFrame(
                {"token": tokens, "id": run.input_ids[s, : len(tokens)].tolist()}
            ).rename_axis("position")
            if run.task_answers is not None:
                asked, answered = run.task_answers
                table["task asks"] = asked[s][: len(tokens)]
                table["model answers"] = answered[s][: len(tokens)]
            st.dataframe(table, width="stretch", height=min(35 * len(tokens) + 38, 420))
    if len(run.sentences) > 1:
        st.subheader("The padded batch and its attention mask")
        st.caption(
            f"Shorter sentences are padded with [PAD] to the longest ({run.input_ids.shape[1]} "
            "tokens). The attention mask is 1 for real tokens and 0 for padding, so no token "
            "attends to padding."
        )
        show(batch_mask_grid(run.padded_tokens, run.attention_mask), "mask_grid")


def _head_detail(run: Run, sentence: int) -> None:
    """Pick a layer and head: this part reruns alone (a fragment), not the whole page."""
    cfg = run.cfg
    left, right = st.columns(2)
    layer = pick_index("Layer", cfg.num_layers, "layer", left)
    head = pick_index("Head", cfg.num_heads, "head", right)
    show(head_figure(run, sentence, layer, head), "head_detail")
    first, last = ("[CLS]", "[SEP]") if run.task_model is None else ("first", "last")
    metrics = run.head_metrics(sentence).rename(
        columns={"to_first": f"to {first}", "to_last": f"to {last}"}
    )
    st.caption(
        "Every head: entropy (nats; low = focused), mean max weight, mean distance to the "
        "attended token, and the share of attention going to itself, the previous and next "
        f"token, the {first} and the {last} token. The first row is the selected head."
    )
    selected = (metrics["layer"] == layer) & (metrics["head"] == head)
    st.dataframe(
        pd.concat([metrics[selected], metrics[~selected]]),
        column_config={
            name: st.column_config.NumberColumn(format="%.3f")
            for name in metrics.columns
            if name not in ("layer", "head")
        },
        width="stretch",
        hide_index=True,
        height=300,
    )


def attention_view(run: Run) -> None:
    sentence = pick_sentence(run)
    st.toggle(
        "Stretch the colours to the largest weight",
        key="stretch",
        help="Random weights spread attention almost evenly; stretching shows its structure.",
    )
    n = run.n_valid(sentence)
    cfg = run.cfg
    layers, heads = plural(cfg.num_layers, "layer"), plural(cfg.num_heads, "head")
    st.subheader(f"Every head at once: {layers} x {heads}")
    tokens = run.attention.shape[-1]  # with padding
    size = f"{n} x {n}" if tokens <= OVERVIEW_MAX_TOKENS else f"{n} x {n} (drawn in blocks)"
    st.caption(
        f"Each tile is one head's {size} attention matrix (query rows, key columns; brighter = "
        "more weight). Padding is greyed out."
    )
    show(overview_figure(run, sentence), "overview")
    st.subheader("One head in detail")
    st.fragment(_head_detail)(run, sentence)
    ablation_section(run, sentence)


def _layernorm_sentence(run: Run, sentence: int, layer: int) -> str:
    """What the charts show, for the current pre/post choice, with this run's numbers."""
    cfg = run.cfg
    stats = run.layernorm_stats
    stats = stats[(stats["sentence"] == sentence) & (stats["layer"] == layer)]
    ln1 = stats[stats["norm"] == "ln1"].mean(numeric_only=True)
    resid = run.residual_norms[run.residual_norms["sentence"] == sentence]
    by_depth = resid.groupby("depth")["l2_norm"].mean()
    kind = "LayerNorm" if cfg.norm_type == "layernorm" else "RMSNorm"
    first, last = by_depth.iloc[0], by_depth.iloc[-1]
    if cfg.norm_first:
        placement = (
            f"Pre-norm: in every block ln1 normalises a copy of the residual stream just before "
            f"attention and ln2 just before the feed-forward network; the stream itself is never "
            f"normalised, so it can grow with depth: its mean L2 norm per token goes from "
            f"{first:.2f} after the embeddings to {last:.2f} after block {cfg.num_layers - 1}. "
            f"A final {kind} normalises the output."
        )
    else:
        placement = (
            f"Post-norm: ln1 sits after attention's residual add and ln2 after the feed-forward's, "
            f"so the residual stream itself is renormalised twice per block: its mean L2 norm per "
            f"token stays near sqrt(d_model) = {math.sqrt(cfg.d_model):.2f} (here {first:.2f} "
            f"after the embeddings, {last:.2f} after block {cfg.num_layers - 1})."
        )
    numbers = (
        f" In block {layer}, ln1's input has mean {ln1['in_mean']:.3f} and std "
        f"{ln1['in_std']:.3f} (averaged over tokens); its output has mean {ln1['out_mean']:.3f} "
        f"and std {ln1['out_std']:.3f}"
    )
    if cfg.norm_type == "rmsnorm":
        numbers += " — RMSNorm divides by the root mean square without subtracting the mean."
    else:
        numbers += " — (x - mean) / std, then the learned gain and bias."
    return placement + numbers


def layernorm_view(run: Run) -> None:
    sentence = pick_sentence(run)
    layer = pick_index("Layer", run.cfg.num_layers, "ln_layer")
    st.subheader(f"LayerNorm statistics in block {layer}, per token")
    show(layernorm_figure(run, sentence, layer), "layernorm")
    st.subheader("Size of the residual stream across depth")
    show(residual_figure(run, sentence), "residual")
    st.info(_layernorm_sentence(run, sentence, layer))
    with st.expander("Gain and bias of every norm"):
        st.dataframe(run.norm_parameters.style.format(precision=4), hide_index=True)


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


def shapes_view(run: Run) -> None:
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


def export_view(run: Run) -> None:
    sentence = pick_sentence(run)
    layer = min(int(st.session_state.get("layer", 0)), run.cfg.num_layers - 1)
    head = min(int(st.session_state.get("head", 0)), run.cfg.num_heads - 1)
    step = chosen_step(run, sentence)  # (layer, head, query) of the Attention steps view
    data = [  # (button label, file name, mime type, bytes builder)
        (
            f"Attention of layer {layer}, head {head} (CSV)",
            f"attention_s{sentence}_l{layer}_h{head}.csv",
            "text/csv",
            lambda: export.head_csv(run, sentence, layer, head),
        ),
        (
            f"Attention steps of layer {step[0]}, head {step[1]}, query {step[2]}: the table (CSV)",
            f"attention_steps_s{sentence}_l{step[0]}_h{step[1]}_q{step[2]}.csv",
            "text/csv",
            lambda: export.steps_csv(run, sentence, *step),
        ),
        (
            "The whole run: attention and statistics (NPZ)",
            "encoder_run.npz",
            "application/octet-stream",
            lambda: export.run_npz(run),
        ),
        (
            "The whole run: attention and statistics (JSON)",
            "encoder_run.json",
            "application/json",
            lambda: export.run_json(run),
        ),
    ] + activation_downloads(run, sentence)
    figures = {  # file name -> figure builder
        "attention_overview": lambda: overview_figure(run, sentence),
        f"attention_l{layer}_h{head}": lambda: head_figure(run, sentence, layer, head),
        f"layernorm_l{layer}": lambda: layernorm_figure(run, sentence, layer),
        "residual_norms": lambda: residual_figure(run, sentence),
        "block_diagram": lambda: block_figure(run),
    }
    html_files = [
        (
            f"{name}.html",
            f"{name}.html",
            "text/html",
            lambda build=build: figure_to_html(build()).encode("utf-8"),
        )
        for name, build in figures.items()
    ]
    st.subheader("Data")
    _download_buttons(data)
    st.subheader("Figures (self-contained HTML, work offline)")
    st.caption("Every figure on the page also has plotly's own camera button for a PNG.")
    _download_buttons(html_files)


def _download_buttons(files: list[tuple]) -> None:
    """One button per file; each file is built only when clicked."""
    for index, (label, file_name, mime, build) in enumerate(files):
        st.download_button(
            label,
            build,
            file_name=file_name,
            mime=mime,
            on_click="ignore",
            key=f"download_{mime}_{index}",
        )


def no_hooks(cfg: EncoderConfig) -> list[str]:
    """Views that draw only the attention weights and the residual stream (always kept)."""
    return []


def every_hook(cfg: EncoderConfig) -> None:
    """Views that read every captured tensor (sizes, shapes, the whole run's downloads)."""
    return None


@dataclass(frozen=True)
class View:
    draw: Callable[[Run], None]
    hooks: Callable[[EncoderConfig], list[str] | None]  # what the run keeps for it


VIEWS = {
    "Tokens": View(tokens_view, no_hooks),
    "Attention": View(attention_view, no_hooks),
    "Attention steps": View(steps_view, steps_hooks),
    "LayerNorm": View(layernorm_view, analysis.norm_hook_names),
    "Activations": View(activations_view, activations.hook_names),
    "Shapes": View(shapes_view, every_hook),
    "Export": View(export_view, every_hook),
}
