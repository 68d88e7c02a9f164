"""A class that follows its teacher, on the Lesson's page: the session's side (the teacher's
secret, a student's id), which app.registry hands the lesson's page as `class_bar`; its
questions are asked by app.controls.asking (`ask`).

The teacher clicks "Start a class": the store (app.classroom) returns a public code and a secret
that stays in the teacher's session (never in a link). Students open `?class=CODE` (or type the
code): each joins once, polls the class every POLL_S seconds in a fragment and, while following,
lands on the teacher's step with the teacher's settings. A question opened by the teacher is
answered on each student's page; the teacher's page shows the tally live and reveals it to all.

One timer a page, last on the page: a student's page polls in a fragment that draws nothing,
and any change of the class reruns the whole page; the answer box is a fragment without a timer
(a click reruns it alone). The teacher's tally polls only while its question is open; a
teacher's page whose full run found the store away has a timer last on the page instead
(_store_watch; a student's whose join found it away, too), which draws the page again once
the store is back. A timer's
tick that reaches the server while a whole rerun rebuilds the page could write into a path the
browser no longer has ("Bad delta path index": a blank page) or cut what follows it short (a
student's reveal once went missing), so no timer sits where steps differ or above the step.
Every teacher action is checked by the store against the secret; a store that is away turns into
a message, and answers are refused, never dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import streamlit as st

from app.classroom.backend import open_store
from app.classroom.qr import qr_png
from app.classroom.store import (
    ClassError,
    ClassState,
    ClassStore,
    ClassStoreUnavailable,
)
from app.controls import state
from app.controls.url import VIEW_PARAM, link
from app.i18n import _, told
from app.keys import Key
from app.streamlit_private import announce
from app.user_text import literal

POLL_S = 0.5  # a student's page asks the store this often (a step change: 2 s p95, 10 students)
TALLY_POLL_S = 0.5  # the teacher's tally, while a question is open (a failed read: under 0.3 s)
SETUP_LEFT_OUT = ("class", "present")  # the teacher's, never carried to the students
# The code a student joins (the student link's `class`), the join form, the follow switch; the
# teacher's (code, secret) and a student's (code, id) stay in their session only.
KEYS = (
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
    # a read found the store away: a student's poll, a teacher's watch, redraws once it is back
    Key("_class_away", False),
)
log = logging.getLogger(__name__)


@st.cache_resource(show_spinner=False)
def class_store() -> ClassStore:
    """One store per server process (SQLite file or Redis, app.classroom.backend.open_store)."""
    return open_store()


def state_unsaid(code: str) -> ClassState | None:
    """The class's state, or None when the store is away, without a message: for the reads
    whose page draws that message elsewhere (the answer box, the panel, the follow line)."""
    try:
        return class_store().state(code)
    except ClassStoreUnavailable:
        state.put("_class_away", True)
    except (ClassError, ValueError):
        pass
    return None


def guarded(action: Callable[[], object], away: str = "") -> object | None:
    """The store's answer, or None after showing its message (an error, never a traceback;
    `away`, when given, says the store is away, in place of the store's own message). A store
    found away is marked (`_class_away`): a student's poll, or a teacher's watch, redraws the
    page once it is back, whichever part of the page found it away (a pause between two ticks
    included)."""
    try:
        return action()
    except ClassStoreUnavailable as error:
        state.put("_class_away", True)
        st.warning(away or literal(told(error)))
    except ClassError as error:
        st.warning(literal(told(error)))
    except ValueError as error:  # a bad setting of the server's (app.classroom.backend)
        log.error("classes are unavailable: %s", error)
        st.error(_("Classes are unavailable on this server: its class settings are wrong."))
    return None


# --- a class -------------------------------------------------------------------------------


def teacher() -> tuple[str, str] | None:
    return state.get("_class_teacher")


def student() -> tuple[str, str] | None:
    return state.get("_class_student")


def still(member: tuple[str, str] | None) -> tuple[str, str]:
    """A class fragment's (code, secret or id). A session can lose it between two runs of the
    fragment (Streamlit's "Clear cache" empties the session's state, and any browser may ask
    for it): the whole page is drawn again instead, as the session now is (a student link
    joins again), never a traceback."""
    if member is None:
        st.rerun()
    return member


def teacher_setup() -> dict[str, str]:
    """What students load with the teacher's step: the page's link (model, sentence, step)."""
    whole = link(state.get("text"), everything=True)  # every key: over the students' own
    setup = {k: v for k, v in whole.items() if k not in SETUP_LEFT_OUT}
    return {**setup, VIEW_PARAM: state.get("view")}  # the view is its page's path


def student_link(code: str) -> str:
    base = (st.context.url or "").split("?")[0]
    return f"{base}?class={code}"


def bar(number: int, present: bool, below: bool = False) -> None:
    """The class's line above the lesson: start a class or join one; the code and QR code for
    the teacher, the follow switch for a student. The teacher's step goes to the store here.
    In presenter mode the invitation to start or join stands below the step (`below`), so that
    the projector's first screen is the step's own."""
    if below:
        if student():  # the page's one timer, last on the page
            st.fragment(_student_poll, run_every=POLL_S)()
        elif (teacher() or state.get("class")) and state.get("_class_away"):
            st.fragment(_store_watch, run_every=POLL_S)()  # this run found the store away
        elif present and not teacher():
            _invitation()
        return
    if teacher():
        code, secret = teacher()
        state.put("_class_away", False)  # until a call of this run finds the store away
        guarded(lambda: _publish(code, secret, number))
        _teacher_card(code, present)
        return
    code = state.get("class")
    if code and not student():
        state.put("_class_away", False)  # until the join below finds the store away
        nickname = state.get("class_nickname") or ""
        joined = guarded(lambda: class_store().join(code, nickname))
        if joined is not None:
            state.put("_class_student", (class_store().state(code).code, joined))
        elif not state.get("_class_away"):  # no such class, or full, or ended: the page says so
            state.put("class", None)  # (the store away: the code kept, the page's watch joins)
    if student():
        _follow_line(student()[0])
        return
    if not present:
        _invitation()


def _invitation() -> None:
    """Start a class, or join one with its code."""
    with st.expander(_("Teach a class, or join one")):
        left, right = st.columns(2)
        if left.button(_("Start a class"), key="class_start", icon=":material/groups:"):
            made = guarded(lambda: class_store().create())
            if made is not None:
                state.put("_class_teacher", (made.code, made.secret))
                st.rerun()
        right.text_input(
            _("Class code"),
            key="class_code",
            max_chars=12,
            placeholder=_("e.g. {example}", example="K7MPQR"),
        )
        right.text_input(
            _("Nickname (optional, only your teacher sees it)"), key="class_nickname", max_chars=24
        )
        if right.button(_("Join"), key="class_join") and state.get("class_code"):
            state.put("class", state.get("class_code"))
            st.rerun()


def _publish(code: str, secret: str, number: int) -> None:
    current = class_store().state(code)
    setup = teacher_setup()
    if current.step != number or dict(current.setup) != setup:
        class_store().set_step(code, secret, number, setup)


def _teacher_card(code: str, present: bool) -> None:
    link = student_link(code)
    text, image, end = st.columns([4, 1.3, 1], vertical_alignment="center")
    size = "3.2rem" if present else "2rem"
    text.markdown(
        f"<div data-testid='class-code' style='font-size:{size};font-weight:700;"
        f"letter-spacing:0.2em;line-height:1.1'>{code}</div>",
        unsafe_allow_html=True,  # the code is ours: CODE_ALPHABET only
    )
    text.caption(
        literal(
            _("Class code {code}: students open {link} or type the code.", code=code, link=link)
        )
    )
    image.image(qr_png(link, scale=4 if present else 3), caption=_("The student link"))
    if end.button(_("End the class"), key="class_end"):
        secret = teacher()[1]
        guarded(lambda: class_store().end(code, secret))
        state.put("_class_teacher", None)
        st.rerun()


def _follow_switched() -> None:
    state.put("_class_following", bool(state.get("class_follow")))
    state.put("_class_seen", None)  # switched back on: straight to the teacher's step


def _follow_line(code: str) -> None:
    """A student's switch between following the teacher and exploring freely."""
    current = guarded(lambda: class_store().state(code))
    st.toggle(
        _("Follow the teacher"),
        value=bool(state.get("_class_following")),
        key="class_follow",
        on_change=_follow_switched,
        help=_("Off: explore freely; on: back to the teacher's step."),
    )
    if current is not None:
        st.caption(_("Class {code} · the teacher is on step {step}", code=code, step=current.step))
        announce(_("The class is on step {step}.", step=current.step))


def _student_poll() -> None:
    """The page's one timer, drawing nothing: any change of the class (step, setup, question,
    reveal) reruns the page; while following, with the teacher's step and settings."""
    current = state_unsaid(still(student())[0])
    if current is None:  # away (marked) or gone: the page's messages say which
        return
    back = state.get("_class_away")  # the store is back: the page as it should be, at once
    state.put("_class_away", False)
    if current.version == state.get("_class_seen") and not back:
        return
    if state.get("_class_following"):
        # applied before the sidebar's widgets (app.controls.url.start_page), which marks the
        # version seen: until then every poll asks again
        state.put("_class_pending", (current.version, dict(current.setup)))
    else:  # exploring: the follow line's step, and the question where the student is on it
        state.put("_class_seen", current.version)
    st.rerun()


def _store_watch() -> None:
    """A page whose last full run found the store away, a teacher's or a joining student's: a
    timer, last on the page and drawing nothing, that reruns the whole page once the store
    answers again (the teacher's class line, tally and "Reveal to everyone" back, whatever the
    teacher clicked meanwhile; the student's join made)."""
    code = teacher()[0] if teacher() else state.get("class")
    if code is None:  # the session lost it (`still`): the page drawn again as the session is
        st.rerun()
    state.put("_class_away", False)  # until the read below finds the store away again
    state_unsaid(code)
    if not state.get("_class_away"):  # it answers (what is wrong with the class, the page says)
        st.rerun()
