"""Head ablation, a section of the Attention view: switch heads off and show what changes.

The ablated run is a second cached run (the same model, sentences and kept hooks, with
`ablate`); with nothing switched off there is no second run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.charts.ablation import (
    attention_difference,
    depth_labels,
    difference_head,
    output_change_chart,
    residual_cosine_chart,
)
from app.markdown import literal, quoted
from app.runs import Run
from app.widgets import show
from encoder import ablation

PERSISTENT_KEYS = ("ablate",)
OVERVIEW_MAX_TOKENS = 48


def ablation_section(run: Run, sentence: int) -> None:
    cfg = run.cfg
    st.subheader("Switch heads off")
    text = st.text_input(
        "Heads to switch off, as layer.head separated by commas",
        key="ablate",
        placeholder="e.g. 0.2,1.8",
        help="A head switched off contributes nothing to its layer's output (its z is zeroed "
        "before W_O, as if its columns of W_O were zero). The choice is part of the link.",
    )
    heads, problems = ablation.parse_heads(text, cfg.num_layers, cfg.num_heads)
    for problem in problems:
        st.warning(literal(f"Left out: {problem}."))
    if not heads:
        st.caption(
            f"Type heads above (layers 0..{cfg.num_layers - 1}, heads 0..{cfg.num_heads - 1}) "
            "to compare the model with and without them."
        )
        return
    try:
        ablated = run.with_heads_off(heads)
    except ValueError as error:  # RunTooLarge
        st.error(str(error))
        return
    except RuntimeError as error:
        st.error(f"The forward pass without those heads failed on {run.device}: {error}")
        return
    effect = ablation.compare(run.trace, ablated.trace)
    _effect(run, effect, sentence)


def _effect(run: Run, effect: ablation.AblationEffect, sentence: int) -> None:
    n = run.n_valid(sentence)
    tokens = run.tokens[sentence]
    names = ", ".join(f"layer {layer} head {head}" for layer, head in effect.heads)
    mean = effect.mean_residual_cosine[:, sentence]  # [depth]
    output_cosine = effect.output_cosine[sentence, :n]
    output_change = effect.output_change[sentence, :n]
    columns = st.columns(3 if run.key.source == "pretrained" else 2)
    columns[0].metric("Mean cosine of the final output", f"{np.mean(output_cosine):.4f}")
    columns[1].metric("Mean change of the final output", f"{np.mean(output_change):.1%}")
    if run.key.source == "pretrained":
        columns[2].metric(
            "Sentence-embedding cosine",
            f"{effect.sentence_cosine[sentence]:.4f}",
            help="The cosine between the sentence embeddings with and without the heads: the "
            "mean over real tokens of the output, as sentence-transformers pools MiniLM.",
        )
    first = effect.first_layer
    before = "the embeddings" if first == 0 else f"the stream up to block {first}'s input"
    st.caption(
        f"Without {names}: cosine similarity between the residual stream with and without them, "
        f"token by token (1 = same direction). Nothing before block {first} changes, so "
        f"{before} is identical (cosine 1)."
    )
    cosine = effect.residual_cosine[:, sentence, :n]  # [depth, token]
    show(
        residual_cosine_chart(
            cosine, mean, tokens, title="Residual stream with vs without, per token and mean"
        ),
        "ablation_cosine",
    )
    depths = depth_labels(run.cfg.num_layers)
    depth, token = np.unravel_index(np.nanargmin(cosine), cosine.shape)
    st.caption(
        f"The token that moved most: {quoted(tokens[token])} {depths[depth]}, cosine "
        f"{cosine[depth, token]:.4f}."
    )
    table = pd.DataFrame(
        {"stream": depths, "mean cosine": mean, "lowest cosine": np.nanmin(cosine, axis=-1)}
    )
    st.dataframe(
        table.style.format(precision=6, subset=["mean cosine", "lowest cosine"]), hide_index=True
    )
    show(output_change_chart(output_change, output_cosine, tokens), "ablation_output")
    later = list(range(effect.first_layer + 1, run.cfg.num_layers))
    if not later:
        st.caption(
            f"Layer {effect.first_layer} is the last: no later layer's attention can change."
        )
        return
    which = f"layer {later[0]}" if len(later) == 1 else f"layers {later[0]}..{later[-1]}"
    st.caption(
        "A head switched off still computes its attention; what changes is the stream that the "
        f"later layers read, so their attention moves. Here {which}, without minus with:"
    )
    show(
        attention_difference(
            effect.attention_difference[later[0] :, sentence],
            n,
            layers=later,
            max_tokens=OVERVIEW_MAX_TOKENS,
        ),
        "ablation_difference",
    )
    changes = effect.head_changes(sentence, n)
    moved = changes.iloc[0]
    layer, head = int(moved["layer"]), int(moved["head"])
    st.caption(
        f"The heads whose attention moved most (moved = the share of a query's attention that "
        f"went to other keys, averaged over queries). Most: layer {layer}, head {head}, "
        f"{moved['moved']:.1%} moved, a single weight by up to {moved['largest']:.3f}."
    )
    left, right = st.columns([2, 3])
    left.dataframe(
        changes.head(10).style.format(precision=4, subset=["moved", "largest"]),
        hide_index=True,
    )
    with right:
        show(
            difference_head(
                effect.attention_difference[layer, sentence, head],
                run.padded_tokens[sentence],
                n,
                title=f"Layer {layer}, head {head}: attention without minus with",
            ),
            "ablation_head_difference",
        )
