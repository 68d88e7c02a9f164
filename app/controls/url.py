"""The link: what the page's URL parameters, setup B and a class's teacher say.

The session is the truth and the URL follows it: a session's first run reads the link's values
(checked, with a message for each one the page cannot use), a class student's page applies its
teacher's link the same way, and every run writes the URL back from the session: only what
differs from what a link without it opens (the text only while it fits in a link; setup B as
compare=1 and the keys where B differs from A), so that a link stays short. Which view a
link opens is its path (app.registry's pages); `view=NAME`, as links made before the pages had
paths say it, is read here and the page switched to.

Streamlit's `bind="query-params"` does not fit these keys: the sidebar's widgets are drawn on
every page, and st.switch_page (an old `view=` link, the lesson's and the Training view's "Open
in" buttons, a class student following the teacher) refuses to run while a bound parameter is in
the URL ("Cannot clear query parameters - the following are bound to widgets"); a bound value
equal to the widget's first option also leaves the URL, where a link's default is another.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import streamlit as st

from app.controls import state
from app.controls.setup_keys import SETUP_KEYS, b_key
from app.i18n import _, told
from app.keys import FITS_TOKEN, Key
from app.settings import ARCHITECTURE_KEYS
from app.sources import is_found_source
from app.user_text import literal
from encoder.core.options import parse_value

MAX_URL_TEXT = 2000  # characters of text carried in the link
VIEW_PARAM = "view"  # an old link's view, by its title
FIRST_VIEW = "Attention"  # the view a link opens when it names none (and names a setting)
# A page opened with no settings (no URL parameters, or only the lesson's own) starts the lesson
# on the pretrained model; a link that names any setting opens exactly those, the rest at their
# defaults (random weights, the Attention view).
LESSON_URL_KEYS = (
    "lesson",
    "lesson_query",
    "present",
    "class",
    "lang",
    "timing",
)  # a student link: the Lesson (the page's own settings, none of the model's)
FIRST_VISIT_SOURCE = "pretrained"


def start_page(
    views: tuple[str, ...], is_session_source: Callable[[str], bool]
) -> tuple[bool, list[str], str | None]:
    """Every run, before any widget: on the session's first run the defaults and the link's
    values, then a class student's pending teacher link. Returns whether this is the session's
    first run, the notices for the page and the view the link names (one of `views`), if any."""
    notices, view = [], None
    first = state.first_run()
    if first:
        notices += load(is_session_source)
        view = _view_of(st.query_params, views, notices)
    pending = state.pop("_class_pending")
    if pending:  # a class's student follows the teacher: the teacher's link, before any widget
        version, setup = pending
        params = {name: raw for name, raw in setup.items() if name != "class"}
        state.put("_class_seen", version)
        notices += load(is_session_source, params)
        view = _view_of(params, views, notices) or view
    return first, notices, view


def _view_of(params: Mapping[str, str], views: tuple[str, ...], notices: list[str]) -> str | None:
    """The view a link names (`view=NAME`), or None; a name the page lacks is a notice."""
    if VIEW_PARAM not in params:
        return None
    try:
        return parse_value(VIEW_PARAM, params[VIEW_PARAM], views)
    except ValueError as error:
        instead = f"{VIEW_PARAM}={FIRST_VIEW!r}"
        notices.append(
            literal(
                _(
                    "The link's {error}; using {instead} instead.",
                    error=told(error),
                    instead=instead,
                )
            )
        )
        return FIRST_VIEW


def url_keys() -> tuple[str, ...]:
    """The URL parameters: every key declared in_url, but setup B's (carried as overrides)."""
    return tuple(n for n, key in state.REGISTRY.items() if key.in_url and key.follows is None)


def first_visit() -> bool:
    """True when the page was opened with no settings (the lesson's own parameters at most)."""
    return set(st.query_params) <= set(LESSON_URL_KEYS)


def load(
    is_session_source: Callable[[str], bool], params: Mapping[str, str] | None = None
) -> list[str]:
    """The link's values (`params`, by default the URL's) into the session; notices."""
    params = st.query_params if params is None else params
    keys, notices, overrides = state.REGISTRY, [], b_overrides()
    for name in (*url_keys(), *map(b_key, SETUP_KEYS)):
        if name not in params:
            continue
        raw = params[name]
        if name in ("source", b_key("source")) and is_session_source(raw):
            notices.append(
                _(
                    "The link names a model trained or uploaded in another browser session; such "
                    "models stay in their session (download it there, upload it here). Using "
                    "random weights with the link's architecture."
                )
            )
            continue
        try:  # a found model's id is checked by the sidebar, against what this machine has
            found = name in ("source", b_key("source")) and is_found_source(raw)
            value = raw if found else keys[name].parse(raw)
            if keys[name].follows is None:
                state.set_from_link(name, value)
            else:
                overrides[keys[name].follows] = value
        except ValueError as error:
            follows = keys[name].follows
            default = keys[name].default
            if follows:
                said = _(
                    "The link's {error}; using A's {key} instead.", error=told(error), key=follows
                )
            elif default is not None:
                instead = f"{name}={default!r}"
                said = _(
                    "The link's {error}; using {instead} instead.",
                    error=told(error),
                    instead=instead,
                )
            else:
                said = _(
                    "The link's {error}; using the page's own choice instead.", error=told(error)
                )
            notices.append(literal(said))
    return notices


def url_value(value: object) -> str:
    """How a key's value is written in the URL (switches as 1 / 0)."""
    return str(int(value)) if isinstance(value, bool) else str(value)


def link(text: str, everything: bool = False) -> dict[str, str]:
    """This session's setup as URL parameters: the keys whose value differs from what a link
    without them opens (keys whose value is None, such as a choice left to the page, are left
    out), setup B as compare=1 and its overrides, and the text while it fits in a link. What a
    link without a key opens: the key's default; the architecture of any source but random
    weights, the source's own (the source puts it there); on the Lesson the source is always
    said (a link that names no setting opens FIRST_VISIT_SOURCE's). `everything`: every key
    with a value, defaults included (the teacher's setup, which a class's students load over
    their own)."""
    source = state.get("source")
    implied = () if everything or source == "random" else ARCHITECTURE_KEYS
    params = {
        name: url_value(value)
        for name in url_keys()
        if name not in ("text", "compare", *implied)
        and (value := state.get(name)) is not None
        and (everything or not _as_if_left_out(state.REGISTRY[name], value))
    }
    if state.get("compare"):
        params["compare"] = "1"
        params |= {b_key(name): url_value(value) for name, value in b_overrides().items()}
    if len(text) <= MAX_URL_TEXT and (everything or text != state.REGISTRY["text"].default):
        params["text"] = text
    if state.get("view") == "Lesson" and set(params) <= set(LESSON_URL_KEYS):
        params["source"] = source  # said even where it is the default: a first visit's is not
    return params


def _as_if_left_out(key: Key, value: object) -> bool:
    """True when a link without `key` opens the same: `value` is its default, or, for a token
    picker left to the page (None: the sentence's first word, app.controls.state), position 1,
    which every sentence fits as it fits None (the first word, or past a two-token end)."""
    return value == key.default or (key.fits == FITS_TOKEN and key.default is None and value == 1)


def sync(text: str) -> None:
    """Keep the URL in step with the controls: a link that carries what differs (`link`)."""
    params = link(text)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def follow_link(view: str, values: dict[str, object], select_source: Callable[[str], None]) -> None:
    """Open `view` with `values` in this session, as a link would (a button's callback): every
    value is a URL parameter's, so the URL the page then shows reopens the same place. A new
    model source goes through `select_source` (app.controls.sidebar's), which saves and restores
    the user's architecture and text; a training preset fills in the Training view's controls."""
    outside = sorted(set(values) - set(url_keys()))
    if outside:
        raise KeyError(f"{outside} are not URL parameters: a link could not carry them")
    if "source" in values and values["source"] != state.get("source"):
        select_source(values["source"])
    state.open_view(view)
    for name, value in values.items():
        if name != "source":
            state.set_from_link(name, value)


# --- setup B: A's values, but where B overrides them ---------------------------------------------


def b_overrides() -> dict[str, object]:
    """{setup key: value} where setup B differs from setup A."""
    return state.keep("_b_overrides", dict)


def sources_in_use() -> tuple[str, ...]:
    """The model sources this session shows: setup A's, and in compare mode setup B's where it
    has its own."""
    b_source = b_overrides().get("source") if state.get("compare") else None
    return (state.get("source"),) + ((b_source,) if b_source is not None else ())


def sidebar_values(prefix: str = "") -> dict[str, object]:
    """A setup's keys and their values now, by A's names (prefix "b_": setup B's)."""
    return {name: state.get(prefix + name) for name in SETUP_KEYS}


def show_setup_b() -> None:
    """Put B's values (its override, else A's) into B's widgets, before they are drawn."""
    overrides = b_overrides()
    for name in SETUP_KEYS:
        state.put(b_key(name), overrides.get(name, state.get(name)))


def on_b_change(name: str) -> None:
    """A B widget changed: it overrides A's value, or follows A again when it equals it."""
    value, overrides = state.get(b_key(name)), b_overrides()
    if value == state.get(name):
        overrides.pop(name, None)
    else:
        overrides[name] = value


def set_b(overrides: dict[str, object]) -> None:
    """Setup B = A, but for these values (a one-click pair)."""
    b_overrides().clear()
    b_overrides().update(overrides)
