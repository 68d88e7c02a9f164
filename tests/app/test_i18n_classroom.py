"""What the class store tells a teacher or a student (app.classroom, domain "classroom"), in their
language: the store says its refusals with `Said` (English, byte-identical to before), and the
page tells them (app.i18n.told) with the catalogue's translation, the values (a code, a count)
put in after; a student who joins with a wrong code reads it in the page's language, and the
pseudo-language wraps it (the sentence is marked)."""

from __future__ import annotations

import pytest

from app import i18n
from app.classroom.sqlite_store import SqliteClassStore
from app.classroom.store import (
    ClassError,
    ClassFull,
    ClassNotFound,
    ClassStoreUnavailable,
    Limits,
    NotTeacher,
)
from app.i18n.catalogue import PSEUDO, translations
from app.lesson.steps import STEPS
from app.lesson.steps.block import NUMPY_BLOCK
from tests.app.helpers import assert_no_exception, open_page, shown

pytestmark = pytest.mark.timeout(300)
LANGUAGES = ("es", "zh", "ar")
SMALL = {"source": "random", "d_model": "64", "num_heads": "4", "num_layers": "2", "d_ff": "128"}
NO_PICKER = STEPS.index(NUMPY_BLOCK) + 1


@pytest.fixture
def speaking():
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


@pytest.fixture
def store(tmp_path) -> SqliteClassStore:
    limits = Limits(classes=2, students=3, nickname=8)
    return SqliteClassStore(str(tmp_path / "classes.sqlite3"), limits)


def refusals(store: SqliteClassStore) -> list[tuple[ClassError, str, str, dict]]:
    """(error raised by the store, its English text as before, its template, its values)."""
    made = store.create()
    said = []
    with pytest.raises(ClassNotFound) as wrong:
        store.join("kkk-kkk")
    said.append((wrong.value, "No class has the code KKKKKK: check the code.",
                 "No class has the code {code}: check the code.", {"code": "KKKKKK"}))  # fmt: skip
    with pytest.raises(ClassError) as long_name:
        store.join(made.code, "Ada Lovelace")
    said.append((long_name.value, "The nickname is 12 characters long; at most 8.",
                 "The nickname is {length} characters long; at most {limit}.",
                 {"length": 12, "limit": 8}))  # fmt: skip
    for _ in range(3):
        store.join(made.code)
    with pytest.raises(ClassFull) as full:
        store.join(made.code)
    said.append((full.value, f"The class {made.code} is full (3 students).",
                 "The class {code} is full ({students} students).",
                 {"code": made.code, "students": 3}))  # fmt: skip
    with pytest.raises(NotTeacher) as not_teacher:
        store.reveal(made.code, "a guess")
    said.append((not_teacher.value, "Only the class's teacher can do that.",
                 "Only the class's teacher can do that.", {}))  # fmt: skip
    away = ClassStoreUnavailable("Redis: Connection refused")
    template = (
        "The class is unavailable right now (its store cannot be reached); everything else on "
        "the page works, and the class goes on when the store is back."
    )
    said.append((away, template, template, {}))
    return said


def test_the_store_s_refusals_are_told_in_each_language_with_their_values(store, speaking):
    said = refusals(store)
    for error, english, template, values in said:
        speaking("en")
        assert i18n.told(error) == str(error) == english  # unchanged in English
        for language in LANGUAGES:
            speaking(language)
            translated = translations(language).gettext(template)
            assert translated != template, (language, template)
            assert i18n.told(error) == translated.format(**values)
    (wrong, *_), (long_name, *_) = said[:2]
    speaking("es")
    assert i18n.told(wrong) == "Ninguna clase tiene el código KKKKKK: revisa el código."
    assert i18n.told(long_name) == "El apodo tiene 12 caracteres; como máximo 8."
    speaking("ar")
    assert "12" in i18n.told(long_name) and "8" in i18n.told(long_name)  # Western digits


def test_the_store_s_own_error_stays_for_the_operator(speaking):
    """A store away: the teacher reads the sentence in their language; the back-end's own text
    (Redis's, SQLite's) is the operator's, in the log, never on the page."""
    away = ClassStoreUnavailable("Redis: Error 111 connecting to 127.0.0.1:1. Connection refused.")
    for language in LANGUAGES:
        speaking(language)
        assert "Redis" not in i18n.told(away) and "Redis" in away.detail


def join_with(language: str, code: str) -> list[str]:
    """The warnings a student reads after typing `code` in the join form, the page in
    `language`."""
    # a step without the query's picker: AppTest replays a selectbox's choice through its
    # format_func outside the run, in English, and misses a translated option
    at = open_page(view="Lesson", lang=language, lesson=str(NO_PICKER), **SMALL)
    assert_no_exception(at)
    at.text_input(key="class_code").set_value(code)
    at.button(key="class_join").click().run()
    assert_no_exception(at)
    assert "_class_student" not in at.session_state  # not joined
    return [shown(warning.value) for warning in at.warning]


def test_a_student_with_a_wrong_code_reads_it_in_the_page_s_language(store_path):
    said = join_with("es", "kkk kkk")
    template = translations("es").gettext("No class has the code {code}: check the code.")
    assert template.format(code="KKKKKK") in said, said
    assert "Ninguna clase tiene el código KKKKKK: revisa el código." in said


def test_a_wrong_code_is_a_marked_sentence(store_path):
    said = [text for text in join_with(PSEUDO, "KKKKKK") if "KKKKKK" in text]
    assert said and all(text.startswith("⟦") and text.endswith("⟧") for text in said), said
