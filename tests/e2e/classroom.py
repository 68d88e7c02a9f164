"""A class driven in real browsers (Playwright pages), for tests/e2e/test_browser_class.py and
tests/bench/class_load.py: the teacher starts a class, opens the step's question and reveals it;
a student joins by link and answers. Every wait is on what the page shows (a DOM signal), never
a sleep. The lesson's norm step asks whether the stream's norm grows in pre-norm and in post-norm
(two radio groups), so an answer is a pair of GROWTH choices."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from app.lesson.steps import STEPS, TITLES
from app.lesson.steps.attention import ONE_QUERY
from app.lesson.steps.block import LAYERNORM
from tests.e2e.harness import page_summary, wait_ready

SMALL = {"source": "random", "d_model": "64", "num_heads": "4", "num_layers": "2", "d_ff": "128"}
# the paired choice: pre-norm, post-norm
QUESTION_STEP = STEPS.index(LAYERNORM) + 1
TOKEN_STEP = STEPS.index(ONE_QUERY) + 1  # pills
GROWTH = ("grows", "stays about the same", "shrinks")
REFUSED = "Your answer was not counted (the class is unavailable right now)"  # the store away
TEACHER_AWAY = "The class is unavailable right now"  # the teacher's panel or class line
BACK = "Your answer was not counted: send it again."  # the page drawn again, the store back
WAIT_MS = 90_000  # a busy two-core machine running many browsers and servers


def new_page(browser, viewport: dict[str, int]):
    page = browser.new_context(viewport=viewport).new_page()
    page.set_default_timeout(WAIT_MS)
    return page


def main_block(page):
    """The page's main area (not the sidebar)."""
    return page.get_by_test_id("stMainBlockContainer")


def shows(page, what, failed: str, problems=None, timeout_ms: float | None = None) -> None:
    """Until `what` (a locator) is visible on `page` (at most `timeout_ms`, else the page's own
    limit); else a full-page screenshot `failed` and what the page shows (a CI log is all a
    failure leaves), with the websockets it opened where its PageProblems (`problems`) are
    given (more than one: it reconnected)."""
    try:
        what.wait_for(timeout=timeout_ms)
    except Exception as error:
        shot(page, failed, full_page=True)
        sockets = "" if problems is None else f"\nwebsockets opened: {problems.sockets}"
        raise AssertionError(f"{failed}: not shown\n{page_summary(page)}{sockets}") from error


def progress(number: int) -> str:
    """The progress line of lesson step `number`."""
    return f"Step {number} of {len(TITLES)} · {TITLES[number - 1]}"


def on_step(page, number: int) -> None:
    """Until the page shows lesson step `number` (its progress line)."""
    shows(page, main_block(page).get_by_text(progress(number)), "B_class_step_failed.png")


def start_class(teacher, url: str) -> str:
    """Open `url` (the teacher's lesson step) and start a class; its code."""
    teacher.goto(url)
    wait_ready(teacher, WAIT_MS)
    teacher.get_by_text("Teach a class, or join one").click()
    teacher.get_by_role("button", name="Start a class").click()
    code_box = teacher.get_by_test_id("class-code")
    code_box.wait_for()
    code = code_box.inner_text().strip()
    assert re.fullmatch(r"[A-Z0-9]{6}", code), code
    return code


def ask_the_class(teacher) -> None:
    teacher.get_by_role("button", name="Ask the class").click()
    teacher.get_by_text("students answered").wait_for()


def join(student, url: str) -> None:
    """Open the student link and wait until the teacher's question asks for an answer and the
    page is still: a new page loads its widgets' code lazily (skeletons first), and for a moment
    the question moves down and up the page; a click then can miss the radio it aimed at."""
    student.goto(url)
    shows(student, student.get_by_role("button", name="Send"), "B_class_join_failed.png")
    wait_ready(student, WAIT_MS)


def answer(student, pre: str, post: str) -> float:
    """Choose (pre-norm, post-norm) and send; seconds from the click on Send to "Counted"."""
    choose(student, pre, post)
    start = time.perf_counter()
    student.get_by_role("button", name="Send").click()
    counted = student.get_by_text(f"Counted: {pre} / {post}")
    shows(student, counted, "B_class_answer_failed.png")
    return time.perf_counter() - start


def token_choices(student):
    """The answer's token pills on a student's page (the token question of the attention step):
    the group labelled "Your answer", not the page's View switch; Streamlit draws each pill as
    a button with the role "radio", so they are found as buttons, whatever their role."""
    group = main_block(student).get_by_test_id("stButtonGroup")
    return group.filter(has=student.get_by_text("Your answer", exact=True)).locator("button")


def send_token(student, label: str) -> None:
    """Choose the token `label` among the answer's pills (a click on the chosen pill would
    unchoose it: a refused answer keeps its choice), then Send."""
    pill = token_choices(student).filter(has=student.get_by_text(label, exact=True))
    if pill.get_attribute("aria-checked") != "true":
        pill.click()
    main_block(student).get_by_role("button", name="Send").click()


def choose(student, pre: str, post: str) -> None:
    """Choose (pre-norm, post-norm) on a student's answer form, sending nothing."""
    radios = main_block(student).get_by_test_id("stRadio")
    shows(student, radios.nth(1).get_by_text(post, exact=True), "B_class_answer_failed.png")
    radios.nth(0).get_by_text(pre, exact=True).click()
    radios.nth(1).get_by_text(post, exact=True).click()


def seconds_until(page, what, failed: str, since: float) -> float:
    """Seconds from `since` (time.perf_counter) until `what` (a locator) shows on `page`."""
    shows(page, what, failed)
    return time.perf_counter() - since


def tally_reaches(teacher, answered: int) -> None:
    """Wait until the teacher's page counts `answered` answers (it polls the store itself)."""
    tally = teacher.get_by_text(re.compile(rf"^{answered} of \d+ students answered$"))
    shows(teacher, tally, "B_class_tally_failed.png")


def shot(page, name: str, full_page: bool = False) -> None:
    """A screenshot into $SHOTS_DIR (when set); `full_page` for a failure's whole page."""
    folder = os.environ.get("SHOTS_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / name), full_page=full_page)
