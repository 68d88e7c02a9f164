"""The Attention view: every head at once, one head in detail with every head's metrics, and what
switching heads off changes.

The ablated run is a second cached run (the same model, sentences and kept hooks, with the heads
off); with nothing switched off there is no second run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from app.charts.ablation import (
    COMPARE_DIFFERENCE,
    attention_difference,
    difference_head,
    divergence_chart,
    output_change_chart,
    residual_cosine_chart,
)
from app.charts.attention import OVERVIEW_MAX_TOKENS
from app.charts.common import depth_labels, plural
from app.runs import Run, Runs
from app.settings import Selection
from app.user_text import literal, quoted
from app.views import readings
from app.views.changes import (
    head_switched_off,
    no_difference_panel,
    random_vs_trained,
    say,
    what_changed,
)
from app.views.figures import head_figure, overview_figure
from app.views.layout import deltas, missing, number_table, show_for, side_by_side, stacked
from app.views.widgets import pick_index, pick_sentence, show
from encoder.inspect import ablation

HEAD_LABELS = ("setup", "layer", "head")  # the metrics tables' columns that are not numbers


def draw(runs: Runs, chosen: Selection) -> None:
    run = runs.a
    sentence = pick_sentence(run.sentences, chosen.sentence)
    stretch = st.toggle(
        "Stretch the colours to the largest weight",
        key="stretch",
        help="Random weights spread attention almost evenly; stretching shows its structure.",
    )
    what_changed(runs)
    say(head_switched_off(runs, sentence) + random_vs_trained(runs, sentence))
    cfg = run.cfg
    layers, heads = plural(cfg.num_layers, "layer"), plural(cfg.num_heads, "head")
    st.subheader(f"Every head at once: {layers} x {heads}" if runs.b is None else "Every head")
    for name, setup in side_by_side(runs):
        n = setup.n_valid(sentence)
        tokens = setup.attention.shape[-1]  # with padding
        size = f"{n} x {n}" if tokens <= OVERVIEW_MAX_TOKENS else f"{n} x {n} (drawn in blocks)"
        st.caption(
            f"Each tile is one head's {size} attention matrix (query rows, key columns; brighter "
            "= more weight). Padding is greyed out."
        )
        show_for(overview_figure(setup, sentence, stretch), "overview", name)
    if runs.b is not None:
        _overview_difference(runs, sentence)
    st.subheader("One head in detail")
    st.fragment(_head_detail)(runs, sentence, stretch)
    if runs.b is not None:
        _divergence(runs, sentence)
    if not runs.compare:  # in compare mode each setup switches its own heads off (sidebar)
        _ablation_section(run, sentence)
    readings.draw(runs, chosen, sentence)


def _overview_difference(runs: Runs, sentence: int) -> None:
    comparison = runs.comparison
    if comparison is None or comparison.attention_difference is None:
        no_difference_panel(runs)
        return
    difference = comparison.attention_difference[:, sentence]  # [L, H, T, T]
    st.caption(
        "B − A, head by head: red where B puts more weight than A, blue less, white the same."
    )
    show(
        attention_difference(
            difference,
            runs.a.n_valid(sentence),
            layers=list(range(runs.a.cfg.num_layers)),
            title="Attention of every head: B − A",
            colour_title=COMPARE_DIFFERENCE,
        ),
        "overview_difference",
    )


def _ends(runs: Runs) -> tuple[str, str]:
    """How the tables name the first and last token: [CLS] and [SEP] when every setup reads
    MiniLM's WordPiece, else "first" and "last" (a task's sequences have neither)."""
    wordpiece = all(run.task_model is None for _, run in runs.named())
    return ("[CLS]", "[SEP]") if wordpiece else ("first", "last")


def _metrics(run: Run, sentence: int, ends: tuple[str, str]) -> pd.DataFrame:
    first, last = ends
    return run.head_metrics(sentence).rename(
        columns={"to_first": f"to {first}", "to_last": f"to {last}"}
    )


def _head_detail(runs: Runs, sentence: int, stretch: bool) -> None:
    """Pick a layer and head: this part reruns alone (a fragment), not the whole page."""
    setups = runs.named()
    left, right = st.columns(2)
    layer = pick_index("Layer", max(r.cfg.num_layers for _, r in setups), "layer", left)
    head = pick_index("Head", max(r.cfg.num_heads for _, r in setups), "head", right)
    for name, run in side_by_side(runs):
        label = name or "A"
        if missing(label, "layer", layer, run.cfg.num_layers):
            continue
        if missing(label, "head", head, run.cfg.num_heads):
            continue
        show_for(head_figure(run, sentence, layer, head, stretch), "head_detail", name)
    comparison = runs.comparison
    if comparison is not None and comparison.attention_difference is not None:
        show(
            difference_head(
                comparison.attention_difference[layer, sentence, head],
                runs.a.padded_tokens[sentence],
                runs.a.n_valid(sentence),
                title=f"Layer {layer}, head {head}: B − A",
                colour_title=COMPARE_DIFFERENCE,
            ),
            "head_difference",
        )
    ends = _ends(runs)
    metrics = stacked(runs, lambda run: _metrics(run, sentence, ends))
    first, last = ends
    st.caption(
        "Every head: entropy (nats; low = focused), mean max weight, mean distance to the "
        "attended token, and the share of attention going to itself, the previous and next "
        f"token, the {first} and the {last} token. The first row is the selected head"
        + (" (of each setup)." if runs.b is not None else ".")
    )
    selected = (metrics["layer"] == layer) & (metrics["head"] == head)
    number_table(pd.concat([metrics[selected], metrics[~selected]]), HEAD_LABELS, height=300)
    if comparison is not None and comparison.attention_difference is not None:
        st.caption("The same metrics, B − A, head by head:")
        change = deltas(runs, lambda run: _metrics(run, sentence, ends), on=["layer", "head"])
        number_table(change, HEAD_LABELS, height=240)


def _divergence(runs: Runs, sentence: int) -> None:
    """Layer by layer: how much each head's attention moved, and how far the streams point
    apart."""
    comparison = runs.comparison
    if comparison is None:
        return  # the overview said why
    st.subheader("Where A and B part, layer by layer")
    n = runs.a.n_valid(sentence)
    left, right = st.columns([2, 3]) if n <= 12 else (st.container(), st.container())
    if comparison.attention_difference is not None:
        moved = comparison.head_changes(sentence, n).sort_values(["layer", "head"])
        L, H = runs.a.cfg.num_layers, runs.a.cfg.num_heads
        with left:
            show(
                divergence_chart(
                    moved["moved"].to_numpy().reshape(L, H),
                    title="Share of each head's attention that moved (mean |Δ weight| / 2)",
                ),
                "divergence",
            )
    if comparison.residual_cosine is not None:
        cosine = comparison.residual_cosine[:, sentence, :n]  # [depth, token]
        mean = comparison.mean_residual_cosine[:, sentence]
        with right:
            show(
                residual_cosine_chart(
                    cosine,
                    mean,
                    runs.a.tokens[sentence],
                    title="Residual stream: cosine of B's with A's, per token and depth",
                ),
                "divergence_cosine",
            )


def _ablation_section(run: Run, sentence: int) -> None:
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
        ablated = run.heads_off(heads)
    except ValueError as error:  # RunTooLarge
        st.error(str(error))
        return
    except RuntimeError as error:
        st.error(f"The forward pass without those heads failed on {run.device}: {error}")
        return
    _effect(run, ablation.compare(run.trace, ablated.trace), sentence)


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
        attention_difference(effect.attention_difference[later[0] :, sentence], n, layers=later),
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
