"""A class on the Lesson's page (AppTest, one session per browser): the teacher starts it, students
land on the teacher's step, answer, and the teacher's tally counts them; what a student forges
changes nothing; a wrong code, an expired class and a store that is away are messages."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from app import run_cache
from app.classroom.sqlite_store import SqliteClassStore
from app.classroom.store import ClassStoreUnavailable, Limits
from app.controls.classroom import class_store
from app.lesson.steps import STEPS
from app.lesson.steps.attention import ONE_QUERY
from app.lesson.steps.block import LAYERNORM
from tests.app.helpers import assert_no_exception, open_page, shown
from tests.e2e.harness import free_port

pytestmark = pytest.mark.timeout(300)
NORM_STEP = STEPS.index(LAYERNORM) + 1  # its question: a pair of choices
TOKEN_STEP = STEPS.index(ONE_QUERY) + 1  # its question: a token
SMALL = {"source": "random", "d_model": "64", "num_heads": "4", "num_layers": "2", "d_ff": "128"}


def warnings(at: AppTest) -> list[str]:
    return [shown(w.value) for w in at.warning]


def start_class(at: AppTest) -> str:
    at.button(key="class_start").click().run()
    assert_no_exception(at)
    return at.session_state["_class_teacher"][0]


def test_students_follow_the_teacher_and_their_answers_are_counted_once(store_path):
    teacher = open_page(view="Lesson", lesson=str(NORM_STEP + 1), **SMALL)
    code = start_class(teacher)
    secret = teacher.session_state["_class_teacher"][1]
    assert all(secret not in str(value) for value in teacher.query_params.values())
    assert any(code in m.value for m in teacher.markdown)
    teacher.button(key="lesson_previous").click().run()  # the norm step: its question
    teacher.button(key="class_open").click().run()
    students = [open_page(**{"class": code.lower()}) for _ in range(2)]
    for student in students:
        student.run()  # the first poll follows the teacher
        assert_no_exception(student)
        assert student.query_params["lesson"] == str(NORM_STEP)
        assert student.query_params["d_model"] == "64"
        assert secret not in str(student.session_state["_class_student"])
    first, second = students

    def answer(student: AppTest, pre: str, post: str) -> None:  # the pre- and post-norm parts
        student.radio(key="predict_choice").set_value(pre)  # in a form: sent with Send
        student.radio(key="predict_choice_2").set_value(post)
        student.button(key="class_send").click().run()

    answer(first, "shrinks", "grows")
    answer(first, "grows", "stays about the same")  # a second answer replaces the first
    assert any("Counted: grows / stays about the same" in shown(s.value) for s in first.success)
    answer(second, "grows", "stays about the same")
    teacher.run()
    assert any(m.value == "**2 of 2** students answered" for m in teacher.markdown)
    tally = teacher.dataframe[0].value
    counts = dict(zip(tally["answer"], tally["students"], strict=True))
    assert counts == {"grows / stays about the same": 2}
    teacher.button(key="class_reveal").click().run()
    first.run()
    assert any("your guess: grows / stays about the same" in shown(s.value) for s in first.success)
    assert first.toggle(key="class_follow").value  # still following after the reveal


def test_the_token_question_is_answered_by_a_student_and_counted(store_path):
    """The attention step asks for a token (pills) and draws its explorer only with the reveal:
    a student who followed the teacher there answers it, and the tally counts the answer."""
    teacher = open_page(view="Lesson", lesson=str(TOKEN_STEP - 1), **SMALL)
    code = start_class(teacher)
    student = open_page(**{"class": code})
    student.run()  # follows the teacher to the step before the question
    teacher.button(key="lesson_next").click().run()
    teacher.button(key="class_open").click().run()
    assert teacher.get("bidi_component") == []  # the explorer would give the answer away
    student.run()
    assert_no_exception(student)
    assert student.query_params["lesson"] == str(TOKEN_STEP)
    (question,) = student.subheader[:1]
    assert question.value == teacher.subheader[0].value
    pills = next(p for p in student.get("button_group") if p.key == "predict_token")
    tokens = [option.content for option in pills.proto.options]
    assert tokens[:3] == ["0: [CLS]", "1: the", "2: animal"]  # the sentence's tokens, in order
    pills.set_value(tokens[2])  # in a form: sent with Send
    student.button(key="class_send").click().run()
    assert any(f"Counted: {tokens[2]}" in shown(s.value) for s in student.success)
    teacher.run()
    assert any(m.value == "**1 of 1** students answered" for m in teacher.markdown)
    tally = teacher.dataframe[0].value
    assert dict(zip(tally["answer"], tally["students"], strict=True)) == {tokens[2]: 1}
    teacher.button(key="class_reveal").click().run()
    student.run()
    assert any(f"your guess: {tokens[2]}" in shown(s.value) for s in student.success)
    assert len(student.get("bidi_component")) == 1  # the step's explorer, with the reveal


def test_a_student_cannot_act_for_the_teacher_whatever_the_link(store_path):
    teacher = open_page(view="Lesson", lesson="3", **SMALL)
    code = start_class(teacher)
    before = SqliteClassStore(store_path).state(code)
    forged = {"class": code, "_class_teacher": f"{code},x", "class_open": "1", "lesson": "9"}
    student = open_page(**forged)
    student.run()
    assert_no_exception(student)
    assert (
        "_class_teacher" not in student.session_state or not student.session_state["_class_teacher"]
    )
    assert not any(b.key in ("class_open", "class_reveal", "class_end") for b in student.button)
    assert SqliteClassStore(store_path).state(code) == before


def test_a_wrong_code_and_an_expired_class_are_messages(store_path):
    at = open_page(**{"class": "KKKKKK"})
    assert_no_exception(at)
    assert "No class has the code KKKKKK: check the code." in warnings(at)
    old = SqliteClassStore(store_path, Limits(hours=1), clock=lambda: time.time() - 7200)
    code = old.create().code
    at = open_page(**{"class": code})
    assert any(f"The class {code} has expired" in w for w in warnings(at))
    assert at.main.header  # the lesson is drawn all the same


def test_a_store_that_is_away_leaves_the_page_working_and_says_so(store_path, monkeypatch):
    monkeypatch.setenv("ENCODER_EXPLORER_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    class_store.clear()
    at = open_page(view="Lesson", lesson=str(NORM_STEP), **SMALL)
    at.button(key="class_start").click().run()
    assert_no_exception(at)
    assert any(w.startswith("The class is unavailable right now") for w in warnings(at))
    assert not any("Redis" in w or "127.0.0.1" in w for w in warnings(at))  # the log's, not theirs
    assert at.subheader  # the step's question is still asked


def test_an_answer_refused_while_the_store_is_away_is_asked_again_once_it_is_back(
    store_path, monkeypatch
):
    """The store is away for the Send alone (between two of the poll's reads): once the poll
    finds it back, the page is drawn again, without the outage's message, and says the answer
    was not counted; sent again, it is counted. With the whole store away, the question stays
    on the page with the student's choices, and the outage is said once."""
    teacher = open_page(view="Lesson", lesson=str(NORM_STEP), **SMALL)
    code = start_class(teacher)
    teacher.button(key="class_open").click().run()
    student = open_page(**{"class": code})
    student.run()
    store = class_store()

    def away(*_args) -> None:
        raise ClassStoreUnavailable("Redis: Timeout reading from socket")

    with monkeypatch.context() as outage:
        outage.setattr(store, "answer", away)
        student.radio(key="predict_choice").set_value("grows")
        student.radio(key="predict_choice_2").set_value("shrinks")
        student.button(key="class_send").click().run()
    assert_no_exception(student)
    assert not any("unavailable" in w for w in warnings(student))  # the poll drew it again
    assert [shown(i.value) for i in student.info] == ["Your answer was not counted: send it again."]
    student.button(key="class_send").click().run()  # the choices are kept: Send again
    assert any("Counted: grows / shrinks" in shown(s.value) for s in student.success)
    assert not student.info

    with monkeypatch.context() as outage:  # the whole store away: the question stays asked
        outage.setattr(store, "state", away)
        student.radio(key="predict_choice").set_value("shrinks")
        student.button(key="class_send").click().run()
        assert_no_exception(student)
        assert sum("unavailable" in w for w in warnings(student)) == 1  # said once
        assert student.radio(key="predict_choice").value == "shrinks"
        assert [shown(i.value) for i in student.info] == [
            "Your answer was not counted (the class is unavailable right now): send it again."
        ]
    student.run()  # back (the poll's rerun)
    assert not warnings(student)
    student.button(key="class_send").click().run()
    assert any("Counted: shrinks / shrinks" in shown(s.value) for s in student.success)


def test_a_students_step_is_the_teachers_cached_run(store_path, monkeypatch):
    """Thirty students landing on the teacher's step run no forward pass of their own."""
    teacher = open_page(view="Lesson", lesson=str(NORM_STEP), **SMALL)
    code = start_class(teacher)
    built = []
    build = run_cache._build_run
    monkeypatch.setattr(
        run_cache, "_build_run", lambda key, *rest: built.append(key) or build(key, *rest)
    )
    student = open_page(**{"class": code})
    student.run()  # follows the teacher to the norm step (the question's two runs included)
    assert_no_exception(student)
    assert student.query_params["lesson"] == str(NORM_STEP)
    assert student.query_params["d_model"] == "64"
    assert [key for key in built if key.cfg.d_model == 64] == []


def test_the_landing_run_is_warmed_once_per_process(monkeypatch):
    built = []
    build = run_cache._build_run
    monkeypatch.setattr(
        run_cache, "_build_run", lambda key, *rest: built.append(key) or build(key, *rest)
    )
    run_cache.warm_landing.clear()
    text = "A sentence only this test warms."
    run_cache.warm_landing(text).join(timeout=120)
    assert run_cache.warm_landing(text) is run_cache.warm_landing(text)  # one thread per process
    (key,) = built
    cfg = run_cache.pretrained_config()
    source = run_cache.built_in("pretrained", cfg)
    assert key == run_cache.run_key(cfg, source, "cpu", [text], None)
    run_cache.run_for(cfg, source, "cpu", [text], None)  # the landing page's run: a cache hit
    assert len(built) == 1


def test_a_student_who_joins_while_the_store_is_away_joins_once_it_is_back(store_path, monkeypatch):
    """The page says the class goes on when the store is back: a join that found it away keeps
    the code, and the page's watch joins once the store answers (it dropped the code: a dead
    end until the student opened the link again)."""
    teacher = open_page(view="Lesson", lesson=str(NORM_STEP), **SMALL)
    code = start_class(teacher)
    store = class_store()

    def away(*_args) -> None:
        raise ClassStoreUnavailable("Redis: Timeout reading from socket")

    with monkeypatch.context() as outage:
        outage.setattr(store, "join", away)
        outage.setattr(store, "state", away)
        student = open_page(**{"class": code})
        assert_no_exception(student)
        assert any(w.startswith("The class is unavailable right now") for w in warnings(student))
        assert student.session_state["class"] == code  # kept for the join
        student.run()  # a tick of the watch, the store still away
        assert "_class_student" not in student.session_state
    student.run()  # the watch's rerun once the store answers
    assert_no_exception(student)
    assert student.session_state["_class_student"][0] == code
    assert not warnings(student)
