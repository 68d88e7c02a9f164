"""A class in real browsers, each member in a browser context of its own: a teacher (presenter
mode) and three students on one server (SQLite); a student who forges the teacher's link, or
replays the teacher's own "Reveal to everyone" request on their socket, changes nothing; a wrong
code and an expired class are messages; two replicas behind nginx sharing Redis, the teacher on
one and three students (on the teacher's replica, on the other, through nginx), and Redis going
away and coming back; and one server on Redis paused during a question, timed: the teacher's
warning, a student's refused Send, the teacher's page back by itself, each within 2 s.
Screenshots go to $SHOTS_DIR when it is set."""

from __future__ import annotations

import os
import time

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg

from app.classroom.sqlite_store import SqliteClassStore
from app.classroom.store import Limits
from tests.e2e.classroom import (
    BACK,
    QUESTION_STEP,
    REFUSED,
    SMALL,
    TEACHER_AWAY,
    TOKEN_STEP,
    answer,
    ask_the_class,
    choose,
    join,
    main_block,
    new_page,
    on_step,
    seconds_until,
    send_token,
    shot,
    shows,
    start_class,
    tally_reaches,
    token_choices,
)
from tests.e2e.harness import (
    PHONE,
    PROJECTOR,
    PageProblems,
    StreamlitServer,
    missing,
    wait_ready,
    wait_settled,
)
from tests.e2e.proxy import replicas_behind_nginx
from tests.e2e.redis_server import RedisServer, redis_server_path
from tests.e2e.sockets import RoutedSocket, whole_page

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
    shows(forger, forger.get_by_role("button", name="Send"), "B_class_forger_failed.png")
    assert forger.get_by_role("button", name="Reveal to everyone").count() == 0
    assert forger.get_by_role("button", name="Ask the class").count() == 0
    assert forger.get_by_test_id("class-code").count() == 0
    assert SqliteClassStore(class_db).state(code).revealed is False

    teacher.get_by_role("button", name="Reveal to everyone").click()
    revealed = students[1].get_by_text("your guess: grows / stays about the same")
    shows(students[1], revealed, "B_class_reveal_failed.png")
    wait_settled(students[1])
    assert students[1].get_by_role("switch", name="Follow the teacher").is_checked()
    shot(students[1], "B_class_student_phone_revealed.png")
    for page in (*students, forger, teacher):
        page.context.close()


def test_students_follow_to_the_token_question_answer_it_and_no_page_breaks(browser, class_server):
    """The teacher moves the class onto the step that asks for a token; each student lands on
    it, answers with a token and is counted, and no page logs an error while the class polls
    (a timer's tick during the step's rerun once blanked a student's page: "Bad delta path
    index")."""
    teacher = new_page(browser, PROJECTOR)
    problems = [PageProblems(teacher)]
    url = class_server.page_url(view="Lesson", lesson=TOKEN_STEP - 1, present=1, **SMALL)
    code = start_class(teacher, url)
    students = []
    for _ in range(2):
        page = new_page(browser, PHONE)
        problems.append(PageProblems(page))
        page.goto(class_server.page_url(**{"class": code}))
        on_step(page, TOKEN_STEP - 1)
        students.append(page)
    wait_settled(teacher)
    main_block(teacher).get_by_role("button", name="Next ▶").click()
    for page in students:
        on_step(page, TOKEN_STEP)
    ask_the_class(teacher)
    for number, page in enumerate(students):
        shows(page, token_choices(page).first, "B_class_tokens_failed.png")
        wait_ready(page)
        label = token_choices(page).all_inner_texts()[number + 1]
        send_token(page, label)
        shows(page, main_block(page).get_by_text(f"Counted: {label}"), "B_class_token_failed.png")
    tally_reaches(teacher, 2)
    teacher.wait_for_timeout(3000)  # several polls of every page after the step's rerun
    for page in (teacher, *students):
        assert page.get_by_test_id("stException").count() == 0
        page.context.close()
    assert [line for seen in problems for line in seen.errors + seen.dialogs] == []


def test_a_student_who_replays_the_teachers_reveal_changes_nothing(browser, class_server, class_db):
    """The teacher's click on "Reveal to everyone" is held back on its way to the server; the
    student sends that very request on their own socket, as it was (a run of the teacher's
    question fragment) and as a run of the whole page carrying the click: the class is not
    revealed and neither page changes. Then the student asks the server to clear its caches
    (Streamlit takes that from any session, and empties the asking session's state): their
    page is drawn again, joined again, with no traceback. Let go on the teacher's socket, the
    held request reveals the class to the student (what was replayed was a working reveal,
    and the class outlived the cleared caches)."""
    teacher = new_page(browser, PROJECTOR)
    teachers_socket = RoutedSocket(teacher, hold="class_reveal")
    url = class_server.page_url(view="Lesson", lesson=QUESTION_STEP, present=1, **SMALL)
    code = start_class(teacher, url)
    ask_the_class(teacher)
    student = new_page(browser, PHONE)
    students_socket = RoutedSocket(student)
    join(student, class_server.page_url(**{"class": code}))
    answer(student, "grows", "shrinks")
    tally_reaches(teacher, 1)

    teacher.get_by_role("button", name="Reveal to everyone").click()
    teachers_socket.wait(lambda: teachers_socket.held, "the teacher's reveal request")
    reveal = teachers_socket.held[0]
    ran = students_socket.pages_run
    students_socket.send(reveal)
    students_socket.send(whole_page(reveal))
    students_socket.wait(lambda: students_socket.pages_run > ran, "the student's page run")
    wait_settled(student)
    assert SqliteClassStore(class_db).state(code).revealed is False
    assert main_block(student).get_by_text("Counted: grows / shrinks").is_visible()
    assert student.get_by_text("The answer:").count() == 0  # not revealed
    assert student.get_by_role("button", name="Reveal to everyone").count() == 0
    assert student.get_by_test_id("stException").count() == 0
    assert teacher.get_by_role("button", name="Reveal to everyone").is_visible()

    ran = students_socket.pages_run
    students_socket.send(BackMsg(clear_cache=True).SerializeToString())
    students_socket.wait(lambda: students_socket.pages_run > ran, "the page drawn again")
    shows(student, student.get_by_role("button", name="Send"), "B_class_cleared_failed.png")
    wait_settled(student)
    shot(student, "B_class_student_cleared.png")
    assert student.get_by_test_id("stException").count() == 0
    assert SqliteClassStore(class_db).state(code).revealed is False

    teachers_socket.release()  # the teacher's own request, on the teacher's socket
    shows(student, student.get_by_text("The answer:"), "B_class_replay_reveal_failed.png")
    assert SqliteClassStore(class_db).state(code).revealed is True
    for page in (student, teacher):
        assert page.get_by_test_id("stException").count() == 0
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
        same_replica = new_page(browser, PHONE)
        join(same_replica, first.page_url(**{"class": code}))
        answer(same_replica, "shrinks", "grows")
        other_replica = new_page(browser, PHONE)
        join(other_replica, second.page_url(**{"class": code}))
        answer(other_replica, "grows", "shrinks")
        via_nginx = new_page(browser, PHONE)
        join(via_nginx, proxy.page_url(**{"class": code}))
        tally_reaches(teacher, 2)

        redis.pause()  # unreachable: the answer is refused with a message, the page goes on
        try:
            radios = via_nginx.get_by_test_id("stMainBlockContainer").get_by_test_id("stRadio")
            radios.nth(0).get_by_text("grows", exact=True).click()
            radios.nth(1).get_by_text("grows", exact=True).click()
            via_nginx.get_by_role("button", name="Send").click()
            shows(via_nginx, via_nginx.get_by_text(REFUSED), "B_class_refused_failed.png")
            shot(via_nginx, "B_class_store_away.png")
            assert via_nginx.get_by_test_id("stException").count() == 0
        finally:
            redis.resume()
        back = via_nginx.get_by_text(BACK)  # the store back: the page drawn again
        shows(via_nginx, back, "B_class_back_failed.png")
        shot(via_nginx, "B_class_store_back.png")
        answer(via_nginx, "grows", "grows")  # sent again, counted
        tally_reaches(teacher, 3)
        for page in (teacher, same_replica, other_replica, via_nginx):
            assert page.get_by_test_id("stException").count() == 0
            page.context.close()


AWAY_WITHIN_S = 2.0  # the store gone or back: each page says so within this


@pytest.fixture(scope="module")
def redis_class_server(browser, redis):
    env = {**os.environ, "ENCODER_EXPLORER_REDIS_URL": redis.url}
    running = StreamlitServer(env=env)
    yield running
    running.stop()


def test_a_teachers_page_says_the_store_is_away_and_comes_back_by_itself(
    browser, redis, redis_class_server
):
    """Redis paused during a question: the teacher's page says the class is unavailable within
    2 s, with no click; a student's Send is refused within 2 s; the teacher's page drawn again
    in full while Redis is away (Presenter switched on) comes back by itself, tally and "Reveal
    to everyone", within 2 s of Redis' return; the student's answer, sent again, counts once."""
    teacher = new_page(browser, PROJECTOR)
    lesson = redis_class_server.page_url(view="Lesson", lesson=QUESTION_STEP, **SMALL)
    code = start_class(teacher, lesson)
    ask_the_class(teacher)
    student = new_page(browser, PHONE)
    join(student, redis_class_server.page_url(**{"class": code}))
    answer(student, "grows", "grows")
    tally_reaches(teacher, 1)
    choose(student, "shrinks", "grows")  # the answer the student sends while Redis is away
    reveal = teacher.get_by_role("button", name="Reveal to everyone")
    redis.pause()
    try:
        warned = seconds_until(
            teacher,
            main_block(teacher).get_by_text(TEACHER_AWAY).first,
            "B_class_teacher_away_failed.png",
            time.perf_counter(),
        )
        shot(teacher, "B_class_teacher_store_away.png")
        student.get_by_role("button", name="Send").click()
        refused = seconds_until(
            student, student.get_by_text(REFUSED), "B_class_refused_failed.png", time.perf_counter()
        )
        # the lesson bar's Presenter button: the whole page runs, Redis away
        main_block(teacher).get_by_role("button", name="Presenter").click()
        wait_settled(teacher)
        # presenter mode's page: the switch gives way to its exit button
        shows(
            teacher,
            teacher.get_by_role("button", name="Exit presenter mode"),
            "B_class_teacher_presenter_failed.png",
        )
        assert main_block(teacher).get_by_text(TEACHER_AWAY).count() >= 1 and reveal.count() == 0
        shot(teacher, "B_class_teacher_rerun_away.png")
    finally:
        redis.resume()
    back = seconds_until(teacher, reveal, "B_class_teacher_back_failed.png", time.perf_counter())
    tally_reaches(teacher, 1)
    wait_settled(teacher)
    assert main_block(teacher).get_by_text(TEACHER_AWAY).count() == 0  # no stale message left
    shot(teacher, "B_class_teacher_store_back.png")
    print(
        f"\nthe teacher warned {warned:.2f} s after the pause; a Send refused in {refused:.2f} s; "
        f"the teacher's page back {back:.2f} s after Redis"
    )
    assert max(warned, refused, back) <= AWAY_WITHIN_S, (warned, refused, back)

    # the student's page drawn again by itself: the answer counted before the outage stands
    shows(student, student.get_by_text("Counted: grows / grows"), "B_class_back_failed.png")
    answer(student, "shrinks", "grows")  # sent again: counted, in place of the first
    tally_reaches(teacher, 1)
    for page in (teacher, student):
        assert page.get_by_test_id("stException").count() == 0
        page.context.close()
