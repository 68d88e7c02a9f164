"""The lesson in the page's languages (app/lesson): the page opens in Arabic and the
pseudo-language without an error; in the pseudo-language every sentence a step says, and the
lesson's own controls, headings and captions, are marked (wrapped in ⟦ ⟧) but for tokens and
numbers; a sentence's numbers are written as the language writes them and equal the run's; the
questions keep their ids, options and truths (what a class stores) in every language and only
show them translated; the handout says its language and direction."""

from __future__ import annotations

import base64
import re

import pytest
from babel.numbers import parse_decimal

from app import i18n
from app.i18n.browser import browser_words
from app.i18n.catalogue import PSEUDO
from app.lesson import handout
from app.lesson.questions import answer_text, option_text
from app.lesson.steps import STEPS
from app.lesson.steps.attention import ONE_QUERY
from app.lesson.steps.block import LAYERNORM
from app.lesson.steps.heads import HEAD_OFF, HEADS_DIFFER
from app.lesson.steps.tokens import TOKENS
from app.lesson.text import Lesson, Typed, shown_table
from encoder.web.payload import decode_header
from tests.app.helpers import assert_no_exception, frame_words, open_page, shown
from tests.app.lesson_runs import MODERN, random_run
from tests.shared import SENTENCE

MARKED = re.compile(r"⟦[^⟦⟧]*⟧")
LEFT_OVER = re.compile(r"[A-Za-z]{3,}")  # a word outside every ⟦ ⟧: an unmarked string


@pytest.fixture
def speaking():
    """speaking(language): this test's runs speak `language`."""
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def unmarked(text: str, allowed: tuple[str, ...] = ()) -> list[str]:
    """The words of `text` outside every ⟦ ⟧ (nested ones removed from the inside out), but for
    `allowed` (tokens, names in the code)."""
    for name in allowed:
        text = text.replace(name, " ")
    while MARKED.search(text):
        text = MARKED.sub(" ", text)
    return LEFT_OVER.findall(text)


@pytest.fixture(scope="module")
def runs():
    return {
        "pre": random_run("pre", [SENTENCE]),
        "post, two sentences": random_run("post", [SENTENCE, "A second, shorter one."]),
        "modern": random_run("pre", [SENTENCE], **MODERN),
    }


# one real language (the catalogue check covers the others' completeness)
@pytest.mark.parametrize("language", ["ar", PSEUDO])
def test_the_lesson_opens_in_a_language(language) -> None:
    at = open_page(lang=language, lesson="3")  # a step that asks first
    assert_no_exception(at)
    assert not at.error, [e.value for e in at.error]
    at.button(key="predict_skip").click().run()  # the reveal, then the step
    assert_no_exception(at)
    assert at.success, "no reveal"
    if language == PSEUDO:
        assert "⟦" in at.header[0].value
        assert at.success[0].value.count("⟦") >= 2  # the reveal's sentence and its explanation
        for key in ("lesson_previous", "lesson_next", "lesson_open_0"):
            assert "⟦" in at.button(key=key).label, key
        assert "⟦" in at.toggle(key="present").label
        assert "⟦" in at.selectbox(key="lesson_query").label
        assert any("⟦" in expander.label for expander in at.expander)
        tokens = [option for option in at.selectbox(key="lesson_query").options]
        steps = [m for m in at.markdown if "“" in shown(m.value)]  # the step's paragraphs
        assert steps
        for paragraph in steps:
            assert not unmarked(shown(paragraph.value), tuple(tokens)), paragraph.value


@pytest.mark.parametrize("setup", ["pre", "post, two sentences", "modern"])
def test_every_sentence_of_every_step_is_marked(setup, runs, speaking) -> None:
    speaking(PSEUDO)
    run = runs[setup]
    names = ("MiniLM", "LayerNorm", "RMSNorm", "GELU", "ReLU", "GeGLU", "SwiGLU", "NumPy", "torch")
    for sentence in range(len(run.sentences)):
        lesson = Lesson(run, sentence)
        for listed in STEPS:
            assert listed.title.startswith("⟦"), listed.title
            step = listed.build(lesson)
            for paragraph in step.text.paragraphs:
                said = [part.text for part in paragraph if isinstance(part, Typed)]
                ours = "".join("" if isinstance(part, Typed) else part for part in paragraph)
                assert ours.startswith("⟦"), (listed.title, paragraph)
                assert not unmarked(ours, (*said, *names, *run.tokens[sentence])), paragraph
            for caption, _table in step.tables:
                assert caption.startswith("⟦"), caption
            asked = listed.question(lesson) if listed.question else None
            if asked is not None:
                assert asked.question.startswith("⟦"), asked.question
                assert asked.explain("").startswith("⟦"), asked.explain("")


@pytest.mark.parametrize("setup", ["pre", "post, two sentences", "modern"])
def test_every_table_of_every_step_names_its_numbers_in_the_language(setup, runs, speaking) -> None:
    """The numbers behind each step, and each step's tables (headers, rows' names, word cells:
    a head's role, a parameter's component), as the page and the handout show them."""
    speaking(PSEUDO)
    run = runs[setup]
    for sentence in range(len(run.sentences)):
        lesson = Lesson(run, sentence)
        tokens = {"[PAD]", *run.tokens[sentence]}
        for listed in STEPS:
            step = listed.build(lesson)
            numbers = step.numbers()
            assert all(header.startswith("⟦") for header in numbers.columns), numbers.columns
            names = list(numbers.iloc[:, 0])
            assert len(names) == len(step.text.values)  # one row a number, each named
            assert all(name.startswith("⟦") for name in names), (listed.title, names)
            for _caption, table in step.tables:
                words = frame_words(shown_table(table), tokens)
                left = [word for word in words if "⟦" not in word]
                assert not left, (listed.title, left)


def test_the_numbers_keep_their_english_names_and_show_the_languages(runs, speaking) -> None:
    """A number is read by its English name (the code, the tests) in every language; its row in
    the table is named in the run's language."""
    lesson = Lesson(runs["pre"], 0)
    speaking("es")
    step = TOKENS.build(lesson)
    assert step.text.values["vocabulary size"] == lesson.cfg.vocab_size
    assert "tamaño del vocabulario" in list(step.numbers().iloc[:, 0])
    roles = HEADS_DIFFER.build(lesson)
    assert "previous token: share" in roles.text.values
    assert "token anterior: parte" in list(roles.numbers().iloc[:, 0])
    ((_caption, table),) = roles.tables
    assert set(shown_table(table)["papel"]) >= {"token anterior", "amplia"}


def test_a_sentence_writes_the_runs_numbers_as_spanish_does(runs, speaking) -> None:
    lesson = Lesson(runs["pre"], 0)
    weight = float(lesson.links.chosen["weight"])
    speaking("es")
    step = ONE_QUERY.build(lesson)
    said = " ".join(
        "".join(part.text if isinstance(part, Typed) else part for part in paragraph)
        for paragraph in step.text.paragraphs
    )
    spanish = f"{weight:.3f}".replace(".", ",")
    assert f": {spanish} " in said, said
    assert i18n.number(weight, 3, grouped=False) == spanish
    assert step.text.shown["weight"] == spanish  # the numbers table shows it as the text does
    row = step.numbers().iloc[list(step.text.values).index("weight")]
    assert row.iloc[0] == "peso" and row.iloc[2] == spanish
    assert "," in row.iloc[1] and float(parse_decimal(row.iloc[1], locale="es")) == weight
    assert "capa" in said and "cabeza" in said


def test_questions_store_the_same_answers_in_every_language(runs, speaking) -> None:
    lesson = Lesson(runs["pre"], 0)
    asked, explained = {}, {}
    for language in ("en", "es", "zh", "ar"):
        speaking(language)
        asked[language] = [listed.question(lesson) for listed in (ONE_QUERY, HEAD_OFF, LAYERNORM)]
        explained[language] = [question.explain(question.truth) for question in asked[language]]
    for language in ("es", "zh", "ar"):
        for english, other in zip(asked["en"], asked[language], strict=True):
            stored = (other.question_id, other.options, other.truth)
            assert stored == (english.question_id, english.options, english.truth)
            assert other.question != english.question
        for english, other in zip(explained["en"], explained[language], strict=True):
            assert english.startswith("Right: ") and other != english
    speaking("es")
    head, growth = asked["es"][1], asked["es"][2]
    assert option_text(head, "layer 2, head 1") == "capa 2, cabeza 1"
    assert answer_text(growth, "grows / shrinks") == "crece / disminuye"
    assert growth.parts == ("pre-norm", "post-norm")


HANDOUT_OPENINGS = [("ar", '<html lang="ar" dir="rtl">'), ("es", '<html lang="es" dir="ltr">')]


@pytest.mark.parametrize(("language", "opening"), HANDOUT_OPENINGS)
def test_the_handout_says_its_language_and_direction(language, opening, runs, speaking) -> None:
    speaking(language)
    page = handout.lesson_html(Lesson(runs["pre"], 0))
    assert opening in page
    assert i18n._("The numbers behind this step") in page
    # a file has no page to speak for its explorers: each payload carries the language's words
    payloads = re.findall(r'data-explorer-for="[^"]+">([^<]+)</script>', page)
    headers = [decode_header(base64.b64decode(payload)) for payload in payloads]
    assert headers and all(h["lang"] == language for h in headers)
    assert all(h["words"] == browser_words(language) for h in headers)
