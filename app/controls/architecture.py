"""The sidebar's architecture controls (setup A's, and setup B's under the keys `b_` + A's key),
and in their place for a trained model, its architecture in one sentence. The options beyond the
usual ones (RoPE's base, biases, a local window, an embedding size, shared layers) sit in an
expander, "More architecture choices"."""

from __future__ import annotations

import streamlit as st

from app.controls import setup_keys, state, url
from app.i18n import _
from app.keys import MAX_HEADS, MAX_LAYERS
from app.settings import D_FF_CHOICES, D_MODEL_CHOICES, LABELS, architecture_values, say, shown
from encoder import EncoderConfig
from encoder.core.options import BY_KEY, OPTIONS, ArchOption, head_counts

# The controls drawn first, in this order; the other options go in "More architecture choices".
FIRST_NAMED = ("activation", "norm_type", "positional")
FIRST_CONTROLS = ("norm", "d_model", "num_heads", "num_layers", "d_ff", *FIRST_NAMED, "seed")


def _with_value(choices: list[int], value: int) -> list[int]:
    """The fixed choices plus the current value (e.g. from a link), sorted."""
    return sorted(set(choices) | {value})


def _fitting_heads(d_model: int, notices: list[str]) -> list[int]:
    """The head counts setup A offers; a count that does not divide d_model becomes the nearest
    that does, and the page says so."""
    options = head_counts(d_model, MAX_HEADS)
    wanted = state.get("num_heads")
    if wanted not in options:
        nearest = min(options, key=lambda h: (abs(h - wanted), h))
        notices.append(
            _(
                "num_heads={wanted} does not divide d_model={d_model} (each head gets "
                "d_model / num_heads dimensions), so {nearest} heads are used instead.",
                wanted=wanted,
                d_model=d_model,
                nearest=nearest,
            )
        )
        state.put("num_heads", nearest)
    return options


def architecture_summary(cfg: EncoderConfig) -> None:
    """A trained model's architecture in one sentence, in place of the controls (its weights fit
    no other): the first controls' values, then the other choices where they differ from the
    controls' defaults and act ("window 128, global every 3 layers", not a RoPE base without
    rotary positions)."""
    values = architecture_values(cfg)
    first = [key for key in FIRST_CONTROLS if key in values]
    others = [
        key
        for key in values
        if key not in FIRST_CONTROLS
        and values[key] != setup_keys.DEFAULTS[key]
        and _acts(values, key)
    ]
    st.caption(
        _(
            "This model's architecture: {architecture}. Trained weights only fit the "
            "architecture they were trained with; choose random weights to change it.",
            architecture=_(", ").join(say(key, values[key]) for key in first + others),
        )
    )


def architecture_controls(prefix: str, notices: list[str]) -> None:
    """Norm placement, d_model, heads, layers, d_ff, activation, norm type, positions and seed,
    then the other options in an expander (drawn only while it is open), with keys `prefix` +
    A's key (setup B's widgets follow A's values until changed)."""

    def changes(name: str) -> dict:  # setup B's widgets say which of B's values changed
        return {"on_change": url.on_b_change, "args": (name,)} if prefix else {}

    _first_controls(prefix, notices, changes)
    _more_controls(prefix, changes)


def _first_controls(prefix: str, notices: list[str], changes) -> None:
    """The controls drawn first (FIRST_CONTROLS), in that order."""
    norm, d_ff = BY_KEY["norm"], BY_KEY["d_ff"]
    st.radio(
        shown(norm.label),
        norm.choices,
        key=prefix + "norm",
        persist_state="session",
        format_func=_labels(norm.choices).get,
        **changes("norm"),
    )
    d_model = st.select_slider(
        shown("d_model"),
        _with_value(D_MODEL_CHOICES, state.get(prefix + "d_model")),
        key=prefix + "d_model",
        persist_state="session",
        **changes("d_model"),
    )
    if prefix:  # B shows an impossible head count as it is; its config says what is wrong
        heads = _with_value(head_counts(d_model, MAX_HEADS), state.get(prefix + "num_heads"))
    else:
        heads = _fitting_heads(d_model, notices)
    st.selectbox(
        shown(BY_KEY["num_heads"].label),
        heads,
        key=prefix + "num_heads",
        persist_state="session",
        help=_("Only divisors of d_model are offered: each head gets d_model / heads dimensions."),
        **changes("num_heads"),
    )
    layers = max(MAX_LAYERS, state.get(prefix + "num_layers"))  # uploads may have more
    st.slider(
        shown(BY_KEY["num_layers"].label),
        1,
        layers,
        key=prefix + "num_layers",
        persist_state="session",
        **changes("num_layers"),
    )
    st.select_slider(
        shown(d_ff.label),
        _with_value(D_FF_CHOICES, state.get(prefix + "d_ff")),
        key=prefix + "d_ff",
        persist_state="session",
        **changes("d_ff"),
    )
    for key in FIRST_NAMED:
        _named_control(prefix, BY_KEY[key], changes)
    seed = BY_KEY["seed"]
    st.number_input(
        shown(seed.label),
        *seed.bounds,
        key=prefix + "seed",
        persist_state="session",
        **changes("seed"),
    )


def _more_controls(prefix: str, changes) -> None:
    """The other architecture options, in "More architecture choices"."""
    more = [o for o in OPTIONS if o.architecture and o.key not in FIRST_CONTROLS]
    changed = any(state.get(prefix + o.key) != setup_keys.DEFAULTS[o.key] for o in more)
    box = st.expander(  # holding a changed choice, it is another box, open at first: a model,
        _("More architecture choices"),  # a preset or a link that changes one shows it
        expanded=changed,
        key=prefix + ("more_architecture_changed" if changed else "more_architecture"),
        on_change="rerun",
    )
    if not box.open:  # its choices are drawn only when open; they keep their values meanwhile
        return
    values = url.sidebar_values(prefix)
    with box:
        for option in more:
            if option.named:
                _named_control(prefix, option, changes)
                continue
            st.select_slider(
                shown(option.label),
                _with_value(list(option.choices), state.get(prefix + option.key)),
                key=prefix + option.key,
                persist_state="session",
                disabled=not _acts(values, option.key),
                help=shown(option.help),
                **changes(option.key),
            )


def _named_control(prefix: str, option: ArchOption, changes) -> None:
    """A radio of a named option's values (activation, positions, biases, shared layers...)."""
    st.radio(
        shown(option.label),
        option.choices,
        key=prefix + option.key,
        persist_state="session",
        format_func=_labels(option.choices).get,
        horizontal=True,
        help=shown(option.help),
        **changes(option.key),
    )


def _labels(values) -> dict[str, str]:
    """A named option's values as its control shows them, in this run's language (a dict made
    as the control is drawn: its format_func is also called after the run)."""
    return {value: shown(LABELS.get(value)) for value in values}


def _acts(values: dict[str, object], key: str) -> bool:
    """False for an option that does nothing with the others' `values` (by A's keys): RoPE's
    base without rotary positions, the global layers without a local window."""
    if key == "rope_base":
        return values["positional"] == "rope"
    if key == "global_every":
        return values["window"] != 0
    return True
