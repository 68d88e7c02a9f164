"""The "Attention steps" view: one query's attention computation with the live model's numbers,
laid out in the order the data flows, each step with its shape.

Every number comes from the run's trace and the model's weights through
encoder.inspect.attention_steps; this module only lays them out and words them.
"""

from __future__ import annotations

import streamlit as st

from app.components.attention_explorer import attention_explorer
from app.explorer_payloads import explorer_payload
from app.i18n import _, told
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
from app.page.changes import what_changed
from app.page.layout import missing, setup_title, side_by_side
from app.page.widgets import pick_index, pick_sentence, pick_token
from app.runs import Runs
from app.user_text import literal, quoted
from app.views.step_inputs import input_step, keys_values_step, query_step, rope_step
from app.views.step_outputs import mix_step, output_step, residual_step, scaling_step
from app.views.step_tables import said, table_step, weights_compared
from encoder import EncoderConfig
from encoder.inspect.attention_steps import AttentionSteps, names_for_steps
from encoder.inspect.neuron import neuron_cell, qk_names
from encoder.web.payload import start_at, with_start

KEYS = (  # one query's attention: its layer, head and query, each in the link
    Key("step_layer", 0, in_url=True, bounds=LAYER_BOUNDS, selects=True, fits=FITS_LAYER),
    Key("step_head", 0, in_url=True, bounds=HEAD_BOUNDS, selects=True, fits=FITS_HEAD),
    Key("step_query", 0, in_url=True, bounds=POSITION_BOUNDS, selects=True, fits=FITS_POSITION),
)


def hooks(cfg: EncoderConfig, chosen: Selection) -> list[str]:
    """Only the chosen layer's tensors are kept for this view (the last layer's for a setup that
    has fewer layers; the view says it has no such layer), and every head's q and k (the neuron
    view's explorer)."""
    return names_for_steps(cfg, min(chosen.step_layer, cfg.num_layers - 1)) + qk_names(cfg)


def draw(runs: Runs, chosen: Selection) -> None:
    run = runs.a
    sentence = pick_sentence(run.sentences, chosen.sentence)
    setups = runs.named()
    left, middle, right = st.columns(3)
    layer = pick_index(_("Layer"), max(r.cfg.num_layers for __, r in setups), "step_layer", left)
    head = pick_index(_("Head"), max(r.cfg.num_heads for __, r in setups), "step_head", middle)
    query = pick_token(
        _("Query token (position)"),
        run.tokens[sentence],
        "step_query",
        right,
        help=_("The token whose attention is computed; positions count from 0."),
    )
    what_changed(runs)
    shown = []  # (name, steps, padded tokens) of each setup that has this layer, head and query
    titles = {name: setup_title(name, setup) for name, setup in runs.named()}
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
        if step is rope_step and not any(s.rotated_q is not None for __, s, ___ in shown):
            continue  # positions are added to the embeddings: nothing turns q and k
        with st.expander(label(), expanded=open_at_first, key=key, on_change="rerun") as box:
            if not box.open:  # a closed step is neither computed nor sent
                continue
            if step is neuron_step:  # one explorer for every setup
                neuron_step(runs, sentence, layer, head, query)
                continue
            stacked = step is table_step  # every column of a setup's table on the page's width
            for (name, steps, tokens), where in zip(
                shown, _places(len(shown), stacked), strict=True
            ):
                with where:
                    if stacked and len(shown) == 2:
                        st.markdown(f"**{titles[name]}**")
                    step(steps, tokens, name)
            if step is table_step and len(shown) == 2:
                weights_compared(shown)


STEP_SPACING = "medium"


def _places(count: int, stacked: bool = False) -> list:
    """Where each setup's step goes: the main area, or two columns side by side (`stacked`: one
    under the other, each on the page's width, as a table of nine columns needs)."""
    if count == 1 or stacked:
        return [st.container() for __ in range(count)]
    return list(st.columns(2, gap=STEP_SPACING))


def _introduction(steps: AttentionSteps, tokens: list[str]) -> None:
    table = steps.table
    top = int(table["weight"].idxmax())
    query = steps.query
    st.header(
        _(
            "Layer {layer}, head {head}: how query {query} {token} attends",
            layer=steps.layer,
            head=steps.head,
            query=query,
            token=quoted(tokens[query]),
        )
    )
    st.markdown(
        _(
            "It gives its largest weight, **{weight}**, to key {index} {token}. Below, every "
            "step from the block's input to the stream after attention, with this model's "
            "numbers (d_model = {d_model}, {heads} heads of d_k = {d_k}).",
            weight=said(table["weight"][top]),
            index=top,
            token=quoted(tokens[top]),
            d_model=steps.d_model,
            heads=steps.num_heads,
            d_k=steps.head_dim,
        )
    )


def neuron_step(runs: Runs, sentence: int, layer: int, head: int, query: int) -> None:
    """The explorer opened on its neuron view of this query's row: one key's score, dimension by
    dimension (encoder/web/neuron_view.js); the key, query and head change in the browser."""
    st.caption(
        _(
            "How one weight of the table is made: q and k dimension by dimension (after RoPE's "
            "turn where the model turns them), their product, its sum, the scale and the "
            "softmax. Keyboard: [ and ] the key, ↑/↓ the query, ←/→ the head."
        )
    )
    run = runs.a
    if layer < run.cfg.num_layers and head < run.cfg.num_heads and query < run.n_valid(sentence):
        key = int(run.trace.attention[layer, sentence, head, query].argmax())  # its largest
        cell = neuron_cell(run.trace, sentence, layer, head, query, key)
        st.markdown(literal(told(cell.said(run.padded_tokens[sentence]))))
    try:
        payload = explorer_payload(runs, sentence, layer, head, stretch=False, qk=True)
    except ValueError as error:  # a NaN in the weights, too many tokens, the budget
        st.error(literal(_("The attention cannot be drawn: {error}", error=told(error))))
        return
    opened = with_start(payload, start_at(layer, head, "neuron", query))
    attention_explorer(opened, key="steps_neuron", report=False)


# Each step in data-flow order, its expander's label, whether it opens at first and its key: the
# scores-and-weights table, the view's answer (which key the query weighs most, and why), opens
# at first under the outline of every step; each other step is computed and sent only once its
# expander is opened, as a teacher walks through them (the keys' and values' heatmaps open at
# first cost a rerun half as long again: docs/performance.md).
STEP_LABELS = {  # step: its label (in the page's language), whether it opens at first, its key
    input_step: (
        lambda: _("1 · The query token's row entering the block"),
        False,
        "step_open_0",
    ),
    query_step: (lambda: _("2 · Its query q_i"), False, "step_open_1"),
    keys_values_step: (lambda: _("3 · Every token's key and value"), False, "step_open_2"),
    # RoPE models only: where the positions enter
    rope_step: (lambda: _("3b · RoPE turns q and k by position"), False, "step_open_rope"),
    table_step: (lambda: _("4 · Scores and weights, one row per key"), True, "step_open_3"),
    neuron_step: (lambda: _("4b · One key's score, dimension by dimension"), False, "step_open_qk"),
    scaling_step: (lambda: _("5 · Why divide by √d_k?"), False, "step_open_4"),
    mix_step: (lambda: _("6 · Mix the values"), False, "step_open_5"),
    output_step: (lambda: _("7 · All heads, projected by W_O"), False, "step_open_6"),
    residual_step: (lambda: _("8 · The residual add"), False, "step_open_7"),
}
STEPS = tuple(STEP_LABELS)
