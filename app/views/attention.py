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
from app.charts.common import depth_labels
from app.components.attention_explorer import attention_explorer
from app.explorer_payloads import explorer_payload, in_page_language
from app.i18n import _, direction, in_this_language, language, n_, number, percent, told
from app.keys import Key, Selection
from app.page import readings
from app.page.changes import (
    head_label,
    head_switched_off,
    no_difference_panel,
    random_vs_trained,
    say,
    what_changed,
)
from app.page.layout import deltas, headers, number_table, setup_title, stacked, written
from app.page.widgets import pick_sentence, show
from app.runs import Run, Runs, ablation_effect
from app.user_text import literal, quoted
from encoder import EncoderConfig
from encoder.inspect import ablation
from encoder.inspect.neuron import qk_names
from encoder.web.offline import explorer_html

HEAD_LABELS = ("setup", "layer", "head")  # the metrics tables' columns that are not numbers
EXPLORER_KEY = "explorer"
# the sections below the explorer: (expander key, label); each computes only while open (the
# label is a message, translated where it is drawn)
METRICS = ("attention_metrics", "Every head's metrics: entropy, focus, distance, sinks")
DIVERGENCE = ("attention_divergence", "Where A and B part, layer by layer")
READINGS = ("attention_readings", "What the heads move and where tokens draw from, in numbers")
SECTION_LABELS = {  # the sections' labels in the page's language
    METRICS[0]: lambda: _("Every head's metrics: entropy, focus, distance, sinks"),
    DIVERGENCE[0]: lambda: _("Where A and B part, layer by layer"),
    READINGS[0]: lambda: _("What the heads move and where tokens draw from, in numbers"),
}
KEYS = (
    Key("stretch", False, selects=True),
    Key(EXPLORER_KEY),  # the attention explorer's component state: its settled {layer, head}
    Key("neuron", False, selects=True),  # its neuron view was opened: send every head's q and k
    *(Key(key, False) for key, _ in (METRICS, DIVERGENCE, READINGS)),
)


def hooks(cfg: EncoderConfig, chosen: Selection) -> list[str]:
    """Once the explorer's neuron view was opened in the session, every head's q and k as its
    scores use them (it draws any cell); until then none."""
    return qk_names(cfg) if chosen.neuron else []


def draw(runs: Runs, chosen: Selection, follow: Callable[[], None]) -> None:
    """`follow`: the explorer's callback that writes its settled head into the session."""
    run = runs.a
    sentence = pick_sentence(run.sentences, chosen.sentence)
    stretch = st.toggle(
        _("Stretch the colours to the largest weight"),
        key="stretch",
        persist_state="session",
        help=_("Random weights spread attention almost evenly; stretching shows its structure."),
    )
    what_changed(runs)
    say(head_switched_off(runs, sentence) + random_vs_trained(runs, sentence))
    cfg = run.cfg
    st.header(
        _(
            "Every head at once: {layers} x {heads}",
            layers=n_("{count} layer", "{count} layers", cfg.num_layers),
            heads=n_("{count} head", "{count} heads", cfg.num_heads),
        )
        if runs.b is None
        else _("Every head")
    )
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
    key, _label = section
    box = st.expander(SECTION_LABELS[key](), key=key, on_change="rerun")
    with box:
        if box.open:
            draw_open()


def _explorer(
    runs: Runs, sentence: int, chosen: Selection, stretch: bool, follow: Callable[[], None]
) -> None:
    """The explorer of one sentence (every setup in one payload), and its offline download."""
    n = runs.a.n_valid(sentence)
    if runs.b is None:
        matrix = _("one head's {n} x {n} weights (query rows, key columns)", n=n)
    else:
        matrix = _(
            "one head's weights (query rows, key columns: A's {a} x {a} and B's {b} x {b})",
            a=runs.a.n_valid(sentence),
            b=runs.b.n_valid(sentence),
        )
    differs = runs.b is not None and runs.same_tokens and _grid(runs.a) == _grid(runs.b)
    # the explorer is drawn in the page's direction: right to left, the queries are on the right
    left, right = _("on the left"), _("on the right")
    queries, keys = (right, left) if direction() == "rtl" else (left, right)
    said = _(
        "Lines: each query token ({queries}) to the keys ({keys}), brighter = more weight; point "
        "at a "
        "token or pin it with a click; the chips overlay other heads. Matrix: {matrix}. Every "
        "head: one tile per head; click one to open it. What it moves: the head's weight times "
        "the length of what each key sends, ‖weight × f(key)‖ (Kobayashi et al., 2020). "
        "Rollout: what each token draws on after the chosen layer, the layers composed with the "
        "residual (Abnar & Zuidema, 2020). Keyboard: ←/→ heads, PageUp/PageDown layers, ↑/↓ "
        "query tokens, Enter pins.",
        matrix=matrix,
        queries=queries,
        keys=keys,
    )
    if differs:
        said += " " + _("B − A: red where B puts more weight than A, blue less.")
    st.caption(said)
    try:
        payload = explorer_payload(
            runs, sentence, chosen.layer, chosen.head, stretch, qk=chosen.neuron
        )
    except ValueError as error:  # a NaN in the weights, too many tokens, the budget
        st.error(literal(_("The attention cannot be drawn: {error}", error=told(error))))
        return
    attention_explorer(payload, key=EXPLORER_KEY, on_select=follow)
    page_title = _("Attention explorer")
    st.download_button(
        _("Download this explorer (HTML)"),
        data=in_this_language(
            lambda: explorer_html(
                in_page_language(payload),
                page_title,
                layer=chosen.layer,
                head=chosen.head,
                lang=language(),
                direction=direction(),
            ).encode("utf-8")
        ),
        file_name="attention_explorer.html",
        mime="text/html",
        key="download_explorer",
        help=_("The same explorer in one file: it works offline, with no server."),
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
    if ends == ("first", "last"):
        caption = (
            _(
                "Every head: entropy (nats; low = focused), mean max weight, mean distance to "
                "the attended token, and the share of attention going to itself, the previous "
                "and next token, the first and the last token. The first row is the head chosen "
                "in the explorer (of each setup)."
            )
            if runs.b is not None
            else _(
                "Every head: entropy (nats; low = focused), mean max weight, mean distance to "
                "the attended token, and the share of attention going to itself, the previous "
                "and next token, the first and the last token. The first row is the head chosen "
                "in the explorer."
            )
        )
    else:
        caption = (
            _(
                "Every head: entropy (nats; low = focused), mean max weight, mean distance to "
                "the attended token, and the share of attention going to itself, the previous "
                "and next token, the {first} and the {last} token. The first row is the head "
                "chosen in the explorer (of each setup)."
            )
            if runs.b is not None
            else _(
                "Every head: entropy (nats; low = focused), mean max weight, mean distance to "
                "the attended token, and the share of attention going to itself, the previous "
                "and next token, the {first} and the {last} token. The first row is the head "
                "chosen in the explorer."
            )
        ).format(first=ends[0], last=ends[1])
    st.caption(caption)
    selected = (metrics["layer"] == layer) & (metrics["head"] == head)
    number_table(pd.concat([metrics[selected], metrics[~selected]]), HEAD_LABELS, height=300)
    if runs.b is None or _grid(runs.a) != _grid(runs.b):
        return
    n_a, n_b = runs.a.n_valid(sentence), runs.b.n_valid(sentence)
    st.caption(
        _("The same metrics, B − A, head by head:")
        if n_a == n_b
        else _(
            "The same metrics, B − A, head by head (each over its own setup's tokens, {n_a} in A "
            "and {n_b} in B: entropy's ceiling ln n is {ceiling_a} in A and {ceiling_b} in B, "
            "and distances count tokens of different sizes):",
            n_a=n_a,
            n_b=n_b,
            ceiling_a=number(math.log(n_a), 2, grouped=False),
            ceiling_b=number(math.log(n_b), 2, grouped=False),
        )
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
                    title=_("Share of each head's attention that moved (mean |Δ weight| / 2)"),
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
                    title=_("Residual stream: cosine of B's with A's, per token and depth"),
                ),
                "divergence_cosine",
            )


def _ablation_section(run: Run, sentence: int) -> None:
    cfg = run.cfg
    st.header(_("Switch heads off"))
    text = st.text_input(
        _("Heads to switch off, as layer.head separated by commas"),
        key="ablate",
        persist_state="session",
        placeholder=_("e.g. 0.2,1.8"),
        help=_(
            "A head switched off contributes nothing to its layer's output (its z is zeroed "
            "before W_O, as if its columns of W_O were zero). The choice is part of the link."
        ),
    )
    heads, problems = ablation.parse_heads(text, cfg.num_layers, cfg.num_heads)
    for problem in problems:
        st.warning(literal(_("Left out: {problem}.", problem=told(problem))))
    if not heads:
        st.caption(
            _(
                "Type heads above (layers 0..{last_layer}, heads 0..{last_head}) to compare the "
                "model with and without them.",
                last_layer=cfg.num_layers - 1,
                last_head=cfg.num_heads - 1,
            )
        )
        return
    try:
        effect = ablation_effect(run, heads)
    except ValueError as error:  # RunTooLarge: the memory budget's message, nothing computed
        st.error(told(error))
        return
    except RuntimeError as error:
        st.error(
            _(
                "The forward pass without those heads failed on {device}: {error}",
                device=run.device,
                error=told(error),
            )
        )
        return
    _effect(run, effect, sentence)


def _effect(run: Run, effect: ablation.AblationEffect, sentence: int) -> None:
    n = run.n_valid(sentence)
    _output_metrics(run, effect, sentence)
    _stream_effect(run, effect, sentence)
    change, cosine = effect.output_change[sentence, :n], effect.output_cosine[sentence, :n]
    show(output_change_chart(change, cosine, run.tokens[sentence]), "ablation_output")
    _later_attention(run, effect, sentence)


def _output_metrics(run: Run, effect: ablation.AblationEffect, sentence: int) -> None:
    """The final output's mean cosine and change (and MiniLM's sentence embedding's cosine)."""
    n = run.n_valid(sentence)
    output_cosine = effect.output_cosine[sentence, :n]
    output_change = effect.output_change[sentence, :n]
    columns = st.columns(3 if run.key.source == "pretrained" else 2)
    columns[0].metric(
        _("Mean cosine of the final output"), number(np.mean(output_cosine), 4, grouped=False)
    )
    columns[1].metric(_("Mean change of the final output"), percent(np.mean(output_change), 1))
    if run.key.source == "pretrained":
        columns[2].metric(
            _("Sentence-embedding cosine"),
            number(effect.sentence_cosine[sentence], 4, grouped=False),
            help=_(
                "The cosine between the sentence embeddings with and without the heads: the "
                "mean over real tokens of the output, as sentence-transformers pools MiniLM."
            ),
        )


def _stream_effect(run: Run, effect: ablation.AblationEffect, sentence: int) -> None:
    """The residual stream with vs without the heads: per token and depth, and its mean."""
    n, tokens = run.n_valid(sentence), run.tokens[sentence]
    names = "; ".join(head_label(layer, head) for layer, head in effect.heads)
    mean = effect.mean_residual_cosine[:, sentence]  # [depth]
    first = effect.first_layer
    st.caption(
        _(
            "Without {names}: cosine similarity between the residual stream with and without "
            "them, token by token (1 = same direction). Nothing before block 0 changes, so the "
            "embeddings are identical (cosine 1).",
            names=names,
        )
        if first == 0
        else _(
            "Without {names}: cosine similarity between the residual stream with and without "
            "them, token by token (1 = same direction). Nothing before block {first} changes, so "
            "the stream up to block {first}'s input is identical (cosine 1).",
            names=names,
            first=first,
        )
    )
    cosine = effect.residual_cosine[:, sentence, :n]  # [depth, token]
    show(
        residual_cosine_chart(
            cosine, mean, tokens, title=_("Residual stream with vs without, per token and mean")
        ),
        "ablation_cosine",
    )
    depths = depth_labels(run.cfg.num_layers)
    depth, token = np.unravel_index(np.nanargmin(cosine), cosine.shape)
    st.caption(
        _(
            "The token that moved most: {token} {depth}, cosine {cosine}.",
            token=quoted(tokens[token]),
            depth=depths[depth],
            cosine=number(cosine[depth, token], 4, grouped=False),
        )
    )
    table = pd.DataFrame(
        {"stream": depths, "mean cosine": mean, "lowest cosine": np.nanmin(cosine, axis=-1)}
    )
    st.dataframe(
        written(table, 6),
        hide_index=True,
        column_config=headers(table),
    )


def _later_attention(run: Run, effect: ablation.AblationEffect, sentence: int) -> None:
    """How the later layers' attention moves (none: the heads are in the last layer)."""
    n = run.n_valid(sentence)
    later = list(range(effect.first_layer + 1, run.cfg.num_layers))
    if not later:
        st.caption(
            _(
                "Layer {layer} is the last: no later layer's attention can change.",
                layer=effect.first_layer,
            )
        )
        return
    st.caption(
        _(
            "A head switched off still computes its attention; what changes is the stream that "
            "the later layers read, so their attention moves. Here layer {layer}, without minus "
            "with:",
            layer=later[0],
        )
        if len(later) == 1
        else _(
            "A head switched off still computes its attention; what changes is the stream that "
            "the later layers read, so their attention moves. Here layers {first}..{last}, "
            "without minus with:",
            first=later[0],
            last=later[-1],
        )
    )
    show(
        attention_difference(effect.attention_difference[later[0] :, sentence], n, layers=later),
        "ablation_difference",
    )
    _moved_heads(run, effect, sentence)


def _moved_heads(run: Run, effect: ablation.AblationEffect, sentence: int) -> None:
    """The heads whose attention moved most, and the most moved head's difference."""
    n = run.n_valid(sentence)
    changes = effect.head_changes(sentence, n)
    moved = changes.iloc[0]
    layer, head = int(moved["layer"]), int(moved["head"])
    st.caption(
        _(
            "The heads whose attention moved most (moved = the share of a query's attention "
            "that went to other keys, averaged over queries). Most: layer {layer}, head {head}, "
            "{moved} moved, a single weight by up to {largest}.",
            layer=layer,
            head=head,
            moved=percent(moved["moved"], 1),
            largest=number(moved["largest"], 3, grouped=False),
        )
    )
    left, right = st.columns([2, 3])
    top = changes.head(10)
    left.dataframe(
        written(top, 4, ["moved", "largest"]),
        hide_index=True,
        column_config=headers(top),
    )
    with right:
        show(
            difference_head(
                effect.attention_difference[layer, sentence, head],
                run.padded_tokens[sentence],
                n,
                title=_(
                    "Layer {layer}, head {head}: attention without minus with",
                    layer=layer,
                    head=head,
                ),
            ),
            "ablation_head_difference",
        )
