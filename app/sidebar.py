"""The sidebar: the input text, the model source and its architecture, the device.

Every control is a widget whose key is registered in app.state (and is a URL parameter there).
What cannot be used (a head count that does not divide d_model, a device this machine lacks, a
model that left the session) is replaced by a sound value and reported in `Settings.notices`,
never raised.

The model source is random weights (the architecture controls describe the model), the bundled
MiniLM, or a model trained or uploaded in this browser session (app.session_models): for those
the architecture controls show the model's own architecture, locked, and a model trained on a toy
task reads its task's sequences from the text box.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from app import model_files, session_models, state
from app.runs import pretrained_config, tokenizer
from app.user_text import literal
from encoder import EncoderConfig, available_devices
from encoder.core.config import (
    ACTIVATION_NAMES,
    ACTIVATIONS,
    ARCHITECTURE_FIELDS,
    NORM_PLACEMENTS,
    NORM_TYPE_NAMES,
    NORM_TYPES,
    POSITIONALS,
    head_counts,
    norm_first_of,
)
from encoder.io.task_model import TaskModel
from encoder.train.task_tokenizer import known_symbols
from encoder.train.tasks import example_sequence

D_MODEL_CHOICES = [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
D_FF_CHOICES = [64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192]
LABELS = {
    "random": "Random weights, my architecture",
    "pretrained": "Pretrained MiniLM (all-MiniLM-L6-v2)",
    "pre": "Pre-norm: x + f(LN(x))",
    "post": "Post-norm: LN(x + f(x))",
    **ACTIVATION_NAMES,
    **NORM_TYPE_NAMES,
    "sinusoidal": "Sinusoidal",
    "learned": "Learned",
}


@dataclass
class Settings:
    """What the sidebar says for this run."""

    text: str
    source: str
    cfg: EncoderConfig | None  # None: the architecture is impossible; `error` says why
    device: str
    error: str = ""
    notices: list[str] = field(default_factory=list)


def source_config(source: str) -> EncoderConfig:
    """The architecture of a source other than random weights."""
    if source == "pretrained":
        return pretrained_config()
    return session_models.find(source).cfg


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

    Any source but random weights shows its architecture in the (locked) controls, and the
    user's own architecture comes back with random weights. A model trained on a toy task gets
    an example of its task in the text box (unless the text already suits it), and the user's
    own text comes back when they leave such models.
    """
    state.put("source", source)
    if source == "random":
        state.update(state.pop("_saved_architecture") or {})
    else:
        if state.get("_saved_architecture") is None:
            state.put(
                "_saved_architecture", {key: state.get(key) for key in state.ARCHITECTURE_KEYS}
            )
        state.update(state.architecture_values(source_config(source)))
    task_model = _task_model(source)
    if task_model is not None:
        if state.get("_saved_text") is None:
            state.put("_saved_text", state.get("text"))
        if not _reads(task_model, state.get("text")):
            state.put("text", example_sequence(task_model.seq_len, task_model.vocab))
    elif state.get("_saved_text") is not None:
        state.put("text", state.pop("_saved_text"))


def use_architecture(values: dict[str, object]) -> None:
    """Put architecture widget values into the sidebar, with random weights (a callback, e.g.
    the Training view's suggestion or a training preset)."""
    if state.get("source") != "random":
        select_source("random")
    state.update(values)


def _source_control(notices: list[str]) -> str:
    """The model source: random, MiniLM, or one of this session's models; then its files."""
    models = session_models.session_models()
    if state.get("source") not in (*state.SOURCES, *models):
        notices.append(
            "The model that was chosen is not in this browser session any more (a session "
            f"keeps the last {session_models.MAX_SESSION_MODELS} models trained or uploaded in "
            "it); back to random weights."
        )
        select_source("random")
    labels = {**LABELS, **{model_id: model.label for model_id, model in models.items()}}
    source = st.radio(
        "Weights",
        (*state.SOURCES, *models),
        key="source",
        format_func=labels.get,
        on_change=lambda: select_source(state.get("source")),
    )
    if models:
        st.caption(
            f"Models trained or uploaded here stay in this browser session only (the last "
            f"{session_models.MAX_SESSION_MODELS}); download one to keep it."
        )
    if source in models:
        model_files.download_button(models[source])
    model_files.upload_control(select_source)
    return source


def _picker(label: str, placeholder: str, items: list[dict], key: str, values) -> None:
    """A selectbox of labelled items; picking one writes `values(item)` into the controls."""

    def apply() -> None:
        for item in items:
            if item["label"] == state.get(key):
                state.update(values(item))

    st.selectbox(
        label,
        [item["label"] for item in items],
        index=None,
        placeholder=placeholder,
        key=key,
        on_change=apply,
    )


def _with_value(choices: list[int], value: int) -> list[int]:
    """The fixed choices plus the current value (e.g. from a link), sorted."""
    return sorted(set(choices) | {value})


def _heads_control(d_model: int, locked: bool, notices: list[str]) -> None:
    options = head_counts(d_model, state.MAX_HEADS)
    wanted = state.get("num_heads")
    if wanted not in options:
        nearest = min(options, key=lambda h: (abs(h - wanted), h))
        notices.append(
            f"num_heads={wanted} does not divide d_model={d_model} (each head gets "
            f"d_model / num_heads dimensions), so {nearest} heads are used instead."
        )
        state.put("num_heads", nearest)
    st.selectbox(
        "Heads (divisors of d_model)",
        options,
        key="num_heads",
        disabled=locked,
        help="Only divisors of d_model are offered: each head gets d_model / heads dimensions.",
    )


def _device_control(notices: list[str]) -> str:
    devices = available_devices()
    wanted = state.get("device")
    if wanted not in devices:
        notices.append(
            literal(
                f"Device {wanted!r} is not available on this machine (torch sees: "
                f"{', '.join(devices)}); running on cpu."
            )
        )
        state.put("device", "cpu")
    return st.selectbox("Device", devices, key="device")


def render(notices: list[str]) -> Settings:
    """Draw every control and return what they say."""
    if state.get("source") == "pretrained" and state.get("_saved_architecture") is None:
        select_source("pretrained")  # e.g. a link that names MiniLM: show its architecture
    with st.sidebar:
        st.header("Input")
        input_area = st.container()  # drawn after the source control, which may change the text
        st.header("Model")
        source = _source_control(notices)
        with input_area:
            text = _text_control(_task_model(source))
        locked = source != "random"
        if locked:
            st.caption(
                "The architecture controls show this model's values and are locked: trained "
                "weights only fit the architecture they were trained with."
            )
        else:
            _picker(
                "Preset",
                "Start from a preset…",
                state.ARCHITECTURE_PRESETS,
                "preset",
                lambda preset: preset["settings"],
            )
        st.radio(
            "Norm placement", NORM_PLACEMENTS, key="norm", format_func=LABELS.get, disabled=locked
        )
        d_model = st.select_slider(
            "d_model",
            _with_value(D_MODEL_CHOICES, state.get("d_model")),
            key="d_model",
            disabled=locked,
        )
        _heads_control(d_model, locked, notices)
        layers = max(state.SLIDER_MAX_LAYERS, state.get("num_layers"))  # an upload may have more
        st.slider("Layers", 1, layers, key="num_layers", disabled=locked)
        st.select_slider(
            "d_ff (feed-forward width)",
            _with_value(D_FF_CHOICES, state.get("d_ff")),
            key="d_ff",
            disabled=locked,
        )
        for label, key, choices in (
            ("Activation", "activation", ACTIVATIONS),
            ("Norm type", "norm_type", NORM_TYPES),
            ("Positions", "positional", POSITIONALS),
        ):
            st.radio(
                label, choices, key=key, format_func=LABELS.get, horizontal=True, disabled=locked
            )
        st.number_input("Seed", 0, 2**31 - 1, key="seed", disabled=locked)
        device = _device_control(notices)

    settings = Settings(text=text, source=source, cfg=None, device=device, notices=notices)
    if locked:
        settings.cfg = source_config(source)
    else:
        try:
            settings.cfg = random_config(state.sidebar_values())
        except ValueError as error:
            settings.error = str(error)
    return settings


def _text_control(task_model: TaskModel | None) -> str:
    """The text box (with example sentences, or for a task model, what its sequences are)."""
    if task_model is None:
        _picker(
            "Example sentences",
            "Pick an example…",
            state.EXAMPLES,
            "example",
            lambda example: {"text": example["text"]},
        )
        return st.text_area(
            "Sentences (one per line)", key="text", height=120, help="Each line is one sentence."
        )
    symbols = known_symbols(task_model.tokenizer)
    example = example_sequence(task_model.seq_len, task_model.vocab)
    st.caption(
        f"This model was trained on the {task_model.task} task: it reads sequences of exactly "
        f"{task_model.seq_len} symbols from {symbols[0]} to {symbols[-1]}, separated by spaces, "
        f"such as {example}."
    )
    return st.text_area(
        "Sequences (one per line)", key="text", height=120, help="Each line is one sequence."
    )


def random_config(values: dict[str, object]) -> EncoderConfig:
    """The EncoderConfig the sidebar's values describe (random weights, MiniLM's vocabulary)."""
    architecture = {field: values[state.architecture_key(field)] for field in ARCHITECTURE_FIELDS}
    architecture["norm_first"] = norm_first_of(values["norm"])
    return EncoderConfig(
        vocab_size=tokenizer().get_vocab_size(), seed=int(values["seed"]), **architecture
    )
