"""The session's state: every key, its default, its URL parameter, how a URL value is parsed and
checked, and which keys survive a visit to another view. The only module that touches
`st.session_state`.

Widgets elsewhere carry keys registered here (a key is the widget's identity), but their values
reach the code through the widgets' return values, or through the `Selection` and `Settings` this
module hands out. A link reopens the exact setup: the keys marked `in_url` are the page's URL
parameters, read once when a session starts and kept in step with the controls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import streamlit as st

from app.lesson.steps import STEPS
from app.settings import (
    LESSON_RULE_QUERY,
    SELECTION_KEYS,
    Selection,
)
from app.sources import BUILT_IN
from app.user_text import literal
from encoder import EncoderConfig
from encoder.core.options import BY_KEY, OPTIONS, key_values, parse_value
from encoder.exercises.by_hand import MAX_SET, QUESTION_KEYS
from encoder.train.jobs import DEFAULT_DROPOUT_RATE
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainConfig

ASSETS = Path(__file__).resolve().parent.parent / "assets"
EXAMPLES: list[dict] = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
ARCHITECTURE_PRESETS: list[dict] = json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))

FIRST_VIEW = "Attention"  # the view a link opens when it names none (app.views.VIEWS lists all)
LESSON_VIEW = "Lesson"
LESSON_STEPS = len(STEPS)  # app.lesson.steps' steps
# A page opened with no settings (no URL parameters, or only the lesson's own) starts the lesson
# on the pretrained model; a link that names any setting opens exactly those, the rest at their
# defaults (random weights, the Attention view).
FIRST_VISIT = {"view": LESSON_VIEW, "source": "pretrained"}
LESSON_URL_KEYS = ("lesson", "lesson_query", "present", "class")  # a student link: the Lesson
SOURCES = BUILT_IN  # and the ids of models trained or uploaded in this session
SLIDER_MAX_LAYERS = BY_KEY["num_layers"].bounds[1]  # the layer slider (a checkpoint may have more)
MAX_HEADS = 64  # head counts the sidebar offers
MAX_TOKENS = 512  # positions per sentence (the models' max_len)
MAX_URL_TEXT = 2000  # characters of text carried in the link
# The Exercises view's widget keys per question: the answer typed, and "Show me".
EXERCISE_ANSWER_KEYS = tuple(f"ex_{question}" for question in QUESTION_KEYS)
EXERCISE_SHOW_KEYS = tuple(f"ex_show_{question}" for question in QUESTION_KEYS)


# Training widget key -> the TrainConfig field it sets.
TRAINING_FIELDS = {
    "train_task": "task",
    "train_seq_len": "seq_len",
    "train_steps": "steps",
    "train_lr": "lr",
    "train_warmup": "warmup_steps",
    "train_batch": "batch_size",
    "train_seed": "seed",
    "train_checkpoint": "checkpoint_blocks",
}


@dataclass(frozen=True)
class Key:
    """One session key. in_url: a URL parameter of the same name; persistent: a view's widget
    whose value survives a visit to another view; choices / bounds: what a URL value may be (a
    key whose default is True or False is a switch, 1 or 0 in the URL); follows: setup B's key
    that takes the value of setup A's key of that name unless B overrides it."""

    name: str
    default: object = None
    in_url: bool = False
    persistent: bool = False
    choices: tuple = ()
    bounds: tuple[int, int] | None = None
    follows: str | None = None

    def parse(self, raw: str) -> object:
        """A URL value, checked; ValueError with a sentence for the page when it cannot be used."""
        if isinstance(self.default, bool):  # a switch: 1 / 0 (true / false)
            if raw.lower() not in ("1", "0", "true", "false"):
                raise ValueError(f"{self.name}={raw!r} is not 1 (on) or 0 (off)")
            return raw.lower() in ("1", "true")
        # text, device, heads to switch off: returned as they are, checked where they are used
        return parse_value(self.name, raw, self.choices, self.bounds)


_DEFAULTS = key_values(EncoderConfig())
_TRAINING = TrainConfig()
SETUP_A_KEYS: tuple[Key, ...] = (  # what a setup is: its source, architecture, seed, heads off
    Key("source", "random", in_url=True, choices=SOURCES),
    *(  # every architecture option and the seed, from encoder.core.options' table
        Key(
            option.key,
            _DEFAULTS[option.key],
            in_url=True,
            choices=option.choices if option.named else (),
            bounds=option.bounds,
        )
        for option in OPTIONS
    ),
    Key("ablate", "", in_url=True, persistent=True),  # the Attention view's, in single mode
)
SETUP_KEYS = tuple(key.name for key in SETUP_A_KEYS)
B_PREFIX = "b_"


def b_key(name: str) -> str:
    """Setup B's key for setup A's key `name` ("b_norm" for "norm")."""
    return B_PREFIX + name


KEYS: tuple[Key, ...] = (
    # the sidebar: input, setup A, device (in the link)
    Key("text", EXAMPLES[0]["text"], in_url=True),
    *SETUP_A_KEYS,
    Key("device", "cpu", in_url=True),
    # setup B: on or off, and each of A's keys (absent: it follows A)
    Key("compare", False, in_url=True),
    *(
        replace(key, name=b_key(key.name), default=None, persistent=False, follows=key.name)
        for key in SETUP_A_KEYS
    ),
    Key("view", FIRST_VIEW, in_url=True),  # one of app.views.VIEWS, checked by start_page
    # what the views select (Selection's fields); in the link where a view opens on them (the
    # lesson's "Open in" buttons open each view at its step's selection)
    Key("sentence", 0, persistent=True),
    Key("layer", 0, in_url=True, persistent=True, bounds=(0, SLIDER_MAX_LAYERS - 1)),
    Key("head", 0, in_url=True, persistent=True, bounds=(0, MAX_HEADS - 1)),
    Key("stretch", False, persistent=True),
    Key("explorer"),  # the attention explorer's component state: its settled {layer, head}
    Key("step_layer", 0, in_url=True, persistent=True, bounds=(0, SLIDER_MAX_LAYERS - 1)),
    Key("step_head", 0, in_url=True, persistent=True, bounds=(0, MAX_HEADS - 1)),
    Key("step_query", 0, in_url=True, persistent=True, bounds=(0, MAX_TOKENS - 1)),
    Key("ln_layer", 0, in_url=True, persistent=True, bounds=(0, SLIDER_MAX_LAYERS - 1)),
    Key("act_layer", 0, in_url=True, persistent=True, bounds=(0, SLIDER_MAX_LAYERS - 1)),
    # act_token None: the first word
    Key("act_token", None, in_url=True, persistent=True, bounds=(0, MAX_TOKENS - 1)),
    # the lesson: its step (1-based), its query (a position, or the rule's), presenter mode
    Key("lesson", 1, in_url=True, bounds=(1, LESSON_STEPS)),
    Key(
        "lesson_query",
        LESSON_RULE_QUERY,
        in_url=True,
        persistent=True,
        bounds=(LESSON_RULE_QUERY, MAX_TOKENS - 1),
    ),
    Key("present", False, in_url=True, persistent=True),
    # predict, then reveal (app.lesson.questions): the guess controls, by kind, the question
    # they answer, and {question id: guess ("" skipped)} of those this browser revealed
    Key("predict_token"),
    Key("predict_head"),
    Key("predict_number"),
    Key("predict_choice"),
    Key("predict_number_2"),  # a paired question's second answer
    Key("predict_choice_2"),
    Key("_predict_for"),
    Key("_predict_done"),
    # a class (app.lesson.classroom): the code a student joins (the student link's `class`),
    # the join form, the follow switch; the teacher's (code, secret) and a student's (code, id)
    # stay in their session only
    Key("class", None, in_url=True),
    Key("class_code"),
    Key("class_nickname"),
    # the follow switch's widget, and whether this student follows (the switch's value comes
    # from it: a widget's own state can vanish on a run that does not draw it)
    Key("class_follow"),
    Key("_class_following", True),
    Key("_class_teacher"),
    Key("_class_student"),
    Key("_class_seen"),  # the class state's version a student last followed
    # (the class state's version, the teacher's link parameters), applied as the next run
    # starts; only then is that version seen (a rerun lost to a busy server is asked again)
    Key("_class_pending"),
    Key("_class_refused"),  # the question whose answer the store refused (say: send it again)
    Key("_class_away", False),  # a read found the store away: the poll redraws once it is back
    # Heads across a corpus: the bundled corpus or the user's own sentences
    Key("corpus_source", persistent=True),
    Key("corpus_text", "", persistent=True),
    # the Training view's controls (a preset in the link fills in the others)
    Key("train_preset", None, in_url=True, persistent=True, choices=tuple(TRAINING_PRESETS)),
    *(
        Key(key, getattr(_TRAINING, field), persistent=True)
        for key, field in TRAINING_FIELDS.items()
    ),
    Key("train_dropout_rate", DEFAULT_DROPOUT_RATE, persistent=True),  # the placement runs'
    # the Exercises view: the set of numbers (in the link, so a class can share one), each
    # question's answer and its "Show me"
    Key("ex_set", 0, in_url=True, persistent=True, bounds=(0, MAX_SET)),
    *(Key(name, "", persistent=True) for name in EXERCISE_ANSWER_KEYS),
    *(Key(name, False, persistent=True) for name in EXERCISE_SHOW_KEYS),
    # pickers that fill in other keys, and what the page keeps for itself
    Key("preset"),  # the sidebar's architecture preset
    Key("example"),  # the sidebar's example sentences
    Key("_url_loaded", False),
    Key("_last_view", FIRST_VIEW),  # the view control un-selects on a second click
    Key("_saved_architecture"),  # the user's own, while a trained model's is shown
    Key("_saved_text"),  # the user's own, while a task model's sequences are shown
    Key("_session_models"),  # session_models.ModelShelf: {id: SessionModel}, in the budget
    Key("_upload_round", 0),  # a fresh (empty) uploader after each upload
    Key("_upload_error"),  # the last upload's message (markdown), shown once
    Key("_training_lab"),  # app.views.training.TrainingLab
    Key("_b_overrides"),  # {setup key: value}: where setup B differs from setup A
)
REGISTRY = {key.name: key for key in KEYS}
DEFAULTS = {key.name: key.default for key in KEYS}
URL_KEYS = tuple(key.name for key in KEYS if key.in_url and key.follows is None)
PERSISTENT_KEYS = tuple(key.name for key in KEYS if key.persistent)


def _key(name: str) -> Key:
    if name not in REGISTRY:
        raise KeyError(f"{name!r} is not a session key registered in app.controls.state")
    return REGISTRY[name]


def get(name: str) -> object:
    """The current value of a registered key (its default when it has none yet)."""
    return st.session_state.get(name, _key(name).default)


def put(name: str, value: object) -> None:
    _key(name)
    st.session_state[name] = value


def pop(name: str) -> object:
    """Remove a key's value; the value it had (its default when it had none)."""
    return st.session_state.pop(name, _key(name).default)


def update(values: dict[str, object]) -> None:
    for name, value in values.items():
        put(name, value)


def upload_key() -> str:
    """The uploader's widget key: a new one after each upload, so the next starts empty."""
    return f"upload_{get('_upload_round')}"


def uploaded(widget_key: str) -> list:
    """The files in the uploader `widget_key` (see upload_key)."""
    return st.session_state.get(widget_key) or []


def keep(name: str, make: Callable[[], object]) -> object:
    """The session's object under `name`, made by `make()` the first time."""
    _key(name)
    if st.session_state.get(name) is None:
        st.session_state[name] = make()
    return st.session_state[name]


# --- the start of every run ----------------------------------------------------------------------


def start_page(views: tuple[str, ...], is_session_source: Callable[[str], bool]) -> list[str]:
    """Every run, before any widget: the defaults, on the session's first run the URL's values
    (`views`: the view names a link may open), and the persistent widgets' values kept. Returns
    notices about the URL for the page."""
    notices: list[str] = []
    state = st.session_state
    if not state.get("_url_loaded"):
        state["_url_loaded"] = True
        for key in KEYS:
            if key.default is not None:
                state.setdefault(key.name, key.default)
        if LESSON_VIEW in views and set(st.query_params) <= set(LESSON_URL_KEYS):
            update(FIRST_VISIT)
        notices += _load_url(
            {**REGISTRY, "view": replace(REGISTRY["view"], choices=views)}, is_session_source
        )
    pending = state.pop("_class_pending", None)
    if pending:  # a class's student follows the teacher: the teacher's link, before any widget
        version, setup = pending
        params = {name: raw for name, raw in setup.items() if name != "class"}
        state["_class_seen"] = version
        notices += _load_url(REGISTRY, is_session_source, params)
    for name in PERSISTENT_KEYS:  # Streamlit forgets a widget's value on a run that does not
        if name in state:  # draw it; writing it back marks it as the user's, so it survives
            state[name] = state[name]
    if state.get("view") is None:  # a click on the selected view un-selects it
        state["view"] = state.get("_last_view", FIRST_VIEW)
    state["_last_view"] = state["view"]
    return notices


def _load_url(
    keys: dict[str, Key],
    is_session_source: Callable[[str], bool],
    params: Mapping[str, str] | None = None,
) -> list[str]:
    """The link's values (`params`, by default the URL's) into the session; notices."""
    params = st.query_params if params is None else params
    notices = []
    overrides = b_overrides()
    for name in (*URL_KEYS, *map(b_key, SETUP_KEYS)):
        if name not in params:
            continue
        raw = params[name]
        if name in ("source", b_key("source")) and is_session_source(raw):
            notices.append(
                "The link names a model trained or uploaded in another browser session; such "
                "models stay in their session (download it there, upload it here). Using random "
                "weights with the link's architecture."
            )
            continue
        try:
            value = keys[name].parse(raw)
            if keys[name].follows is None:
                _set_from_link(name, value)
            else:
                overrides[keys[name].follows] = value
        except ValueError as error:
            follows = keys[name].follows
            instead = f"A's {follows}" if follows else f"{name}={keys[name].default!r}"
            notices.append(literal(f"The link's {error}; using {instead} instead."))
    return notices


def _set_from_link(name: str, value: object) -> None:
    """A URL parameter's value into the session; a training preset fills in its controls."""
    put(name, value)
    if name == "train_preset":
        update(training_preset_values(value))


def url_value(value: object) -> str:
    """How a key's value is written in the URL (switches as 1 / 0)."""
    return str(int(value)) if isinstance(value, bool) else str(value)


def sync_url(text: str) -> None:
    """Keep the URL in step with the controls (the text only while it fits in a link; keys whose
    value is None, such as a choice left to the page, are left out; setup B as compare=1 and
    the keys where B differs from A)."""
    params = {
        name: url_value(get(name))
        for name in URL_KEYS
        if name not in ("text", "compare") and get(name) is not None
    }
    if get("compare"):
        params["compare"] = "1"
        params |= {b_key(name): url_value(value) for name, value in b_overrides().items()}
    if len(text) <= MAX_URL_TEXT:
        params["text"] = text
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def sidebar_values(prefix: str = "") -> dict[str, object]:
    """A setup's keys and their values now, by A's names (prefix "b_": setup B's)."""
    return {name: get(prefix + name) for name in SETUP_KEYS}


# --- setup B: A's values, but where B overrides them ---------------------------------------------


def b_overrides() -> dict[str, object]:
    """{setup key: value} where setup B differs from setup A."""
    return keep("_b_overrides", dict)


def sources_in_use() -> tuple[str, ...]:
    """The model sources this session shows: setup A's, and in compare mode setup B's where it
    has its own."""
    b_source = b_overrides().get("source") if get("compare") else None
    return (get("source"),) + ((b_source,) if b_source is not None else ())


def show_setup_b() -> None:
    """Put B's values (its override, else A's) into B's widgets, before they are drawn."""
    overrides = b_overrides()
    for name in SETUP_KEYS:
        put(b_key(name), overrides.get(name, get(name)))


def on_b_change(name: str) -> None:
    """A B widget changed: it overrides A's value, or follows A again when it equals it."""
    value, overrides = get(b_key(name)), b_overrides()
    if value == get(name):
        overrides.pop(name, None)
    else:
        overrides[name] = value


def set_b(overrides: dict[str, object]) -> None:
    """Setup B = A, but for these values (a one-click pair)."""
    b_overrides().clear()
    b_overrides().update(overrides)


# --- what the views select -----------------------------------------------------------------------


LAYER_KEYS = ("layer", "step_layer", "ln_layer", "act_layer")
HEAD_KEYS = ("head", "step_head")


def _clamp(value: object, count: int) -> int:
    return min(max(int(value), 0), count - 1)


def selection(cfgs: list[EncoderConfig]) -> Selection:
    """The views' choices, layers and heads within the largest of the setups' configs (written
    back, so that every widget opens on a value it offers)."""
    values = {name: get(name) for name in SELECTION_KEYS}
    for name in LAYER_KEYS:
        values[name] = _clamp(values[name], max(cfg.num_layers for cfg in cfgs))
    for name in HEAD_KEYS:
        values[name] = _clamp(values[name], max(cfg.num_heads for cfg in cfgs))
    return _written(Selection(**values))


def fit_to_sentences(chosen: Selection, lengths: list[int]) -> Selection:
    """`chosen` within the run's sentences (`lengths`: each one's real tokens)."""
    sentence = chosen.sentence if chosen.sentence < len(lengths) else 0
    n = lengths[sentence]
    first_word = 1 if n > 2 else 0  # past [CLS]
    token = first_word if chosen.act_token is None or chosen.act_token >= n else chosen.act_token
    query = LESSON_RULE_QUERY if chosen.lesson_query >= n else chosen.lesson_query
    fitted = replace(
        chosen,
        sentence=sentence,
        step_query=_clamp(chosen.step_query, n),
        act_token=token,
        lesson_query=query,
    )
    return _written(fitted)


def _written(chosen: Selection) -> Selection:
    """Write back the values that were brought within range (only those: a widget already drawn
    this run, such as compare mode's heads-off box in the sidebar, keeps its value)."""
    for name in SELECTION_KEYS:
        if get(name) != getattr(chosen, name):
            put(name, getattr(chosen, name))
    return chosen


# --- actions: callbacks that change several keys at once ----------------------------------------


def training_preset_values(name: str | None) -> dict[str, object]:
    """The Training view's widget values a training preset sets."""
    if name is None:
        return {}
    cfg = TrainConfig(**TRAINING_PRESETS[name])
    return {key: getattr(cfg, field) for key, field in TRAINING_FIELDS.items()}


def follow_explorer() -> None:
    """The attention explorer's settled head into the session's `layer` and `head` (its
    callback): the views' selection, and the URL, follow what the browser chose."""
    chosen = (get("explorer") or {}).get("selection")
    if chosen:
        update({"layer": int(chosen["layer"]), "head": int(chosen["head"])})


def open_view(view: str, chosen: dict[str, int]) -> None:
    """Show `view` with these Selection values (a button's callback)."""
    put("view", view)
    update(chosen)


def follow_link(view: str, values: dict[str, object], select_source: Callable[[str], None]) -> None:
    """Open `view` with `values` in this session, as a link would (a button's callback): every
    value is a URL parameter's, so the URL the page then shows reopens the same place. A new
    model source goes through `select_source` (app.controls.sidebar's), which saves and restores the
    user's architecture and text; a training preset fills in the Training view's controls."""
    outside = sorted(set(values) - set(URL_KEYS))
    if outside:
        raise KeyError(f"{outside} are not URL parameters: a link could not carry them")
    if "source" in values and values["source"] != get("source"):
        select_source(values["source"])
    put("view", view)
    for name, value in values.items():
        if name != "source":
            _set_from_link(name, value)


def new_exercise_numbers() -> None:
    """The Exercises view's next set of numbers, with its answers and solutions cleared (the
    "New numbers" button's callback)."""
    put("ex_set", (get("ex_set") + 1) % (MAX_SET + 1))
    update(dict.fromkeys(EXERCISE_ANSWER_KEYS, ""))
    update(dict.fromkeys(EXERCISE_SHOW_KEYS, False))


def sidebar_state() -> str:
    """The sidebar as the page opens: collapsed in presenter mode."""
    return "collapsed" if get("present") else "auto"
