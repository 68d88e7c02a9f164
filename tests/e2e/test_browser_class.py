"""A class in real browsers: a teacher (presenter mode) and three students in separate browser
contexts on one server; the students land on the teacher's step, answer on phone-sized pages, and
the teacher's tally counts each answer once, live. Screenshots go to $SHOTS_DIR when it is set."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.e2e.harness import StreamlitServer, wait_settled

pytestmark = [pytest.mark.browser, pytest.mark.timeout(400)]
SMALL = {"source": "random", "d_model": "64", "num_heads": "4", "num_layers": "2", "d_ff": "128"}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def class_server(browser, tmp_path_factory):
    env = {**os.environ, "ENCODER_EXPLORER_CLASS_DB": str(tmp_path_factory.mktemp("c") / "c.db")}
    env.pop("ENCODER_EXPLORER_REDIS_URL", None)
    running = StreamlitServer(env=env)
    yield running
    running.stop()


def shot(page, name: str) -> None:
    folder = os.environ.get("SHOTS_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / name), full_page=False)


def test_a_teacher_and_three_students_answer_and_the_tally_counts_each_once(browser, class_server):
    teacher = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    teacher.set_default_timeout(90_000)
    teacher.goto(class_server.page_url(view="Lesson", lesson=7, present=1, **SMALL))
    wait_settled(teacher, 60_000)
    teacher.get_by_text("Teach a class, or join one").click()
    teacher.get_by_role("button", name="Start a class").click()
    code_box = teacher.get_by_test_id("class-code")
    code_box.wait_for()
    code = code_box.inner_text().strip()
    assert re.fullmatch(r"[A-Z0-9]{6}", code)
    teacher.get_by_role("button", name="Ask the class").click()
    teacher.get_by_text("0 of 0").or_(teacher.get_by_text("students answered")).first.wait_for()
    students = []
    for answer in ("grows", "shrinks", "grows"):
        page = browser.new_context(viewport=PHONE).new_page()
        page.set_default_timeout(90_000)  # three pages at once on a busy machine
        page.goto(class_server.page_url(**{"class": code}))
        wait_settled(page, 60_000)
        page.get_by_role("button", name="Send").wait_for(timeout=30_000)
        page.get_by_test_id("stRadio").get_by_text(answer, exact=True).click()
        page.get_by_role("button", name="Send").click()
        page.get_by_text(f"Counted: {answer}").wait_for(timeout=30_000)
        students.append(page)
    shot(students[0], "class_student_phone.png")
    teacher.get_by_text("3 of 3").wait_for(timeout=30_000)  # the tally refreshes itself
    shot(teacher, "class_teacher_presenter_tally.png")
    teacher.get_by_role("button", name="Reveal to everyone").click()
    students[1].get_by_text("your guess: shrinks").wait_for(timeout=30_000)
    shot(students[1], "class_student_phone_revealed.png")
