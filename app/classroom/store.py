"""The class store: classes, their students and their answers, shared by every replica.

One interface (ClassStore) holds every rule; a backend (app.classroom.sqlite_store,
app.classroom.redis_store; app.classroom.backend picks one) only keeps records and offers a few
atomic primitives:
- a class record is read whole and changed by compare-and-set on its `version`;
- students and answers go into bounded maps (one field per student), so that a student's second
  answer replaces the first and nothing is counted twice, whatever the concurrency.

The class code is public (in the student link); the teacher's secret is returned once, by
`create`, and only its SHA-256 is stored: every teacher action checks it here, not in the page.
Every failure is a ClassError whose message the page shows; a store that cannot be reached is
ClassStoreUnavailable, so answers are refused with a message, never dropped. A message a teacher
or student reads is a `Said` (encoder.core.said): English here, told in the page's language by
the page (app.i18n.told; the catalogue domain "classroom"). What only a lesson's author or the
server's operator meets (a question's id, a store's own error) stays English.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
import unicodedata
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from encoder.core.said import Said

log = logging.getLogger(__name__)

DEFAULT_HOURS = 4.0

# Codes: 6 characters from an alphabet without look-alikes (no 0/O, 1/I/L, 5/S, 2/Z, 8/B).
CODE_ALPHABET = "ACDEFGHJKMNPQRTUVWXY34679"
CODE_LENGTH = 6


@dataclass(frozen=True)
class Limits:
    """Bounds on everything a class can hold."""

    classes: int = 500  # live classes per store
    students: int = 200  # per class
    answers: int = 200  # per question
    nickname: int = 24  # characters
    answer: int = 64  # characters of one answer
    question: int = 40  # characters of a question's id
    setup: int = 4096  # bytes of the teacher's setup (JSON)
    hours: float = DEFAULT_HOURS  # a class expires this long after it was created


class ClassError(Exception):
    """Something a page shows as a message (never a traceback)."""


class ClassNotFound(ClassError):
    pass


class ClassExpired(ClassError):
    pass


class ClassEnded(ClassError):
    pass


class NotTeacher(ClassError):
    pass


class ClassFull(ClassError):
    pass


class QuestionClosed(ClassError):
    pass


class ClassStoreUnavailable(ClassError):
    """The store cannot be reached: the class is unavailable until it is back."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(
            Said(
                "The class is unavailable right now (its store cannot be reached); everything "
                "else on the page works, and the class goes on when the store is back."
            )
        )
        self.detail = detail  # what failed, for the operator: logged, never on the page
        if detail:
            log.warning("class store unavailable: %s", detail)


@dataclass(frozen=True)
class ClassRecord:
    """One class as stored. `setup` is the teacher's lesson state (step's page settings: model
    source, sentence...), `question` the open question's id ('' when none)."""

    secret_hash: str
    expires: float
    step: int = 0
    setup: Mapping[str, str] = field(default_factory=dict)
    question: str = ""
    revealed: bool = False
    ended: bool = False
    version: int = 0

    def to_fields(self) -> dict[str, str]:
        return {
            "secret_hash": self.secret_hash,
            "expires": repr(self.expires),
            "step": str(self.step),
            "setup": json.dumps(dict(self.setup), sort_keys=True),
            "question": self.question,
            "revealed": "1" if self.revealed else "0",
            "ended": "1" if self.ended else "0",
            "version": str(self.version),
        }

    @classmethod
    def from_fields(cls, fields: Mapping[str, str]) -> ClassRecord:
        return cls(
            secret_hash=fields["secret_hash"],
            expires=float(fields["expires"]),
            step=int(fields["step"]),
            setup=json.loads(fields["setup"]),
            question=fields["question"],
            revealed=fields["revealed"] == "1",
            ended=fields["ended"] == "1",
            version=int(fields["version"]),
        )


@dataclass(frozen=True)
class ClassState:
    """What every member of a class may see (no secret)."""

    code: str
    step: int
    setup: Mapping[str, str]
    question: str
    revealed: bool
    version: int
    expires: float


@dataclass(frozen=True)
class NewClass:
    code: str
    secret: str  # the teacher's; never in a student link


@dataclass(frozen=True)
class Tally:
    """The answers to one question: how many, and how many gave each answer (most first)."""

    question: str
    count: int
    counts: tuple[tuple[str, int], ...]


def _public(code: str, r: ClassRecord) -> ClassState:
    return ClassState(code, r.step, r.setup, r.question, r.revealed, r.version, r.expires)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def clean_text(text: str, limit: int, what: str) -> str:
    """`text` without control characters and outer spaces, at most `limit` characters; a
    ClassError if it is longer (text is shown literally by the page: escaping is the page's)."""
    cleaned = "".join(ch for ch in str(text) if unicodedata.category(ch)[0] != "C").strip()
    if len(cleaned) > limit:
        raise ClassError(_too_long(what, len(cleaned), limit))
    return cleaned


def _too_long(what: str, length: int, limit: int) -> str:
    """The sentence that refuses a `what` of `length` characters, whole in each language (a
    question's id is the lesson's own, never typed: its sentence stays English)."""
    if what == "nickname":
        return Said(
            "The nickname is {length} characters long; at most {limit}.", length=length, limit=limit
        )
    if what == "answer":
        return Said(
            "The answer is {length} characters long; at most {limit}.", length=length, limit=limit
        )
    return f"The {what} is {length} characters long; at most {limit}."


def normalize_code(code: str) -> str:
    """A code as typed ('abc 123', ' ABC-123 ') in its stored form."""
    return "".join(ch for ch in str(code).upper() if ch.isalnum())


class ClassStore(ABC):
    """Every rule of a class; backends only store (see the module's docstring)."""

    def __init__(self, limits: Limits | None = None, clock: Callable[[], float] | None = None):
        self.limits = limits or Limits()
        self.clock = clock or time.time

    # ---- what a backend provides ----------------------------------------------------------
    @abstractmethod
    def _insert_class(self, code: str, record: ClassRecord, now: float) -> bool:
        """Store a new class unless the code is taken or `limits.classes` live classes exist
        (expired ones are dropped first); False when not stored."""

    @abstractmethod
    def _load_class(self, code: str) -> ClassRecord | None: ...

    @abstractmethod
    def _swap_class(self, code: str, old: ClassRecord, new: ClassRecord) -> bool:
        """Replace the record if its version is still old's; False if someone changed it."""

    @abstractmethod
    def _bounded_put(
        self, code: str, table: str, key: str, value: str, limit: int, expires: float
    ) -> bool:
        """Set table[key] = value in the class's map `table`, unless the key is new and the map
        already holds `limit` keys (False)."""

    @abstractmethod
    def _read_map(self, code: str, table: str) -> dict[str, str]: ...

    # ---- the rules -------------------------------------------------------------------------
    def new_code(self) -> str:
        return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))

    def create(self) -> NewClass:
        """A new class: its public code and the teacher's secret (shown to nobody else)."""
        now = self.clock()
        secret = secrets.token_urlsafe(24)
        expires = now + self.limits.hours * 3600
        record = ClassRecord(secret_hash=hash_secret(secret), expires=expires)
        for _ in range(8):  # 25**6 codes: a clash is rare, eight in a row is a full store
            code = self.new_code()
            if self._insert_class(code, record, now):
                return NewClass(code, secret)
            if self._load_class(code) is None:
                break  # not a clash: the store is full
        raise ClassFull(
            Said(
                "The server already holds {classes} classes, its limit; try again when one has "
                "ended.",
                classes=self.limits.classes,
            )
        )

    def _live(self, code: str) -> tuple[str, ClassRecord]:
        code = normalize_code(code)
        record = self._load_class(code) if len(code) == CODE_LENGTH else None
        if record is None and not code:
            raise ClassNotFound(Said("No class has the code (empty): check the code."))
        if record is None:
            raise ClassNotFound(Said("No class has the code {code}: check the code.", code=code))
        if record.ended:
            raise ClassEnded(Said("The class {code} has ended.", code=code))
        if record.expires <= self.clock():
            raise ClassExpired(
                Said("The class {code} has expired; ask your teacher for a new code.", code=code)
            )
        return code, record

    def state(self, code: str) -> ClassState:
        return _public(*self._live(code))

    def join(self, code: str, nickname: str = "") -> str:
        """A new student of the class: their id (kept in their session only)."""
        code, record = self._live(code)
        name = clean_text(nickname, self.limits.nickname, "nickname")
        student = secrets.token_urlsafe(12)
        if not self._bounded_put(
            code, "students", student, name, self.limits.students, record.expires
        ):
            raise ClassFull(
                Said(
                    "The class {code} is full ({students} students).",
                    code=code,
                    students=self.limits.students,
                )
            )
        return student

    def _teacher_change(self, code: str, secret: str, **changes) -> ClassState:
        for _ in range(20):
            code, record = self._live(code)
            if not hmac.compare_digest(record.secret_hash, hash_secret(str(secret))):
                raise NotTeacher(Said("Only the class's teacher can do that."))
            new = replace(record, **changes, version=record.version + 1)
            if self._swap_class(code, record, new):
                return _public(code, new)
        raise ClassStoreUnavailable("the class kept changing under this action")

    def set_step(self, code: str, secret: str, step: int, setup: Mapping[str, str]) -> ClassState:
        """The teacher moves the class to lesson step `step` with the page settings `setup`;
        any open question closes."""
        setup = {str(k): str(v) for k, v in setup.items()}
        if len(json.dumps(setup)) > self.limits.setup:
            log.warning("a class's setup over %d bytes: %s", self.limits.setup, setup)
            raise ClassError(Said("The lesson's settings are too long to share with the class."))
        return self._teacher_change(
            code, secret, step=int(step), setup=setup, question="", revealed=False
        )

    def open_question(self, code: str, secret: str, question: str) -> ClassState:
        question = clean_text(question, self.limits.question, "question's id")
        if not question:
            raise ClassError("A question needs an id.")
        return self._teacher_change(code, secret, question=question, revealed=False)

    def reveal(self, code: str, secret: str) -> ClassState:
        return self._teacher_change(code, secret, revealed=True)

    def end(self, code: str, secret: str) -> None:
        self._teacher_change(code, secret, ended=True)

    def is_teacher(self, code: str, secret: str) -> bool:
        _, record = self._live(code)
        return hmac.compare_digest(record.secret_hash, hash_secret(str(secret)))

    def answer(self, code: str, student: str, question: str, value: str) -> None:
        """The student's answer to the open question (a second one replaces the first)."""
        code, record = self._live(code)
        if str(student) not in self._read_map(code, "students"):
            raise ClassError(
                Said("This browser has not joined the class: open the class link again.")
            )
        if not record.question or record.question != question:
            raise QuestionClosed(
                Said("This question is not open any more; your answer was not counted.")
            )
        if record.revealed:
            raise QuestionClosed(Said("The answer has been revealed; answers are closed."))
        value = clean_text(value, self.limits.answer, "answer")
        if not value:
            raise ClassError(Said("An empty answer is not counted: choose one, or skip."))
        if not self._bounded_put(
            code, f"answers:{question}", student, value, self.limits.answers, record.expires
        ):
            raise ClassFull(
                Said(
                    "This question already has {answers} answers, its limit.",
                    answers=self.limits.answers,
                )
            )

    def my_answer(self, code: str, student: str, question: str) -> str | None:
        code, _ = self._live(code)
        return self._read_map(code, f"answers:{question}").get(str(student))

    def tally(self, code: str, question: str, secret: str | None = None) -> Tally:
        """The answers to `question`: the teacher's at any time, everyone's once revealed."""
        code, record = self._live(code)
        revealed = record.revealed and record.question == question
        if not revealed and not (
            secret is not None and hmac.compare_digest(record.secret_hash, hash_secret(secret))
        ):
            raise NotTeacher(Said("The class's answers are shown when the teacher reveals them."))
        answers = self._read_map(code, f"answers:{question}")
        counts = Counter(answers.values()).most_common()
        return Tally(question, len(answers), tuple(counts))

    def nicknames(self, code: str, secret: str, question: str) -> list[tuple[str, str]]:
        """(nickname, answer) of every student who answered and gave a nickname: the teacher's
        only."""
        if not self.is_teacher(code, secret):
            raise NotTeacher(Said("Only the class's teacher sees nicknames."))
        code = normalize_code(code)
        names = self._read_map(code, "students")
        answers = self._read_map(code, f"answers:{question}")
        return sorted((names[s], a) for s, a in answers.items() if names.get(s))

    def students(self, code: str) -> int:
        code, _ = self._live(code)
        return len(self._read_map(code, "students"))
