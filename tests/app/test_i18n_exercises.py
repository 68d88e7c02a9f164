"""What an exercise's checker tells the student, in the student's language: the by-hand verdicts
and the refusals of an answer (on the page), the hints and messages of a code check (the
library's, Said): told in Spanish, Chinese and Arabic they are the catalogue's translation with
the values in, numbers written the language's way; in English, the text they always were."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from app import i18n
from app.i18n.catalogue import PSEUDO, translations
from app.views.exercises import verdict_text
from encoder.core.said import Said
from encoder.exercises import mistakes
from encoder.exercises.by_hand import AnswerError, draw, number, parse_answer
from encoder.exercises.result import GENERIC_HINT, precision_hint
from encoder.exercises.student import call_student
from encoder.exercises.written import Written
from tests.app.helpers import assert_no_exception, open_page

TINY = {"d_model": "32", "num_heads": "4", "num_layers": "1", "d_ff": "64"}  # the sidebar's
SET = 5
LANGUAGES = ("es", "zh", "ar")
DECIMAL = {"es": ",", "zh": ".", "ar": "."}


@pytest.fixture
def speaking():
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def translated(language: str, template: str, **values: object) -> str:
    """The catalogue's translation of `template`, with `values` in."""
    said = translations(language).gettext(template)
    assert said != template, f"{language}: {template!r} not translated"
    return said.format(**values)


def unscaled():
    """Set SET's scaled-score question and the answer of the mistake that leaves out √d_k."""
    question = draw(SET).question("scaled")
    (why, (wrong,)) = question.mistakes[0]
    assert why == "the score without dividing by √d_k"
    return question, wrong


def test_a_wrong_answer_is_told_in_each_language_with_its_numbers(speaking) -> None:
    question, wrong = unscaled()
    verdict = question.check((wrong,))
    assert not verdict.correct
    speaking("en")  # the English the page always showed
    english = (
        f"Not yet: your answer is {number(wrong)}, off by more than ±0.01. "
        "It looks like the score without dividing by √d_k."
    )
    assert verdict.message == english == verdict_text(verdict)
    for language in LANGUAGES:
        speaking(language)
        answer = number(wrong).replace(".", DECIMAL[language])
        mistake = translated(language, "the score without dividing by √d_k")
        sentences = (
            translated(
                language,
                "Not yet: your answer is {answer}, off by more than ±{tolerance}.",
                answer=answer,
                tolerance="0" + DECIMAL[language] + "01",
            ),
            translated(language, "It looks like {mistake}.", mistake=mistake),
        )
        joined = ("" if language == "zh" else " ").join(sentences)
        assert verdict_text(verdict) == joined
    speaking("es")
    assert verdict_text(verdict) == (
        f"Todavía no: tu respuesta es {answer_es(wrong)}, se desvía más de ±0,01. "
        "Parece la puntuación sin dividir entre √d_k."
    )


def answer_es(value: float) -> str:
    return number(value).replace(".", ",")


def test_a_right_answer_and_a_count_are_told(speaking) -> None:
    question = draw(SET).question("softmax")
    right = question.check(question.expected)
    several = question.check(question.expected[:1])
    speaking("es")
    assert verdict_text(right) == "Correcto (cada uno con un margen de ±0,01)."
    assert verdict_text(several) == f"Se esperaban {question.count} números y llegaron 1."
    wrong = list(question.expected)
    wrong[-1] += 0.5
    speaking("zh")
    assert verdict_text(question.check(tuple(wrong))) == translated(
        "zh",
        "Not yet: number {number} of {count} is {answer}, off by more than ±{tolerance}.",
        number=question.count,
        count=question.count,
        answer=number(wrong[-1]),
        tolerance="0.01",
    )


@pytest.mark.parametrize(
    ("typed", "count", "english", "spanish"),
    [
        ("abc", 1, "“abc” is not a number: give one number, such as 0.25.",
         "«abc» no es un número: da un solo número, como 0,25."),
        ("1 2", 3, "Give 3 numbers separated by commas; you gave 2.",
         "Da 3 números separados por punto y coma; diste 2."),
        ("", 1, "Type your answer first: one number.",
         "Escribe primero tu respuesta: un solo número."),
    ],
)  # fmt: skip
def test_an_answer_refused_is_told(speaking, typed, count, english, spanish) -> None:
    with pytest.raises(AnswerError) as refused:
        parse_answer(typed, count)
    assert str(refused.value) == english == i18n.told(refused.value)
    speaking("es")
    assert i18n.told(refused.value) == spanish
    said = refused.value.args[0]
    for language in LANGUAGES:
        speaking(language)
        assert i18n.told(refused.value) == translated(language, said.template, **said.values)


def test_a_code_checks_hints_are_told(speaking) -> None:
    expected = np.array([[0.84, -1.25], [0.1, 2.0]])
    hint = precision_hint(torch.float16, torch.float32, expected, np.ones((2, 2), bool), 0.0123)
    assert "about 3 significant digits (steps of 0.00098 near 1)" in hint  # English, as it was
    assert "your largest difference is 0.0123, the tolerance 0.0001 + 0.0001 × |expected|" in hint
    speaking("es")
    told = i18n.told(hint)
    assert told.startswith("tu resultado es float16, menos preciso que el float32 del modelo")
    assert "(pasos de 0,00098 cerca de 1)" in told and "mayor diferencia es 0,0123" in told
    assert "la tolerancia 0,0001 + 0,0001 × |esperado|" in told
    for language in LANGUAGES:
        speaking(language)
        assert i18n.told(mistakes.WRONG_AXIS) == translated(language, mistakes.WRONG_AXIS)
        assert i18n.told(GENERIC_HINT) == translated(language, GENERIC_HINT)
        assert i18n.told(mistakes.other_activation("GELU")) == translated(
            language, "the other activation: this model's feed-forward uses {activation}",
            activation="GELU",
        )  # fmt: skip


def test_a_function_that_could_not_be_compared_is_told(speaking) -> None:
    none = call_student(lambda x: None, (1,), (2, 3), "[a, b]", exercise="softmax", time_limit=5)
    shape = call_student(
        lambda x: np.zeros((3, 2)), (1,), (2, 3), "[a, b]", exercise="softmax", time_limit=5
    )
    assert none.problem == "your function returned None: did you forget `return`?"
    assert shape.problem == "wrong shape: expected (2, 3) [a, b], received (3, 2)"
    speaking("zh")
    assert i18n.told(none.problem) == "你的函数返回了 None：是不是忘了 `return`？"
    assert i18n.told(shape.problem) == "形状不对：应为 (2, 3) [a, b]，收到 (3, 2)"
    assert i18n.told(shape.hint) == "轴都在，但顺序不对：检查你的转置"
    speaking("ar")
    assert i18n.told(shape.problem) == "شكل خاطئ: المتوقع (2, 3) [a, b]، والمستلَم (3, 2)"


def test_a_written_number_is_its_english_text_and_a_number() -> None:
    value = Written(-0.25, "−0.25")
    assert str(value) == f"{value}" == repr(value) == "−0.25" and value == -0.25
    said = Said("is {x}", x=value)
    again = pickle.loads(pickle.dumps(said))
    assert again == "is −0.25" and str(again.values["x"]) == "−0.25"


def test_the_page_in_spanish_tells_a_wrong_answer_its_hint_and_a_refusal() -> None:
    _, wrong = unscaled()
    value = float(f"{wrong:.3f}")
    typed = f"{value:.3f}".replace(".", ",")  # as a Spanish student writes it
    at = open_page(view="Exercises", lang="es", ex_set=str(SET), **TINY)
    at.text_input(key="ex_scaled").input(typed).run()
    assert_no_exception(at)
    (message,) = [e.value for e in at.error]
    shown = answer_es(value)
    assert message == (
        f"Todavía no: tu respuesta es {shown}, se desvía más de ±0,01. "
        "Parece la puntuación sin dividir entre √d_k."
    )
    assert float(shown.replace("−", "-").replace(",", ".")) == value
    at.text_input(key="ex_score").input("abc").run()
    (warning,) = [w.value for w in at.warning]
    assert warning == "«abc» no es un número: da un solo número, como 0,25."


@pytest.mark.parametrize(
    ("typed", "decimal", "read"),
    [("0,3; −1,2", ",", (0.3, -1.2)), ("0.3 -1.2", ",", (0.3, -1.2)),
     ("0.3, -1.2", ".", (0.3, -1.2)), ("0,3 1", ".", None)],
)  # fmt: skip
def test_an_answer_is_read_with_the_pages_decimal_mark(typed, decimal, read) -> None:
    if read is None:  # with a decimal point, "0,3 1" is three numbers: 0, 3 and 1
        with pytest.raises(AnswerError, match="you gave 3"):
            parse_answer(typed, 2, decimal)
    else:
        assert parse_answer(typed, 2, decimal) == pytest.approx(read)


def test_the_page_in_the_pseudo_language_wraps_the_verdict_and_its_hint() -> None:
    _, wrong = unscaled()
    at = open_page(view="Exercises", lang=PSEUDO, ex_set=str(SET), **TINY)
    at.text_input(key="ex_scaled").input(f"{wrong:.3f}").run()
    at.text_input(key="ex_score").input("abc").run()
    assert_no_exception(at)
    (message,) = [e.value for e in at.error]
    not_yet, looks = message.split("⟧ ⟦", 1)
    assert not_yet.startswith("⟦Not yet: your answer is") and looks.startswith("It looks like")
    assert "⟦the score without dividing by √d_k" in looks and message.endswith("⟧")
    (warning,) = [w.value for w in at.warning]
    assert warning.startswith("⟦“abc” is not a number") and warning.endswith("⟧")
