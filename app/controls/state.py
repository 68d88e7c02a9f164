"""The session's state: the only module that touches `st.session_state`.

Every key is declared beside the code that uses it (app.keys.Key: a view's in its module, the
sidebar's in app.controls.setup_keys, the lesson's and the class's in theirs); app.registry
gathers them and registers them here. Widgets carry those keys (a key is the widget's identity),
but their values reach the code through the widgets' return values, or through the `Selection`
and `Settings` handed out. A view's widget keeps its value on the other pages with
persist_state="session"; the link (URL parameters, setup B, the class) is app.controls.url's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import streamlit as st

from app import i18n
from app.keys import FITS_HEAD, FITS_LAYER, FITS_POSITION, FITS_QUERY, FITS_TOKEN, Key, Selection
from app.settings import LESSON_RULE_QUERY
from encoder import EncoderConfig

REGISTRY: dict[str, Key] = {}
PAGE_KEYS = (
    Key("view"),  # the title of the view on screen (its page), written as each page starts
    Key("_open_view"),  # a view to switch to as the next run starts (a button's callback)
    Key("_carried_notices"),  # the link's notices, for the page a switch leads to
    Key("_url_loaded", False),
)


def register(keys: Iterable[Key]) -> None:
    """Declare these keys (app.registry, once, with every module's); a name twice is an error."""
    for key in keys:
        if key.name in REGISTRY and REGISTRY[key.name] != key:
            raise ValueError(f"session key {key.name!r} is declared twice")
        REGISTRY[key.name] = key


register(PAGE_KEYS)


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


def put_again(spoken_before: str, spoken_now: str) -> None:
    """Put every registered key's choice again as it is (a callback, as the page's language
    changes from `spoken_before` to `spoken_now`): Streamlit knows a radio's or a selectbox's
    choice by its label, which the browser keeps and sends back; a label in the old language is
    one the new run does not offer, and the choice would become that label. Put again, each
    widget is drawn with its choice named in the new language. A set of tabs' choice is its open
    tab's label itself: it is put as the label in the same place in the new language. Choices
    only (text and numbers): a button's key cannot be put."""
    for name, key in REGISTRY.items():
        value = st.session_state.get(name)
        if key.labels is not None and value is not None:
            st.session_state[name] = _named_again(key.labels, value, spoken_before, spoken_now)
        elif isinstance(value, (str, int, float, list, tuple)) and not isinstance(value, bool):
            st.session_state[name] = value


def _named_again(labels: Callable, label: str, spoken_before: str, spoken_now: str) -> str:
    """The label in `labels()`'s place of `label`, in `spoken_now` (as it is where the labels in
    `spoken_before` do not hold it)."""
    i18n.speak_now(spoken_before)
    before = list(labels())
    i18n.speak_now(spoken_now)
    return list(labels())[before.index(label)] if label in before else label


def set_from_link(name: str, value: object) -> None:
    """A link's value into the session, with the other keys it fills in (a training preset)."""
    put(name, value)
    fills = _key(name).fills
    if fills is not None:
        update(fills(value))


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


def first_run() -> bool:
    """True once per session, on its first run: every default goes in (the link's values next)."""
    if st.session_state.get("_url_loaded"):
        return False
    st.session_state["_url_loaded"] = True
    for key in REGISTRY.values():
        if key.default is not None:
            st.session_state.setdefault(key.name, key.default)
    return True


# --- switching views -----------------------------------------------------------------------------


def open_view(view: str, chosen: dict[str, object] | None = None) -> None:
    """Show `view` as the next run starts, with these values (a button's callback: a callback
    cannot switch pages itself)."""
    put("_open_view", view)
    update(chosen or {})


def view_to_open() -> str | None:
    """The view a callback asked for (once), or None."""
    return pop("_open_view")


def switch_to(page, notices: list[str]) -> None:
    """Show `page` (an st.Page) instead of this one, carrying `notices` there (a page switch
    starts a new run, which no longer reads the link)."""
    put("_carried_notices", notices)
    st.switch_page(page)


def carried_notices() -> list[str]:
    """The notices a page switch carried to this run (once)."""
    return pop("_carried_notices") or []


def follow_explorer() -> None:
    """The attention explorer's settled head into the session's `layer` and `head` (its
    callback): the views' selection, and the URL, follow what the browser chose; `neuron` once
    its neuron view asked for the heads' q and k."""
    chosen = (get("explorer") or {}).get("selection")
    if chosen:  # and, once its neuron view has opened, that it needs every head's q and k
        asked = {"neuron": True} if chosen.get("neuron") else {}
        update({"layer": int(chosen["layer"]), "head": int(chosen["head"]), **asked})


def sidebar_state() -> str:
    """The sidebar as the page opens: collapsed in presenter mode."""
    return "collapsed" if get("present") else "auto"


# --- what the views select -----------------------------------------------------------------------


def _clamp(value: object, count: int) -> int:
    return min(max(int(value), 0), count - 1)


def selection(cfgs: list[EncoderConfig]) -> Selection:
    """The views' choices, layers and heads within the largest of the setups' configs (written
    back, so that every widget opens on a value it offers)."""
    layers = max(cfg.num_layers for cfg in cfgs)
    heads = max(cfg.num_heads for cfg in cfgs)
    values = {}
    for key in REGISTRY.values():
        if key.selects:
            value = get(key.name)
            if key.fits == FITS_LAYER:
                value = _clamp(value, layers)
            elif key.fits == FITS_HEAD:
                value = _clamp(value, heads)
            values[key.name] = value
    return _written(Selection(values))


def fit_to_sentences(chosen: Selection, lengths: list[int]) -> Selection:
    """`chosen` within the run's sentences (`lengths`: each one's real tokens)."""
    sentence = chosen.sentence if chosen.sentence < len(lengths) else 0
    n = lengths[sentence]
    first_word = 1 if n > 2 else 0  # past [CLS]
    fitted = {"sentence": sentence}
    for key in REGISTRY.values():
        value = getattr(chosen, key.name, None) if key.selects else None
        if key.fits == FITS_POSITION:
            fitted[key.name] = _clamp(value, n)
        elif key.fits == FITS_TOKEN:
            fitted[key.name] = first_word if value is None or value >= n else value
        elif key.fits == FITS_QUERY:
            fitted[key.name] = LESSON_RULE_QUERY if value >= n else value
    return _written(chosen.with_values(**fitted))


def _written(chosen: Selection) -> Selection:
    """Write the choices back, every run, before the views draw their widgets: each opens on
    its value within range. A selectbox's own state is its option's label ("3: cat"), which
    another text changes; written back, the choice stays a position, never a stale label."""
    for name, value in chosen.values().items():
        put(name, value)
    return chosen
