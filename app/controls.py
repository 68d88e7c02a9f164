"""Sidebar controls, their defaults, and the URL that mirrors them.

Every control is a widget whose key is also its URL query parameter, so a copied link reopens the
exact setup. Values arriving from a URL are parsed and checked here; what cannot be used is
replaced by a sound value and reported in `Settings.notices`, never raised.

The model source is random weights (the architecture controls describe the model), the bundled
MiniLM, or a model trained or uploaded in this browser session (app.session_models): for those
the architecture controls show the model's own architecture, locked, and a model trained on a toy
task reads its task's sequences from the text box.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from app import model_files, session_models
from app.markdown import literal
from encoder import EncoderConfig, available_devices
from encoder.config import (
    ACTIVATIONS,
    NORM_PLACEMENTS,
    NORM_TYPES,
    POSITIONALS,
    norm_first_of,
    placement_of,
)
from encoder.task_model import TaskModel
from encoder.task_tokenizer import known_symbols
from encoder.tasks import example_sequence

ASSETS = Path(__file__).resolve().parent / "assets"
EXAMPLES: list[dict] = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
PRESETS: list[dict] = json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))

VIEWS = [
    "Tokens",
    "Attention",
    "Attention steps",
    "LayerNorm",
    "Activations",
    "Shapes",
    "Export",
    "Training",
]
D_MODEL_CHOICES = [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
D_FF_CHOICES = [64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192]
MAX_LAYERS = 24
MAX_HEADS = 64
MAX_URL_TEXT = 2000  # characters of text carried in the link
MAX_TOKENS = 512  # positions per sentence (the models' max_len)

# architecture widget key -> EncoderConfig field (the same names, but for the norm placement,
# whose widget says "pre" / "post")
ARCHITECTURE_FIELDS = {
    "norm": "norm_first",
    "d_model": "d_model",
    "num_heads": "num_heads",
    "num_layers": "num_layers",
    "d_ff": "d_ff",
    "activation": "activation",
    "norm_type": "norm_type",
    "positional": "positional",
}


def architecture_widget_values(cfg: EncoderConfig) -> dict[str, object]:
    """The architecture widgets' values that show `cfg` (keys of ARCHITECTURE_FIELDS)."""
    values = {key: getattr(cfg, name) for key, name in ARCHITECTURE_FIELDS.items()}
    values["norm"] = placement_of(cfg.norm_first)
    return values


DEFAULTS: dict[str, object] = {
    "text": EXAMPLES[0]["text"],
    "source": "random",
    **architecture_widget_values(EncoderConfig()),
    "seed": EncoderConfig().seed,
    "device": "cpu",
    "view": "Attention",
    "step_layer": 0,
    "step_head": 0,
    "step_query": 0,
    "ablate": "",
}
CHOICES: dict[str, tuple] = {
    "source": ("random", "pretrained"),
    "norm": NORM_PLACEMENTS,
    "activation": ACTIVATIONS,
    "norm_type": NORM_TYPES,
    "positional": POSITIONALS,
    "view": tuple(VIEWS),
}
INT_RANGES: dict[str, tuple[int, int]] = {
    "d_model": (2, 4096),
    "num_heads": (1, 4096),
    "num_layers": (1, MAX_LAYERS),
    "d_ff": (1, 16384),
    "seed": (0, 2**31 - 1),
    "step_layer": (0, MAX_LAYERS - 1),
    "step_head": (0, MAX_HEADS - 1),
    "step_query": (0, MAX_TOKENS - 1),
}
LABELS = {
    "random": "Random weights, my architecture",
    "pretrained": "Pretrained MiniLM (all-MiniLM-L6-v2)",
    "pre": "Pre-norm: x + f(LN(x))",
    "post": "Post-norm: LN(x + f(x))",
    "relu": "ReLU",
    "gelu": "GELU",
    "layernorm": "LayerNorm",
    "rmsnorm": "RMSNorm",
    "sinusoidal": "Sinusoidal",
    "learned": "Learned",
}


@dataclass
class Settings:
    """What the controls say for this run."""

    text: str
    source: str
    cfg: EncoderConfig | None  # None: the architecture is impossible; `error` says why
    device: str
    error: str = ""
    notices: list[str] = field(default_factory=list)


def divisors(n: int) -> list[int]:
    return [h for h in range(1, min(n, MAX_HEADS) + 1) if n % h == 0]


def _parse(key: str, raw: str) -> object:
    """One URL value, checked; ValueError with a sentence for the page when it cannot be used."""
    if key in CHOICES:
        if raw not in CHOICES[key]:
            raise ValueError(f"{key}={raw!r} is not one of {', '.join(CHOICES[key])}")
        return raw
    if key in INT_RANGES:
        low, high = INT_RANGES[key]
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"{key}={raw!r} is not a whole number") from None
        if not low <= value <= high:
            raise ValueError(f"{key}={value} is outside {low}..{high}")
        return value
    return raw  # text, device: checked where they are used


def load_query_params(notices: list[str]) -> None:
    """On a session's first run, put the URL's values into the widgets' state."""
    if st.session_state.get("_url_loaded"):
        return
    st.session_state["_url_loaded"] = True
    for key, default in DEFAULTS.items():
        st.session_state.setdefault(key, default)
    for key in DEFAULTS:
        if key not in st.query_params:
            continue
        raw = st.query_params[key]
        if key == "source" and session_models.is_session_source(raw):
            notices.append(
                "The link names a model trained or uploaded in another browser session; such "
                "models stay in their session (download it there, upload it here). Using random "
                "weights with the link's architecture."
            )
            continue
        try:
            st.session_state[key] = _parse(key, raw)
        except ValueError as error:
            notices.append(literal(f"The link's {error}; using {key}={DEFAULTS[key]!r} instead."))
    if st.session_state["source"] == "pretrained":
        select_source("pretrained")


def sync_query_params(settings: Settings) -> None:
    """Keep the URL in step with the controls (text only while it fits in a link)."""
    params = {key: str(st.session_state[key]) for key in DEFAULTS if key != "text"}
    if len(settings.text) <= MAX_URL_TEXT:
        params["text"] = settings.text
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def _pretrained_config() -> EncoderConfig:
    from app.runs import pretrained_config  # cached; imported here to keep this module light

    return pretrained_config()


def source_config(source: str) -> EncoderConfig:
    """The architecture of a source other than random weights."""
    if source == "pretrained":
        return _pretrained_config()
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
    state = st.session_state
    state["source"] = source
    if source == "random":
        state.update(state.pop("_saved_architecture", {}))
    else:
        state.setdefault("_saved_architecture", {key: state[key] for key in ARCHITECTURE_FIELDS})
        state.update(architecture_widget_values(source_config(source)))
    task_model = _task_model(source)
    if task_model is not None:
        state.setdefault("_saved_text", state["text"])
        if not _reads(task_model, state["text"]):
            state["text"] = example_sequence(task_model.seq_len, task_model.vocab)
    elif "_saved_text" in state:
        state["text"] = state.pop("_saved_text")


def use_architecture(values: dict[str, object]) -> None:
    """Put architecture widget values (keys of ARCHITECTURE_FIELDS) into the sidebar, with
    random weights (a callback, e.g. the Training view's suggestion)."""
    if st.session_state["source"] != "random":
        select_source("random")
    st.session_state.update(values)


def _on_source_change() -> None:
    select_source(st.session_state["source"])


def _source_control(notices: list[str]) -> str:
    """The model source: random, MiniLM, or one of this session's models; then its files."""
    models = session_models.session_models()
    if st.session_state["source"] not in (*CHOICES["source"], *models):
        notices.append(
            "The model that was chosen is not in this browser session any more (a session "
            f"keeps the last {session_models.MAX_SESSION_MODELS} models trained or uploaded in "
            "it); back to random weights."
        )
        select_source("random")
    labels = {**LABELS, **{model_id: model.label for model_id, model in models.items()}}
    source = st.radio(
        "Weights",
        (*CHOICES["source"], *models),
        key="source",
        format_func=labels.get,
        on_change=_on_source_change,
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
            if item["label"] == st.session_state[key]:
                st.session_state.update(values(item))

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
    options = divisors(d_model)
    wanted = st.session_state["num_heads"]
    if wanted not in options:
        nearest = min(options, key=lambda h: (abs(h - wanted), h))
        notices.append(
            f"num_heads={wanted} does not divide d_model={d_model} (each head gets "
            f"d_model / num_heads dimensions), so {nearest} heads are used instead."
        )
        st.session_state["num_heads"] = nearest
    st.selectbox(
        "Heads (divisors of d_model)",
        options,
        key="num_heads",
        disabled=locked,
        help="Only divisors of d_model are offered: each head gets d_model / heads dimensions.",
    )


def _device_control(notices: list[str]) -> str:
    devices = available_devices()
    wanted = st.session_state["device"]
    if wanted not in devices:
        notices.append(
            literal(
                f"Device {wanted!r} is not available on this machine (torch sees: "
                f"{', '.join(devices)}); running on cpu."
            )
        )
        st.session_state["device"] = "cpu"
    return st.selectbox("Device", devices, key="device")


def render_sidebar() -> Settings:
    """Draw every control and return what they say."""
    notices: list[str] = []
    load_query_params(notices)
    sidebar = st.sidebar
    with sidebar:
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
                PRESETS,
                "preset",
                lambda preset: preset["settings"],
            )
        st.radio(
            "Norm placement", CHOICES["norm"], key="norm", format_func=LABELS.get, disabled=locked
        )
        d_model = st.select_slider(
            "d_model",
            _with_value(D_MODEL_CHOICES, st.session_state["d_model"]),
            key="d_model",
            disabled=locked,
        )
        _heads_control(d_model, locked, notices)
        layers = max(MAX_LAYERS, st.session_state["num_layers"])  # an upload may have more
        st.slider("Layers", 1, layers, key="num_layers", disabled=locked)
        st.select_slider(
            "d_ff (feed-forward width)",
            _with_value(D_FF_CHOICES, st.session_state["d_ff"]),
            key="d_ff",
            disabled=locked,
        )
        for label, key in (
            ("Activation", "activation"),
            ("Norm type", "norm_type"),
            ("Positions", "positional"),
        ):
            st.radio(
                label,
                CHOICES[key],
                key=key,
                format_func=LABELS.get,
                horizontal=True,
                disabled=locked,
            )
        st.number_input("Seed", 0, 2**31 - 1, key="seed", disabled=locked)
        device = _device_control(notices)

    settings = Settings(text=text, source=source, cfg=None, device=device, notices=notices)
    if locked:
        settings.cfg = source_config(source)
    else:
        try:
            settings.cfg = random_config(dict(st.session_state))
        except ValueError as error:
            settings.error = str(error)
    return settings


def _text_control(task_model: TaskModel | None) -> str:
    """The text box (with example sentences, or for a task model, what its sequences are)."""
    if task_model is None:
        _picker(
            "Example sentences",
            "Pick an example…",
            EXAMPLES,
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


def random_config(state: dict) -> EncoderConfig:
    """The EncoderConfig the controls describe (random weights, MiniLM's vocabulary)."""
    from app.runs import tokenizer  # cached

    architecture = {name: state[key] for key, name in ARCHITECTURE_FIELDS.items()}
    architecture["norm_first"] = norm_first_of(state["norm"])
    return EncoderConfig(
        vocab_size=tokenizer().get_vocab_size(), seed=int(state["seed"]), **architecture
    )
