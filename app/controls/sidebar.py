"""The sidebar: the input text, the model source and its architecture, the device, timings.

Every control is a widget whose key is declared in app.controls.setup_keys (and is a URL
parameter, app.controls.url). What cannot be used (a head count that does not divide d_model, a
device this machine lacks, a model that left the session) is replaced by a sound value and reported
in `Settings.notices`, never raised.

The model source (app.controls.source_picker) is random weights, described by the architecture
controls (app.controls.architecture), or a trained model, whose own architecture a sentence says
in place of the controls (trained weights fit no other)."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from app.controls import setup_keys, state, url
from app.controls.architecture import architecture_controls, architecture_summary
from app.controls.source_picker import (
    b_source_control,
    select_source,
    session_task_model,
    source_config,
    source_control,
    source_names,
)
from app.i18n import LANGUAGES, N_, _, choose_language, in_every_language, language, quoted
from app.i18n.catalogue import SOURCE
from app.settings import ARCHITECTURE_KEYS, Settings, Setup, architecture_values, say
from app.sources import tokenizer
from app.streamlit_private import session_id
from app.user_text import literal
from encoder import EncoderConfig, available_devices
from encoder.core.options import BY_KEY, config_values
from encoder.core.said import said_of
from encoder.io.task_model import TaskModel
from encoder.tasks.masked import FIRST_WORD
from encoder.tasks.task_tokenizer import known_symbols


def compare_help() -> str:
    return _(
        "Setup B reads the same text. It follows A's controls until you change one of B's, so "
        "a pair differs in what you changed; every view shows A and B side by side, and their "
        "difference where the shapes allow."
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


# The example sentences' and presets' names (app/assets' examples.json and presets.json), marked
# for the catalogue (the sentences themselves stay as they are)
PICKER_NAMES = (
    N_("Coreference: 'it' = the animal"),
    N_("Coreference: 'it' = the street"),
    N_("Two sentences (padding)"),
    N_("Ambiguous 'bank'"),
    N_("Agreement across distance"),
    N_("Garden path"),
    N_("Classroom (pre-norm, 4 layers x 4 heads, d 256)"),
    N_("Original Transformer base (post-norm, ReLU, 6 x 8, d 512)"),
    N_("Modern pre-norm with RMSNorm (6 x 8, d 512)"),
    N_("Tiny, readable on a projector (2 layers x 2 heads, d 32)"),
    N_("BERT-base shape (post-norm, 12 x 12, d 768, learned positions)"),
)


def picker_labels() -> dict[str, str]:
    """The example sentences' and presets' names, as this run's language says them."""
    return {name: _(name) for name in PICKER_NAMES}


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
        source = source_control(notices)
        with input_area:
            text = _text_control(session_task_model(source))
            if source == "pretrained" and language() != SOURCE:
                st.caption(english_only_note())
        if source != "random":
            architecture_summary(source_config(source))
        else:
            _picker(
                _("Preset"),
                _("Start from a preset…"),
                setup_keys.ARCHITECTURE_PRESETS,
                "preset",
                lambda preset: preset["settings"],
            )
            architecture_controls("", notices)
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
        source = b_source_control(notices)
        if source != "random":  # B's keys hold its model's own architecture
            cfg = source_config(source)
            state.update({setup_keys.b_key(k): v for k, v in architecture_values(cfg).items()})
            architecture_summary(cfg)
        else:
            architecture_controls(setup_keys.B_PREFIX, notices)
        heads_off = _heads_off_control(setup_keys.B_PREFIX)
    cfg, error = _config(source, url.sidebar_values(setup_keys.B_PREFIX), like=a.cfg)
    return Setup(source, cfg, error, heads_off)


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
    if task_model.mlm_head is not None:
        st.caption(
            _(
                "This model was trained on the {task} task: it reads lower-case words of the "
                "bundled corpus ({count} words; any other word reads as [UNK]), at most {length} "
                "tokens with [CLS] and [SEP]. Type [MASK] where a word is hidden, such as "
                "{example}",  # (a quoted sentence: its own full stop)
                task=task_model.task,
                count=task_model.vocab - FIRST_WORD,
                length=task_model.seq_len,
                example=quoted(task_model.example),
            )
        )
        label, help_text = _("Sentences (one per line)"), _("Each line is one sentence.")
    else:
        symbols = known_symbols(task_model.tokenizer)
        st.caption(
            _(
                "This model was trained on the {task} task: it reads sequences of exactly "
                "{length} symbols from {first} to {last}, separated by spaces, such as {example}.",
                task=task_model.task,
                length=task_model.seq_len,
                first=symbols[0],
                last=symbols[-1],
                example=task_model.example,
            )
        )
        label, help_text = _("Sequences (one per line)"), _("Each line is one sequence.")
    return st.text_area(label, key="text", persist_state="session", height=120, help=help_text)


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
