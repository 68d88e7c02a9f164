"""The sidebar: the input text, the model source and its architecture, the device, timings.

Every control is a widget whose key is declared in app.controls.setup_keys (and is a URL
parameter, app.controls.url). What cannot be used (a head count that does not divide d_model, a
device this machine lacks, a model that left the session) is replaced by a sound value and reported
in `Settings.notices`, never raised.

The model source is random weights (the architecture controls describe the model), the bundled
MiniLM, an encoder found on this machine (app.sources' found models: ENCODER_EXPLORER_MODELS and the
local Hugging Face cache), or a model trained or uploaded in this browser session
(app.controls.session_models): for those a sentence says the model's own architecture in
place of the architecture controls (trained weights fit no other), and a model trained on a toy
task reads its task's sequences from the text box. The architecture options beyond the usual
ones (RoPE's base, biases, a local window, an embedding size, shared layers) sit in an expander,
"More architecture choices"."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.controls import model_files, session_models, setup_keys, state, url
from app.i18n import LANGUAGES, N_, _, choose_language, in_every_language, language, told
from app.i18n.catalogue import SOURCE
from app.keys import MAX_HEADS, MAX_LAYERS
from app.settings import (
    ARCHITECTURE_KEYS,
    D_FF_CHOICES,
    D_MODEL_CHOICES,
    LABELS,
    Settings,
    Setup,
    architecture_values,
    say,
    shown,
)
from app.sources import (
    found_checkpoint,
    found_label,
    found_models,
    is_found_source,
    pretrained_config,
    tokenizer,
)
from app.streamlit_private import session_id
from app.user_text import literal
from encoder import EncoderConfig, available_devices
from encoder.core.options import BY_KEY, OPTIONS, ArchOption, config_values, head_counts
from encoder.core.said import said_of
from encoder.io.task_model import TaskModel
from encoder.tasks.task_tokenizer import known_symbols
from encoder.tasks.tasks import example_sequence


def compare_help() -> str:
    return _(
        "Setup B reads the same text. It follows A's controls until you change one of B's, so "
        "a pair differs in what you changed; every view shows A and B side by side, and their "
        "difference where the shapes allow."
    )


# The controls drawn first, in this order; the other options go in "More architecture choices".
FIRST_NAMED = ("activation", "norm_type", "positional")
FIRST_CONTROLS = ("norm", "d_model", "num_heads", "num_layers", "d_ff", *FIRST_NAMED, "seed")


def source_config(source: str) -> EncoderConfig:
    """The architecture of a source other than random weights (a found model: loaded, for every
    session; ValueError saying why it cannot be)."""
    if source == "pretrained":
        return pretrained_config()
    if is_found_source(source):
        return found_checkpoint(source).encoder.cfg
    return session_models.find(source).cfg


def _offered_sources(*extra: str) -> tuple[str, ...]:
    """The sources the Weights control offers: random, MiniLM, the models found on this
    machine that the loaders read (those too large here are offered and refused with a
    sentence), this session's models."""
    found = [source for source, model in found_models().items() if not model.problem]
    return (*setup_keys.SOURCES, *found, *session_models.session_models(), *extra)


def source_names() -> dict[str, str]:
    """How the Weights controls name every source they may offer, in this run's language (a
    dict made as the control is drawn: its format_func is also called after the run)."""
    return {source: shown(label) for source, label in source_labels().items()}


def source_labels() -> dict[str, str]:
    """How the Weights controls name every source they may offer (in English)."""
    models = session_models.session_models()
    return {
        **LABELS,
        **{source: found_label(model) for source, model in found_models().items()},
        **{model_id: model.label for model_id, model in models.items()},
    }


def _task_model(source: str) -> TaskModel | None:
    model = session_models.session_models().get(source)
    return model.task_model if model is not None else None


def _reads(model: TaskModel, text: str) -> bool:
    """True when every line of `text` is a sequence `model` takes (and there is one)."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        for line in lines:
            model.check_text(line)
    except ValueError:
        return False
    return bool(lines)


def select_source(source: str) -> None:
    """Switch the model source (from a callback, or before the sidebar is drawn).

    Any source but random weights puts its architecture into the controls' keys (the link
    carries it; the sidebar says it in a sentence), and the user's own architecture comes back
    with random weights. A model trained on a toy task gets an example of its task in the text
    box (unless the text already suits it), and the user's own text comes back when they leave
    such models. A found model is loaded here; when it cannot be, the page says why and the
    weights are random again.
    """
    if is_found_source(source):
        try:
            source_config(source)
        except ValueError as error:
            _refuse_found(error)
            return
    state.put("source", source)
    if source == "random":
        state.update(state.pop("_saved_architecture") or {})
    else:
        if state.get("_saved_architecture") is None:
            state.put("_saved_architecture", {key: state.get(key) for key in ARCHITECTURE_KEYS})
        state.update(architecture_values(source_config(source)))
    task_model = _task_model(source)
    if task_model is not None:
        if state.get("_saved_text") is None:
            state.put("_saved_text", state.get("text"))
        if not _reads(task_model, state.get("text")):
            state.put("text", example_sequence(task_model.seq_len, task_model.vocab))
    elif state.get("_saved_text") is not None:
        state.put("text", state.pop("_saved_text"))


def _refuse_found(error: ValueError) -> None:
    """A found model could not be loaded: the page says why, and the weights are random."""
    state.put(
        "_source_error",
        _("{error}. The weights are random again.", error=literal(told(error).rstrip("."))),
    )
    select_source("random")


def use_architecture(values: dict[str, object]) -> None:
    """Put architecture widget values into the sidebar, with random weights (a callback, e.g.
    the Training view's suggestion or a training preset)."""
    if state.get("source") != "random":
        select_source("random")
    state.update(values)


def _source_control(notices: list[str]) -> str:
    """The model source: random, MiniLM, a model found on this machine, or one of this
    session's models; then what else was found, and the files."""
    models = session_models.session_models()
    chosen = state.get("source")
    if is_found_source(chosen):
        try:
            source_config(chosen)  # loaded, or loaded again after another page's evicted it
        except ValueError as error:  # gone from the disk, unusable, no room now
            _refuse_found(error)
    elif chosen not in _offered_sources():
        notices.append(
            _(
                "The model that was chosen is not in this browser session any more (a session "
                "keeps the last {count} models trained or uploaded in it, {limit}); back to "
                "random weights.",
                count=session_models.MAX_SESSION_MODELS,
                limit=session_models.kept_limit_text(),
            )
        )
        select_source("random")
    source = st.radio(
        _("Weights"),
        _offered_sources(),
        key="source",
        persist_state="session",
        format_func=source_names().get,
        on_change=lambda: select_source(state.get("source")),
        help=_(
            "Models found on this machine: the checkpoint directories named in "
            "ENCODER_EXPLORER_MODELS and the local Hugging Face cache, with their family, size "
            "and whether they fit in this server's memory."
        ),
    )
    error = state.pop("_source_error")
    if error is not None:
        st.error(error)
    _found_list()
    if models:
        st.caption(
            _(
                "Models trained or uploaded here stay in this browser session only (the last "
                "{count}, {limit}); download one to keep it.",
                count=session_models.MAX_SESSION_MODELS,
                limit=session_models.kept_limit_text(),
            )
        )
    if source in models:
        model_files.download_button(models[source])
    model_files.upload_control(select_source)
    return source


def _found_list() -> None:
    """The models found on this machine that are not offered, each with why."""
    refused = [model for model in found_models().values() if model.problem]
    if not refused:
        return
    with st.expander(_("Found on this machine, not offered ({count})", count=len(refused))):
        st.caption(
            "\n".join(
                f"- {literal(model.name)} ({literal(model.family)}): {literal(told(model.problem))}"
                for model in refused
            )
        )


def _picker(label: str, placeholder: str, items: list[dict], key: str, values) -> None:
    """A selectbox of labelled items; picking one writes `values(item)` into the controls."""

    def apply() -> None:
        for item in items:
            if item["label"] == state.get(key):
                state.update(values(item))

    names = picker_labels()  # made now: the format_func is also called after the run
    st.selectbox(
        label,
        [item["label"] for item in items],
        index=None,
        placeholder=placeholder,
        key=key,
        persist_state="session",
        on_change=apply,
        format_func=lambda label: names.get(label, label),
    )


def picker_labels() -> dict[str, str]:
    """The example sentences' and presets' names (app/assets' examples.json and presets.json),
    as this run's language says them (the sentences themselves stay as they are)."""
    return {
        "Coreference: 'it' = the animal": _("Coreference: 'it' = the animal"),
        "Coreference: 'it' = the street": _("Coreference: 'it' = the street"),
        "Two sentences (padding)": _("Two sentences (padding)"),
        "Ambiguous 'bank'": _("Ambiguous 'bank'"),
        "Agreement across distance": _("Agreement across distance"),
        "Garden path": _("Garden path"),
        "Classroom (pre-norm, 4 layers x 4 heads, d 256)": _(
            "Classroom (pre-norm, 4 layers x 4 heads, d 256)"
        ),
        "Original Transformer base (post-norm, ReLU, 6 x 8, d 512)": _(
            "Original Transformer base (post-norm, ReLU, 6 x 8, d 512)"
        ),
        "Modern pre-norm with RMSNorm (6 x 8, d 512)": _(
            "Modern pre-norm with RMSNorm (6 x 8, d 512)"
        ),
        "Tiny, readable on a projector (2 layers x 2 heads, d 32)": _(
            "Tiny, readable on a projector (2 layers x 2 heads, d 32)"
        ),
        "BERT-base shape (post-norm, 12 x 12, d 768, learned positions)": _(
            "BERT-base shape (post-norm, 12 x 12, d 768, learned positions)"
        ),
    }


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


def describe_b(overrides: dict[str, object]) -> str:
    """Setup B in words: "A with post-norm, 8 heads", or "the same as A"."""
    words = {
        "source": lambda v: source_names().get(v) or _("a model of this session"),
        "ablate": lambda v: _("heads {heads} off", heads=v) if v else _("no head off"),
    }
    if not overrides:
        return _("the same as A (change one of B's controls, or pick a pair)")
    changes = [
        words[name](value) if name in words else say(name, value)
        for name, value in overrides.items()
    ]
    return _("A with {changes}", changes=_(", ").join(changes))


# The activation the pair button gives B: ReLU and GELU swap, GELU's tanh form goes to ReLU,
# the two gated ones swap.
OTHER_ACTIVATION = {
    "relu": "gelu",
    "gelu": "relu",
    "gelu_tanh": "relu",
    "geglu": "swiglu",
    "swiglu": "geglu",
}


def _pairs(a: Setup) -> None:
    """One click to the common pairs: each makes B = A but for one thing."""
    a_values = url.sidebar_values()
    locked = a.source != "random"
    fixed = _("A's trained weights fit only their own architecture") if locked else None
    other = {"pre": "post", "post": "pre"}
    activation = a_values["activation"]
    other_activation = OTHER_ACTIVATION[activation]
    layer, head = state.get("layer"), state.get("head")  # the Attention view's head
    if a.cfg is not None:
        layer, head = min(layer, a.cfg.num_layers - 1), min(head, a.cfg.num_heads - 1)
    st.button(
        _("Pre ↔ post"),
        key="pair_norm",
        on_click=url.set_b,
        args=({"norm": other[a_values["norm"]]},),
        disabled=locked,
        help=fixed or _("B = A with the other norm placement."),
        width="stretch",
    )
    option = BY_KEY["activation"]
    pair = sorted((activation, other_activation), key=option.choices.index)  # "ReLU ↔ GELU"
    st.button(
        _("{first} ↔ {second}", first=option.name(pair[0]), second=option.name(pair[1])),
        key="pair_activation",
        on_click=url.set_b,
        args=({"activation": other_activation},),
        disabled=locked,
        help=fixed or _("B = A with the other activation."),
        width="stretch",
    )
    st.button(
        _("Layer {layer}, head {head} off", layer=layer, head=head),
        key="pair_head_off",
        on_click=url.set_b,
        args=({"ablate": f"{layer}.{head}"},),
        help=_("B = A with the Attention view's chosen head switched off."),
        width="stretch",
    )
    st.button(
        _("Trained ↔ random"),
        key="pair_random",
        on_click=_trained_vs_random,
        help=_(
            "A = trained weights (MiniLM unless A already has trained ones), B = random "
            "weights with the same architecture."
        ),
        width="stretch",
    )


def _trained_vs_random() -> None:
    if state.get("source") == "random":
        select_source("pretrained")
    url.set_b({"source": "random"})


def _device_control(notices: list[str]) -> str:
    devices = available_devices()
    wanted = state.get("device")
    if wanted not in devices:
        notices.append(
            literal(
                _(
                    "Device {device} is not available on this machine (torch sees: {devices}); "
                    "running on cpu.",
                    device=repr(wanted),
                    devices=", ".join(devices),
                )
            )
        )
        state.put("device", "cpu")
    return st.selectbox(_("Device"), devices, key="device", persist_state="session")


def _architecture_summary(cfg: EncoderConfig) -> None:
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


def _architecture_controls(prefix: str, notices: list[str]) -> None:
    """Norm placement, d_model, heads, layers, d_ff, activation, norm type, positions and seed,
    then the other options in an expander (drawn only while it is open), with keys `prefix` +
    A's key (setup B's widgets follow A's values until changed)."""
    follow = {} if not prefix else {"on_change": url.on_b_change}

    def changes(name: str) -> dict:
        return {**follow, "args": (name,)} if follow else {}

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


def english_only_note() -> str:
    """Beside the text box while MiniLM runs and the page speaks another language."""
    return _(
        "MiniLM was trained on English text only. For sentences in your class's language, "
        "load a multilingual encoder from disk (XLM-R or multilingual E5, under Load a "
        "checkpoint)."
    )


def spoken_language() -> str:
    """The language this session's page speaks: the one chosen (the sidebar, the link's
    `lang`), else the browser's if the page has it, else English."""
    if session_id() is None:  # a background thread (a warm run, a measure): shared, English
        return SOURCE
    return choose_language(state.get("lang"), st.context.locale)


def _language_chosen() -> None:
    spoken_before = spoken_language()
    state.put("lang", state.get("_language"))
    state.put_again(spoken_before, spoken_language())  # every choice named again, in the new one


def _language_control() -> None:
    """The page's language, in each language's own name; the link carries it as `lang`."""
    # the choice goes in through the widget's key alone: given as its `index` too, Streamlit
    # warns that the key has a default value and a Session State value
    spoken = spoken_language()
    state.put("_language", spoken if spoken in LANGUAGES else SOURCE)
    st.selectbox(
        in_every_language(N_("Language")),
        list(LANGUAGES),
        format_func=LANGUAGES.get,
        key="_language",
        on_change=_language_chosen,
    )


def _presenter_control() -> None:
    """Presenter mode on every view (the link's present=1), last: the controls above stay where
    they were (the lesson's own button also switches it on)."""
    st.toggle(
        _("Presenter"),
        key="present",
        persist_state="session",
        help=_(
            "Large type on every view, with the sidebar and the views folded away, for a "
            "projector. In the link as present=1."
        ),
    )


def render(notices: list[str]) -> Settings:
    """Draw every control and return what they say."""
    source = state.get("source")
    if source != "random" and state.get("_saved_architecture") is None:
        select_source(source)  # e.g. a link that names MiniLM: show its architecture
    with st.sidebar:
        _language_control()
        st.header(_("Input"))
        input_area = st.container()  # drawn after the source control, which may change the text
        st.header(_("Model"))
        source = _source_control(notices)
        with input_area:
            text = _text_control(_task_model(source))
            if source == "pretrained" and language() != SOURCE:
                st.caption(english_only_note())
        if source != "random":
            _architecture_summary(source_config(source))
        else:
            _picker(
                _("Preset"),
                _("Start from a preset…"),
                setup_keys.ARCHITECTURE_PRESETS,
                "preset",
                lambda preset: preset["settings"],
            )
            _architecture_controls("", notices)
        device = _device_control(notices)
        st.toggle(
            _("Show timings"),
            key="timing",
            persist_state="session",
            help=_(
                "A line under each view for developers: the device, the run's sizes, the "
                "traced forward pass's time and the page's (the link's timing=1)."
            ),
        )
        a = Setup(source, *_config(source, url.sidebar_values()))
        st.header(_("Compare"))
        if st.toggle(
            _("Compare with a second setup"),
            key="compare",
            persist_state="session",
            help=compare_help(),
        ):
            a = replace(a, heads_off=_heads_off_control(""))
            b = _setup_b(a, notices)
        else:
            b = None
        st.divider()
        _presenter_control()
    return Settings(text, device, notices, a=a, b=b)


def _config(source: str, values: dict[str, object], like: EncoderConfig | None = None):
    """(config, error) of a source with these values: a trained model's own config, or random
    weights with these architecture values (on `like`'s other fields, when given)."""
    if source != "random":
        return source_config(source), ""
    try:
        return random_config(values, like), ""
    except ValueError as error:
        return None, said_of(error)  # told where it is shown


def _heads_off_control(prefix: str) -> str:
    name = "B" if prefix else "A"
    return st.text_input(
        _("Heads switched off in {name}, as layer.head", name=name),
        key=prefix + "ablate",
        placeholder=_("e.g. {example}", example="0.2,1.8"),
        persist_state="session",
        help=_("Setup {name}'s run zeroes these heads' output before W_O.", name=name),
        **({"on_change": url.on_b_change, "args": ("ablate",)} if prefix else {}),
    )


def _setup_b(a: Setup, notices: list[str]) -> Setup:
    """Setup B: one-click pairs, then every control A has (keys b_...), following A's values
    until changed."""
    st.caption(_("Setup B: {setup}.", setup=describe_b(url.b_overrides())))
    _pairs(a)
    url.show_setup_b()
    with st.expander(_("Setup B's controls"), expanded=bool(url.b_overrides())):
        sources = _offered_sources(state.get("source"))  # A's, even a refused found model
        problem = _b_source_problem(sources)
        if problem:
            notices.append(problem)
            url.b_overrides().pop("source", None)
            url.show_setup_b()
        source = st.radio(
            _("Weights (B)"),
            tuple(dict.fromkeys(sources)),
            key="b_source",
            persist_state="session",
            format_func=source_names().get,
            on_change=url.on_b_change,
            args=("source",),
        )
        if source != "random":  # B's keys hold its model's own architecture
            cfg = source_config(source)
            state.update({setup_keys.b_key(k): v for k, v in architecture_values(cfg).items()})
            _architecture_summary(cfg)
        else:
            _architecture_controls(setup_keys.B_PREFIX, notices)
        heads_off = _heads_off_control(setup_keys.B_PREFIX)
    cfg, error = _config(source, url.sidebar_values(setup_keys.B_PREFIX), like=a.cfg)
    return Setup(source, cfg, error, heads_off)


def _b_source_problem(sources: tuple[str, ...]) -> str:
    """Why setup B's model cannot be used now ("" when it can)."""
    b_source = state.get("b_source")
    if is_found_source(b_source):
        try:
            source_config(b_source)
        except ValueError as error:
            return _(
                "Setup B's model: {error}. B uses A's.", error=literal(told(error).rstrip("."))
            )
        return ""
    if b_source not in sources:
        return _("Setup B's model is not in this session any more; B uses A's.")
    return ""


def _text_control(task_model: TaskModel | None) -> str:
    """The text box (with example sentences, or for a task model, what its sequences are)."""
    if task_model is None:
        _picker(
            _("Example sentences"),
            _("Pick an example…"),
            setup_keys.EXAMPLES,
            "example",
            lambda example: {"text": example["text"]},
        )
        return st.text_area(
            _("Sentences (one per line)"),
            key="text",
            persist_state="session",
            height=120,
            help=_("Each line is one sentence."),
        )
    symbols = known_symbols(task_model.tokenizer)
    example = example_sequence(task_model.seq_len, task_model.vocab)
    st.caption(
        _(
            "This model was trained on the {task} task: it reads sequences of exactly {length} "
            "symbols from {first} to {last}, separated by spaces, such as {example}.",
            task=task_model.task,
            length=task_model.seq_len,
            first=symbols[0],
            last=symbols[-1],
            example=example,
        )
    )
    return st.text_area(
        _("Sequences (one per line)"),
        key="text",
        persist_state="session",
        height=120,
        help=_("Each line is one sequence."),
    )


def random_config(values: dict[str, object], like: EncoderConfig | None = None) -> EncoderConfig:
    """The EncoderConfig the sidebar's values describe, with random weights: `like` with these
    architecture values and seed (e.g. setup A's, so that B keeps what the controls do not
    show, such as MiniLM's embedding norm), or by default MiniLM's vocabulary. An option the
    values do not name keeps its default."""
    architecture = config_values({key: values[key] for key in ARCHITECTURE_KEYS if key in values})
    if like is not None:
        return replace(like, **architecture, seed=int(values["seed"]))
    return EncoderConfig(
        vocab_size=tokenizer().get_vocab_size(), seed=int(values["seed"]), **architecture
    )
