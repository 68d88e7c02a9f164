"""The Attention view: the attention explorer (lines, matrix, every head, what a head moves,
rollout; A, B and B − A in compare mode) drawn in the browser from one payload, every head's
metrics, and what switching heads off changes.

Every look (hover, query, pin, mode, layer, another head) stays in the browser; the explorer's
settled head reaches the session's `layer` and `head` through `follow` (app.controls.state), so
the metrics table and the URL follow it. A rerun computes and sends what is on screen: the
sections below the explorer (every head's metrics, where A and B part, the readings' numbers)
are expanders that compute only while open (their open state reruns the page); the heads to
switch off compute nothing until some are typed. The ablated run is a second cached run (the same
model, sentences and kept hooks, with the heads off); its effect is cached beside it (app.runs).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from app.charts.ablation import (
    attention_difference,
    difference_head,
    divergence_chart,
    output_change_chart,
    residual_cosine_chart,
)
from app.charts.common import depth_labels, plural
from app.components.attention_explorer import attention_explorer
from app.explorer_payloads import explorer_payload
from app.keys import Key, Selection
from app.runs import Run, Runs, ablation_effect
from app.user_text import literal, quoted
from app.views import readings
from app.views.changes import (
    head_switched_off,
    no_difference_panel,
    random_vs_trained,
    say,
    what_changed,
)
from app.views.layout import deltas, number_table, setup_title, stacked
from app.views.widgets import pick_sentence, show
from encoder.inspect import ablation
from encoder.inspect.predictions import head_label
from encoder.web.offline import explorer_html

HEAD_LABELS = ("setup", "layer", "head")  # the metrics tables' columns that are not numbers
EXPLORER_KEY = "explorer"
# the sections below the explorer: (expander key, label); each computes only while open
METRICS = ("attention_metrics", "Every head's metrics: entropy, focus, distance, sinks")
DIVERGENCE = ("attention_divergence", "Where A and B part, layer by layer")
READINGS = ("attention_readings", "What the heads move and where tokens draw from, in numbers")
KEYS = (
    Key("stretch", False, selects=True),
    Key(EXPLORER_KEY),  # the attention explorer's component state: its settled {layer, head}
    *(Key(key, False) for key, _ in (METRICS, DIVERGENCE, READINGS)),
)


def draw(runs: Runs, chosen: Selection, follow: Callable[[], None]) -> None:
    """`follow`: the explorer's callback that writes its settled head into the session."""
    run = runs.a
    sentence = pick_sentence(run.sentences, chosen.sentence)
    stretch = st.toggle(
        "Stretch the colours to the largest weight",
        key="stretch",
        persist_state="session",
        help="Random weights spread attention almost evenly; stretching shows its structure.",
    )
    what_changed(runs)
    say(head_switched_off(runs, sentence) + random_vs_trained(runs, sentence))
    cfg = run.cfg
    layers, heads = plural(cfg.num_layers, "layer"), plural(cfg.num_heads, "head")
    st.header(f"Every head at once: {layers} x {heads}" if runs.b is None else "Every head")
    for name, setup in runs.named() if runs.b is not None else ():
        st.markdown(f"**{setup_title(name, setup)}**")
    _explorer(runs, sentence, chosen, stretch, follow)
    comparison = runs.comparison
    if runs.b is not None and (comparison is None or comparison.attention_difference is None):
        no_difference_panel(runs)
    _section(METRICS, lambda: _metrics_tables(runs, sentence, chosen))
    if runs.b is not None:
        _section(DIVERGENCE, lambda: _divergence(runs, sentence))
    _section(READINGS, lambda: readings.draw(runs, sentence))
    if not runs.compare:  # in compare mode each setup switches its own heads off (sidebar)
        _ablation_section(run, sentence)


def _section(section: tuple[str, str], draw_open: Callable[[], None]) -> None:
    """A section's expander, with `draw_open` drawn inside it only while it is open, so that its
    content is computed and sent only then (opening or closing it reruns the page)."""
    key, label = section
    box = st.expander(label, key=key, on_change="rerun")
    with box:
        if box.open:
            draw_open()


def _explorer(
    runs: Runs, sentence: int, chosen: Selection, stretch: bool, follow: Callable[[], None]
) -> None:
    """The explorer of one sentence (every setup in one payload), and its offline download."""
    sizes = [
        f"{name}'s {run.n_valid(sentence)} x {run.n_valid(sentence)}" for name, run in runs.named()
    ]
    n = runs.a.n_valid(sentence)
    matrix = (
        f"one head's {n} x {n} weights (query rows, key columns)"
        if runs.b is None
        else f"one head's weights (query rows, key columns: {' and '.join(sizes)})"
    )
    differs = runs.b is not None and runs.same_tokens and _grid(runs.a) == _grid(runs.b)
    st.caption(
        f"Lines: each query token (left) to the keys (right), brighter = more weight; point at a "
        f"token or pin it with a click; the chips overlay other heads. Matrix: {matrix}. Every "
        "head: one tile per head; click one "
        "to open it. What it moves: the head's weight times the length of what each key sends, "
        "‖weight × f(key)‖ (Kobayashi et al., 2020). Rollout: what each token draws on after "
        "the chosen layer, the layers composed with the residual (Abnar & Zuidema, 2020). "
        "Keyboard: ←/→ heads, PageUp/PageDown layers, ↑/↓ query tokens, Enter pins."
        + (" B − A: red where B puts more weight than A, blue less." if differs else "")
    )
    try:
        payload = explorer_payload(runs, sentence, chosen.layer, chosen.head, stretch)
    except ValueError as error:  # a NaN in the weights, too many tokens, the budget
        st.error(literal(f"The attention cannot be drawn: {error}"))
        return
    attention_explorer(payload, key=EXPLORER_KEY, on_select=follow)
    st.download_button(
        "Download this explorer (HTML)",
        data=lambda: explorer_html(
            payload, "Attention explorer", layer=chosen.layer, head=chosen.head
        ).encode("utf-8"),
        file_name="attention_explorer.html",
        mime="text/html",
        key="download_explorer",
        help="The same explorer in one file: it works offline, with no server.",
        on_click="ignore",
    )


def _ends(runs: Runs, sentence: int) -> tuple[str, str]:
    """How the tables name the first and last token: [CLS] and [SEP] when every setup's sentence
    starts and ends with them, else "first" and "last" (a task's sequences have neither,
    RoBERTa's are <s> and </s>)."""
    ends = {(run.tokens[sentence][0], run.tokens[sentence][-1]) for _, run in runs.named()}
    return ("[CLS]", "[SEP]") if ends == {("[CLS]", "[SEP]")} else ("first", "last")


def _metrics(run: Run, sentence: int, ends: tuple[str, str]) -> pd.DataFrame:
    first, last = ends
    return run.head_metrics(sentence).rename(
        columns={"to_first": f"to {first}", "to_last": f"to {last}"}
    )


def _metrics_tables(runs: Runs, sentence: int, chosen: Selection) -> None:
    """Every head's metrics, the explorer's head first (and B − A's in compare mode)."""
    layer, head = chosen.layer, chosen.head
    ends = _ends(runs, sentence)
    metrics = stacked(runs, lambda run: _metrics(run, sentence, ends))
    first, last = ends
    st.caption(
        "Every head: entropy (nats; low = focused), mean max weight, mean distance to the "
        "attended token, and the share of attention going to itself, the previous and next "
        f"token, the {first} and the {last} token. The first row is the head chosen in the "
        "explorer" + (" (of each setup)." if runs.b is not None else ".")
    )
    selected = (metrics["layer"] == layer) & (metrics["head"] == head)
    number_table(pd.concat([metrics[selected], metrics[~selected]]), HEAD_LABELS, height=300)
    if runs.b is None or _grid(runs.a) != _grid(runs.b):
        return
    n_a, n_b = runs.a.n_valid(sentence), runs.b.n_valid(sentence)
    st.caption(
        "The same metrics, B − A, head by head"
        + (
            ""
            if n_a == n_b
            else f" (each over its own setup's tokens, {n_a} in A and {n_b} in B: entropy's "
            f"ceiling ln n is {math.log(n_a):.2f} in A and {math.log(n_b):.2f} in B, and "
            "distances count tokens of different sizes)"
        )
        + ":"
    )
    change = deltas(runs, lambda run: _metrics(run, sentence, ends), on=["layer", "head"])
    number_table(change, HEAD_LABELS, height=240)


def _grid(run: Run) -> tuple[int, int]:
    """(layers, heads): the heads a setup has, which B − A pairs up."""
    return run.cfg.num_layers, run.cfg.num_heads


def _divergence(runs: Runs, sentence: int) -> None:
    """Layer by layer: how much each head's attention moved, and how far the streams point
    apart."""
    comparison = runs.comparison
    if comparison is None:
        return  # the overview said why
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
    st.header("Switch heads off")
    text = st.text_input(
        "Heads to switch off, as layer.head separated by commas",
        key="ablate",
        persist_state="session",
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
        effect = ablation_effect(run, heads)
    except ValueError as error:  # RunTooLarge: the memory budget's message, nothing computed
        st.error(str(error))
        return
    except RuntimeError as error:
        st.error(f"The forward pass without those heads failed on {run.device}: {error}")
        return
    _effect(run, effect, sentence)


def _effect(run: Run, effect: ablation.AblationEffect, sentence: int) -> None:
    n = run.n_valid(sentence)
    tokens = run.tokens[sentence]
    names = "; ".join(head_label(layer, head) for layer, head in effect.heads)
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
