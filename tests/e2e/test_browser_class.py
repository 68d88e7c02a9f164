"""A class in real browsers, each member in a browser context of its own: a teacher (presenter
mode) and three students on one server (SQLite); a student who forges the teacher's link changes
nothing; a wrong code and an expired class are messages; two replicas behind nginx sharing
Redis, the teacher on one and a student on the other, and Redis going away and coming back.
Screenshots go to $SHOTS_DIR when it is set."""

from __future__ import annotations

import os
import time

import pytest

from app.classroom.sqlite_store import SqliteClassStore
from app.classroom.store import Limits
from tests.e2e.classroom import (
    PHONE,
    PROJECTOR,
    QUESTION_STEP,
    SMALL,
    TOKEN_STEP,
    answer,
    ask_the_class,
    join,
    new_page,
    send_token,
    shot,
    start_class,
    tally_reaches,
    token_choices,
)
from tests.e2e.harness import StreamlitServer, missing, wait_settled
from tests.e2e.proxy import replicas_behind_nginx
from tests.e2e.redis_server import RedisServer, redis_server_path

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def class_db(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("class") / "classes.db")


@pytest.fixture(scope="module")
def class_server(browser, class_db):
    env = {**os.environ, "ENCODER_EXPLORER_CLASS_DB": class_db}
    env.pop("ENCODER_EXPLORER_REDIS_URL", None)
    running = StreamlitServer(env=env)
    yield running
    running.stop()


def test_a_teacher_and_three_students_answer_and_the_tally_counts_each_once(
    browser, class_server, class_db
):
    teacher = new_page(browser, PROJECTOR)
    teacher_url = class_server.page_url(view="Lesson", lesson=QUESTION_STEP, present=1, **SMALL)
    code = start_class(teacher, teacher_url)
    ask_the_class(teacher)
    students = []
    for pre, post in (("grows", "grows"), ("shrinks", "grows"), ("grows", "grows")):
        page = new_page(browser, PHONE)
        join(page, class_server.page_url(**{"class": code}))
        answer(page, pre, post)
        students.append(page)
    answer(students[1], "grows", "stays about the same")  # a second answer replaces the first
    shot(students[1], "B_class_student_phone.png")
    tally_reaches(teacher, 3)
    teacher.get_by_role("button", name="Reveal to everyone").scroll_into_view_if_needed()
    shot(teacher, "B_class_teacher_presenter_tally.png")
    teacher.get_by_text("3 of 3 students answered").wait_for()  # four answers, three students

    # a student opening the teacher's own link (presenter mode, the class) stays a student
    forger = new_page(browser, PHONE)
    forger.goto(teacher_url + f"&class={code}&_class_teacher={code},guess&class_reveal=1")
    forger.get_by_role("button", name="Send").wait_for()
    assert forger.get_by_role("button", name="Reveal to everyone").count() == 0
    assert forger.get_by_role("button", name="Ask the class").count() == 0
    assert forger.get_by_test_id("class-code").count() == 0
    assert SqliteClassStore(class_db).state(code).revealed is False

    teacher.get_by_role("button", name="Reveal to everyone").click()
    students[1].get_by_text("your guess: grows / stays about the same").wait_for()
    wait_settled(students[1])
    assert students[1].get_by_role("switch", name="Follow the teacher").is_checked()
    shot(students[1], "B_class_student_phone_revealed.png")
    for page in (*students, forger, teacher):
        page.context.close()


def test_a_student_answers_the_attention_steps_token_question(browser, class_server):
    """The token question (pills, the step's explorer held back until the reveal): a student
    picks a token, sends it and the teacher's tally counts it."""
    teacher = new_page(browser, PROJECTOR)
    code = start_class(teacher, class_server.page_url(view="Lesson", lesson=TOKEN_STEP, **SMALL))
    ask_the_class(teacher)
    student = new_page(browser, PHONE)
    join(student, class_server.page_url(**{"class": code}))
    tokens = token_choices(student).all_inner_texts()
    assert tokens[:3] == ["0: [CLS]", "1: the", "2: animal"]
    send_token(student, tokens[2])
    student.get_by_text(f"Counted: {tokens[2]}").wait_for()
    tally_reaches(teacher, 1)
    for page in (teacher, student):
        page.context.close()


def test_a_wrong_code_and_an_expired_class_are_messages(browser, class_server, class_db):
    page = new_page(browser, PHONE)
    page.goto(class_server.page_url(**{"class": "KKKKKK"}))
    page.get_by_text("No class has the code KKKKKK: check the code.").wait_for()
    past = SqliteClassStore(class_db, Limits(hours=1), clock=lambda: time.time() - 7200)
    code = past.create().code
    page.goto(class_server.page_url(**{"class": code}))
    page.get_by_text(f"The class {code} has expired").wait_for()
    wait_settled(page)
    assert page.get_by_test_id("stException").count() == 0
    page.context.close()


@pytest.fixture(scope="module")
def redis():
    if redis_server_path() is None:
        missing("redis-server")
    server = RedisServer()
    yield server
    server.stop()


def test_two_replicas_share_a_class_through_redis_and_survive_it_going_away(
    browser, nginx, redis, tmp_path
):
    env = {**os.environ, "ENCODER_EXPLORER_REDIS_URL": redis.url}
    with replicas_behind_nginx(2, tmp_path, env) as (proxy, (first, second)):
        teacher = new_page(browser, PROJECTOR)
        code = start_class(
            teacher, first.page_url(view="Lesson", lesson=QUESTION_STEP, present=1, **SMALL)
        )
        ask_the_class(teacher)
        other_replica = new_page(browser, PHONE)
        join(other_replica, second.page_url(**{"class": code}))
        answer(other_replica, "grows", "shrinks")
        via_nginx = new_page(browser, PHONE)
        join(via_nginx, proxy.page_url(**{"class": code}))
        tally_reaches(teacher, 1)

        redis.pause()  # unreachable: the answer is refused with a message, the page goes on
        try:
            radios = via_nginx.get_by_test_id("stMainBlockContainer").get_by_test_id("stRadio")
            radios.nth(0).get_by_text("grows", exact=True).click()
            radios.nth(1).get_by_text("grows", exact=True).click()
            via_nginx.get_by_role("button", name="Send").click()
            via_nginx.get_by_text("The class is unavailable right now").first.wait_for()
            assert via_nginx.get_by_test_id("stException").count() == 0
        finally:
            redis.resume()
        answer(via_nginx, "grows", "grows")  # back: sent again, counted
        tally_reaches(teacher, 2)
        for page in (teacher, other_replica, via_nginx):
            assert page.get_by_test_id("stException").count() == 0
            page.context.close()
