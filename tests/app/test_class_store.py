"""The class store's rules on both backends: SQLite (a file) and a real Redis (Debian's
redis-server on a free loopback port; skipped without it, except under CI=true)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.classroom.backend import limits_from_env, open_store
from app.classroom.redis_store import TIMEOUT_S, RedisClassStore
from app.classroom.sqlite_store import SqliteClassStore
from app.classroom.store import (
    CODE_ALPHABET,
    CODE_LENGTH,
    ClassEnded,
    ClassError,
    ClassExpired,
    ClassFull,
    ClassNotFound,
    ClassStoreUnavailable,
    Limits,
    NotTeacher,
    QuestionClosed,
)
from tests.e2e.harness import missing
from tests.e2e.redis_server import RedisServer, redis_server_path

pytestmark = pytest.mark.timeout(120)
LIMITS = Limits(classes=3, students=5, answers=4, nickname=8, hours=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis_server():
    if redis_server_path() is None:
        missing("redis-server")
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def make_store(request, tmp_path):
    """make_store(limits=LIMITS) -> a fresh, empty store of the parameter's kind on a fake clock
    (its `clock`)."""
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        server.flush()

    def make(limits: Limits = LIMITS, clock: Clock | None = None):
        clock = clock or Clock()
        if request.param == "redis":
            return RedisClassStore(server.url, limits, clock)
        return SqliteClassStore(str(tmp_path / "classes.sqlite3"), limits, clock)

    return make


@pytest.fixture
def store(make_store):
    return make_store()


def test_a_new_class_has_a_short_unambiguous_code_and_a_secret_the_state_does_not_show(store):
    made = [store.create() for _ in range(3)]
    for new in made:
        assert len(new.code) == CODE_LENGTH and set(new.code) <= set(CODE_ALPHABET)
        assert len(new.secret) >= 32
        state = store.state(new.code)
        assert new.secret not in repr(state) and state.step == 0 and state.question == ""
    assert len({new.code for new in made}) == 3 and len({new.secret for new in made}) == 3
    assert not set("0O1IL5S2Z8B") & set(CODE_ALPHABET)


def test_a_code_is_found_as_typed_and_a_wrong_one_gets_a_message(store):
    new = store.create()
    typed = f" {new.code[:3].lower()}-{new.code[3:]} "
    assert store.state(typed).code == new.code
    wrong = "".join(c for c in CODE_ALPHABET if c not in new.code)[:CODE_LENGTH]
    with pytest.raises(ClassNotFound, match=f"No class has the code {wrong}: check the code"):
        store.join(wrong)
    with pytest.raises(ClassNotFound, match=r"\(empty\)"):
        store.state("")


def test_a_class_expires_after_its_hours_and_says_so(make_store):
    clock = Clock()
    store = make_store(clock=clock)
    new = store.create()
    clock.now += 2 * 3600 - 1
    student = store.join(new.code)
    clock.now += 1
    with pytest.raises(ClassExpired, match=f"The class {new.code} has expired"):
        store.state(new.code)
    with pytest.raises(ClassExpired):
        store.answer(new.code, student, "q", "a")
    with pytest.raises(ClassExpired):
        store.set_step(new.code, new.secret, 1, {})


def test_only_the_teachers_secret_changes_the_class(store):
    new = store.create()
    student = store.join(new.code)
    before = store.state(new.code)
    for forged in ("", student, new.code, new.secret[:-1], new.secret + "x"):
        for action in (
            lambda s: store.set_step(new.code, s, 3, {"text": "forged"}),
            lambda s: store.open_question(new.code, s, "q"),
            lambda s: store.reveal(new.code, s),
            lambda s: store.end(new.code, s),
            lambda s: store.tally(new.code, "q", s),
        ):
            with pytest.raises(NotTeacher, match="teacher"):
                action(forged)
    assert store.state(new.code) == before
    after = store.set_step(new.code, new.secret, 3, {"text": "The cat sat.", "source": "random"})
    assert (after.step, dict(after.setup), after.version) == (
        3,
        {"text": "The cat sat.", "source": "random"},
        before.version + 1,
    )
    store.end(new.code, new.secret)
    with pytest.raises(ClassEnded, match=f"The class {new.code} has ended"):
        store.join(new.code)


def test_one_answer_per_student_the_last_one_counts_and_the_tally_waits_for_the_reveal(store):
    new = store.create()
    ann, bob, cy = (store.join(new.code, name) for name in ("Ann", "", "<b>Cy<b>"))
    with pytest.raises(QuestionClosed, match="not open"):
        store.answer(new.code, ann, "q1", "cat")
    store.open_question(new.code, new.secret, "q1")
    store.answer(new.code, ann, "q1", "cat")
    store.answer(new.code, ann, "q1", "sat")  # replaces
    store.answer(new.code, bob, "q1", "sat")
    store.answer(new.code, cy, "q1", "the")
    with pytest.raises(QuestionClosed):
        store.answer(new.code, cy, "q0", "the")
    with pytest.raises(ClassError, match="has not joined"):
        store.answer(new.code, "forged-student", "q1", "cat")
    with pytest.raises(NotTeacher, match="when the teacher reveals"):
        store.tally(new.code, "q1")
    tally = store.tally(new.code, "q1", new.secret)
    assert (tally.count, tally.counts) == (3, (("sat", 2), ("the", 1)))
    assert store.my_answer(new.code, ann, "q1") == "sat"
    assert store.nicknames(new.code, new.secret, "q1") == [("<b>Cy<b>", "the"), ("Ann", "sat")]
    with pytest.raises(NotTeacher):
        store.nicknames(new.code, ann, "q1")
    store.reveal(new.code, new.secret)
    assert store.tally(new.code, "q1") == tally  # everyone's now
    with pytest.raises(QuestionClosed, match="revealed"):
        store.answer(new.code, bob, "q1", "cat")
    store.set_step(new.code, new.secret, 1, {})  # the next step closes the question
    assert store.state(new.code).question == ""


def test_every_store_is_bounded(make_store):
    store = make_store()
    classes = [store.create() for _ in range(LIMITS.classes)]
    with pytest.raises(ClassFull, match="already holds 3 classes"):
        store.create()
    code, secret = classes[0].code, classes[0].secret
    students = [store.join(code) for _ in range(LIMITS.students)]
    with pytest.raises(ClassFull, match=r"is full \(5 students\)"):
        store.join(code)
    with pytest.raises(ClassError, match="nickname is 9 characters long; at most 8"):
        store.join(classes[1].code, "n" * 9)
    assert store.join(classes[1].code, "\x00Al\u202ei\n") and store.students(classes[1].code) == 1
    store.open_question(code, secret, "q")
    for student in students[: LIMITS.answers]:
        store.answer(code, student, "q", "x")
    with pytest.raises(ClassFull, match="already has 4 answers"):
        store.answer(code, students[-1], "q", "x")
    store.answer(code, students[0], "q", "y")  # replacing stays allowed at the bound
    with pytest.raises(ClassError, match="answer is 65 characters"):
        store.answer(code, students[0], "q", "a" * 65)
    with pytest.raises(ClassError, match="too long to share with the class"):
        store.set_step(code, secret, 1, {"text": "x" * 5000})


def test_expired_classes_leave_room_for_new_ones(make_store):
    clock = Clock()
    store = make_store(clock=clock)
    for _ in range(LIMITS.classes):
        store.create()
    clock.now += LIMITS.hours * 3600
    assert store.state(store.create().code).step == 0


def test_concurrent_answers_from_many_threads_are_counted_exactly_once(make_store):
    store = make_store(Limits(students=60, answers=60))
    new = store.create()
    store.open_question(new.code, new.secret, "q")
    students = [store.join(new.code) for _ in range(40)]
    last: dict[str, str] = {}
    lock = threading.Lock()

    def student_answers(index: int) -> None:
        student = students[index]
        for round_ in range(3):  # each student changes their mind twice
            value = f"token{(index + round_) % 5}"
            store.answer(new.code, student, "q", value)
            with lock:
                last[student] = value

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(student_answers, range(len(students))))
    tally = store.tally(new.code, "q", new.secret)
    assert tally.count == 40
    assert dict(tally.counts) == dict(Counter(last.values()))


LOADED_MACHINE_S = 0.5  # room for a busy CI machine; the page must still warn within 2 s


def test_a_paused_redis_refuses_with_a_message_and_the_class_goes_on_when_it_is_back(
    redis_server,
):
    redis_server.flush()
    store = RedisClassStore(redis_server.url, LIMITS)
    new = store.create()
    student = store.join(new.code)
    store.open_question(new.code, new.secret, "q")
    redis_server.pause()
    try:
        for call in (
            lambda: store.answer(new.code, student, "q", "cat"),
            lambda: store.state(new.code),
        ):  # each gives up after one timeout, not two (no retry on a timeout)
            start = time.perf_counter()
            with pytest.raises(ClassStoreUnavailable, match="The class is unavailable right now"):
                call()
            assert time.perf_counter() - start < 2 * TIMEOUT_S + LOADED_MACHINE_S
    finally:
        redis_server.resume()
    store.answer(new.code, student, "q", "cat")
    assert store.tally(new.code, "q", new.secret).count == 1


def test_a_redis_that_is_gone_is_unavailable_not_a_traceback():
    if redis_server_path() is None:
        missing("redis-server")
    server = RedisServer()
    store = RedisClassStore(server.url, LIMITS)
    new = store.create()
    server.stop()
    with pytest.raises(ClassStoreUnavailable) as refused:
        store.state(new.code)
    assert "Redis" in refused.value.detail and "Redis" not in str(refused.value)  # the log's
    with pytest.raises(ClassStoreUnavailable):
        store.create()


def test_a_locked_sqlite_file_is_unavailable_and_a_second_process_sees_the_same_classes(
    tmp_path,
):
    path = str(tmp_path / "classes.sqlite3")
    first, second = SqliteClassStore(path, LIMITS), SqliteClassStore(path, LIMITS, timeout=0.2)
    new = first.create()
    student = second.join(new.code)
    first.open_question(new.code, new.secret, "q")
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(ClassStoreUnavailable) as refused:
            second.answer(new.code, student, "q", "cat")
        assert refused.value.detail == "SQLite: database is locked"  # for the log
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    second.answer(new.code, student, "q", "cat")
    assert first.tally(new.code, "q", new.secret).count == 1


def test_the_environment_picks_the_backend_and_the_hours(tmp_path, redis_server):
    db = str(tmp_path / "c.sqlite3")
    assert isinstance(open_store({"ENCODER_EXPLORER_CLASS_DB": db}), SqliteClassStore)
    chosen = open_store({"ENCODER_EXPLORER_REDIS_URL": redis_server.url})
    assert isinstance(chosen, RedisClassStore)
    assert limits_from_env({"ENCODER_EXPLORER_CLASS_HOURS": "0.5"}).hours == 0.5
    with pytest.raises(ValueError, match=r"ENCODER_EXPLORER_CLASS_HOURS='soon' is not a number"):
        limits_from_env({"ENCODER_EXPLORER_CLASS_HOURS": "soon"})
    with pytest.raises(ValueError, match="at most 168 hours"):
        limits_from_env({"ENCODER_EXPLORER_CLASS_HOURS": "1000"})
