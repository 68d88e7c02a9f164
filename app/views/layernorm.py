"""The LayerNorm view: every norm's statistics per token in one block, the size of the residual
stream across depth, and a sentence that says what the pre/post choice does, with this run's
numbers."""

from __future__ import annotations

import math

import streamlit as st

from app.charts.norms import layernorm_chart, residual_norm_chart
from app.runs import Run
from app.state import Selection
from app.views.widgets import pick_index, pick_sentence, show
from encoder import EncoderConfig
from encoder.core.config import NORM_TYPE_NAMES
from encoder.inspect.norms import norm_hook_names


def hooks(cfg: EncoderConfig, chosen: Selection) -> list[str]:
    """Every norm's input, mean, std and output."""
    return norm_hook_names(cfg)


def layernorm_figure(run: Run, sentence: int, layer: int):
    stats = run.layernorm_stats[run.layernorm_stats["sentence"] == sentence]
    return layernorm_chart(stats, run.tokens[sentence], layer)


def residual_figure(run: Run, sentence: int):
    resid = run.residual_norms[run.residual_norms["sentence"] == sentence]
    return residual_norm_chart(resid, run.tokens[sentence])


def layernorm_sentence(run: Run, sentence: int, layer: int) -> str:
    """What the charts show, for the current pre/post choice, with this run's numbers."""
    cfg = run.cfg
    stats = run.layernorm_stats
    stats = stats[(stats["sentence"] == sentence) & (stats["layer"] == layer)]
    ln1 = stats[stats["norm"] == "ln1"].mean(numeric_only=True)
    resid = run.residual_norms[run.residual_norms["sentence"] == sentence]
    by_depth = resid.groupby("depth")["l2_norm"].mean()
    kind = NORM_TYPE_NAMES[cfg.norm_type]
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


def draw(run: Run, chosen: Selection) -> None:
    sentence = pick_sentence(run.sentences, chosen.sentence)
    layer = pick_index("Layer", run.cfg.num_layers, "ln_layer")
    st.subheader(f"LayerNorm statistics in block {layer}, per token")
    show(layernorm_figure(run, sentence, layer), "layernorm")
    st.subheader("Size of the residual stream across depth")
    show(residual_figure(run, sentence), "residual")
    st.info(layernorm_sentence(run, sentence, layer))
    with st.expander("Gain and bias of every norm"):
        st.dataframe(run.norm_parameters.style.format(precision=4), hide_index=True)
