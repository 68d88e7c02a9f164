"""The page's languages (app.i18n): every shipped catalogue complete, its placeholders the
source's and its plural forms the language's; every catalogue's template up to date with the
messages marked in the code; numbers written as each language writes them and read back; the
pseudo-language wraps every marked message; the language a session speaks."""

from __future__ import annotations

import os
import pickle
import re
import shutil
import subprocess
import sys
import threading

import pytest
from babel.messages.pofile import read_po
from babel.numbers import parse_decimal

from app import i18n
from app.charts.common import base_spec
from app.controls.sidebar import english_only_note
from app.i18n import LANGUAGES
from app.i18n.catalogue import HERE, PSEUDO, translations
from app.i18n.domains import DOMAINS, ROOT, check_all, files_of, template
from encoder.core.said import Listed, Quoted, Said, formatted
from tests.app.helpers import assert_no_exception, open_page, shown


@pytest.fixture
def speaking():
    """speaking(language): this test's runs speak `language`."""
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def test_every_catalogue_is_complete_and_keeps_its_placeholders() -> None:
    assert check_all() == []


def test_no_browser_message_is_marked_inside_a_template_literal() -> None:
    """Babel reads a JavaScript template literal as one string: a `_("rows")` inside its
    `${...}` is never extracted, so never translated (the figure tables' corner said "rows" on
    every page)."""
    hidden = [
        (path.name, literal)
        for path in files_of("browser")
        if path.suffix == ".js"
        for literal in re.findall(r"`[^`]*`", path.read_text(encoding="utf-8"))
        if re.search(r"\$\{[^}]*\bn?_\(", literal)
    ]
    assert hidden == []


def test_a_new_module_anywhere_is_extracted_by_the_one_command(tmp_path) -> None:
    """A module in a new folder of app/ (a view, a page script) has its messages in the
    catalogues after `python -m app.i18n extract`, untranslated until translated: no list of
    files or folders to edit (a hand-kept list shipped such a module in English everywhere)."""
    for folder in ("app", "encoder"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    room = tmp_path / "app" / "new_room"
    room.mkdir()
    (room / "__init__.py").write_text("", encoding="utf-8")
    (room / "view.py").write_text(
        'from app.i18n import _\n\n\ndef draw():\n    return _("A view no list names")\n',
        encoding="utf-8",
    )
    (room / "script.js").write_text('const said = _("A script no list names");\n', "utf-8")

    def run(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "app.i18n", command], cwd=tmp_path, capture_output=True,
            text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(tmp_path)},
        )  # fmt: skip

    assert run("extract").returncode == 0
    spanish = "".join(
        path.read_text(encoding="utf-8")
        for path in (tmp_path / "app/i18n/locale/es/LC_MESSAGES").glob("*.po")
    )
    assert 'msgid "A view no list names"' in spanish
    assert 'msgid "A script no list names"' in spanish
    checked = run("check")
    assert checked.returncode == 1
    assert "'A view no list names': untranslated" in checked.stdout
    assert "'A script no list names': untranslated" in checked.stdout


@pytest.mark.parametrize("domain", sorted(DOMAINS))
def test_every_template_holds_the_messages_marked_in_the_code(domain) -> None:
    with (HERE / f"{domain}.pot").open("rb") as pot:
        shipped = {message.id for message in read_po(pot) if message.id}
    marked = {message.id for message in template(domain) if message.id}
    assert marked == shipped, "run `python -m app.i18n extract`, then translate what is new"


@pytest.mark.parametrize(
    ("language", "written", "locale"),
    [("en", "1,234.715", "en"), ("es", "1.234,715", "es"), ("zh", "1,234.715", "zh_Hans_CN"),
     ("ar", "1,234.715", "ar")],
)  # fmt: skip
def test_numbers_are_written_as_the_language_writes_them(speaking, language, written, locale):
    speaking(language)
    said = i18n.number(1234.7149, 3)
    assert said == written
    assert float(parse_decimal(said, locale=locale)) == pytest.approx(1234.715)


def test_a_negative_number_in_arabic_has_the_minus_that_keeps_it_left_to_right(speaking):
    speaking("ar")
    assert i18n.number(-0.7149, 3) == "\u200e-0.715" == i18n.localised("-0.715")
    assert i18n.localised("(-3, 1e-05)") == "(\u200e-3, 1e-05)"  # not an exponent's minus
    speaking("es")
    assert i18n.number(-0.7149, 3) == "-0,715" == i18n.localised("-0.715")


@pytest.mark.parametrize(
    ("language", "written", "negative"),
    [("en", "53.3%", "-0.5%"), ("es", "53,3\u00a0%", "-0,5\u00a0%"), ("zh", "53.3%", "-0.5%"),
     ("ar", "53.3%", "\u200e-0.5%")],
)  # fmt: skip
def test_a_percentage_is_written_as_the_language_writes_one(speaking, language, written, negative):
    speaking(language)  # CLDR's pattern (Spanish: a no-break space before the sign), by Babel
    assert i18n.percent(0.5333, 1) == written
    assert i18n.percent(-0.00471, 1) == negative  # the minus `number` writes
    if language == "en":  # as Python's format writes it, byte for byte
        for share, digits in ((0.125, 0), (0.5333, 1), (0.00049, 2), (12.5, 1), (-0.00001, 1)):
            assert i18n.percent(share, digits) == f"{share:.{digits}%}"


def test_a_translation_keeps_the_values_it_is_given(speaking) -> None:
    speaking("es")
    assert i18n._("Input") == translations("es").gettext("Input") != "Input"
    speaking("en")
    assert i18n._("{layer} of {count}", layer=2, count=i18n.number(6)) == "2 of 6"


def test_the_pseudo_language_wraps_and_lengthens_every_message(speaking) -> None:
    speaking(PSEUDO)
    said = i18n._("Layer {layer}, head {head}", layer=2, head=1)
    assert said.startswith("⟦Layer 2, head 1") and said.endswith("⟧")
    assert len(said) > len("Layer 2, head 1") + 2


def test_what_the_library_says_is_told_in_the_language_with_its_numbers(speaking) -> None:
    error = ValueError(
        Said("d_model={width} is {ratio} of {name!r}", width=1024, ratio=0.25, name="x")
    )
    speaking("en")
    assert i18n.told(error) == str(error) == "d_model=1024 is 0.25 of 'x'"
    speaking(PSEUDO)  # the template is what is translated; the values go in after
    assert i18n.told(error).startswith("⟦d_model=1024 is 0.25 of 'x'")
    speaking("es")  # a bare number in the language's way; one with a conversion as it is
    assert i18n.told(error) == "d_model=1024 is 0,25 of 'x'"
    assert i18n.told(Said("{x} and {y}", x=1e-12, y=2.5)) == "1e-12 and 2,5"
    assert i18n.localised(f"{12345.678:,.3g}") == "1,23e+04"  # an exponent kept
    assert i18n.localised(f"{1234.5:,.1f}") == "1.234,5"
    assert i18n.told(KeyError("k")) == str(KeyError("k")) == "'k'"  # not the library's: as it is
    assert i18n.told("plain") == "plain"
    said = Said("{a} of {b}", a=1, b=2)
    assert pickle.loads(pickle.dumps(said)).values == {"a": 1, "b": 2}


def test_a_sentence_that_counts_lists_and_quotes_keeps_them_told_and_pickled(speaking) -> None:
    listed = Listed((Quoted("it"), formatted(0.5, ".1%"), 1234.5))
    said = Said.plural("{count} run of {runs}", "{count} runs of {runs}", 1, runs=listed)
    assert said == "1 run of “it”, 50.0%, 1234.5"
    assert Said.plural("{count} run", "{count} runs", 2) == "2 runs"
    again = pickle.loads(pickle.dumps(said))
    assert again == said and again.plural_template == "{count} runs of {runs}"
    speaking("es")  # not in a catalogue: the English form, its values the Spanish way
    assert i18n.told(said) == "1 run of «it», 50,0\u00a0%, 1234,5"
    assert i18n.told(Said.plural("{count} run", "{count} runs", 1234)) == "1234 runs"


def test_charts_write_numbers_with_the_languages_symbols(speaking) -> None:
    speaking("es")  # Plotly's own ticks and hover numbers: the layout's separators
    assert base_spec("t", 100)["separators"] == ",."
    speaking("en")
    assert "separators" not in base_spec("t", 100)  # Plotly's default, the JSON as it was


@pytest.mark.parametrize(
    ("asked", "browser", "spoken"),
    [(None, "es-MX", "es"), (None, "de-DE", "en"), ("ar", "es-ES", "ar"), (None, None, "en"),
     ("xx", "zh-CN", "zh"), (PSEUDO, None, PSEUDO), (None, "en-XA", "en")],
)  # fmt: skip
def test_the_page_speaks_the_language_asked_else_the_browsers(asked, browser, spoken) -> None:
    assert i18n.choose_language(asked, browser) == spoken


def test_a_link_with_a_language_opens_the_page_in_it() -> None:
    at = open_page(lang="es")
    assert_no_exception(at)
    assert at.sidebar.header[0].value == translations("es").gettext("Input")
    assert at.query_params["lang"] == "es"  # the link keeps it
    at = open_page(lang="klingon")
    said = [shown(warning.value) for warning in at.warning]
    assert any("klingon" in text and "the page's own choice" in text for text in said), said
    assert at.sidebar.header[0].value == "Input"
    [offer] = [text for text in said if "klingon" in text]  # the languages a user may choose
    assert all(code in offer for code in LANGUAGES) and PSEUDO not in offer, offer
    at = open_page(lang=PSEUDO)  # the tests' pseudo-language: taken, never offered
    assert not at.warning and at.sidebar.header[0].value.startswith("⟦")


def test_minilm_in_another_language_points_to_a_multilingual_encoder(speaking) -> None:
    english = english_only_note()
    at = open_page(lang="es", source="pretrained")
    speaking("es")
    spanish = english_only_note()
    assert spanish != english and "XLM-R" in spanish
    assert spanish in [caption.value for caption in at.sidebar.caption]
    at = open_page(source="pretrained")  # English, MiniLM's own language: nothing to say
    assert english not in [caption.value for caption in at.sidebar.caption]


def test_a_file_built_later_in_another_thread_speaks_the_runs_language() -> None:
    # Streamlit builds a download's file when its button is clicked, in a worker thread that
    # knows no session (which spoke English: the Spanish page's handout came out in English)
    i18n.speak_now("es")
    try:
        build = i18n.in_this_language(lambda: (i18n.language(), i18n._("Input")))
    finally:
        i18n.speak_now(None)
    said = []
    worker = threading.Thread(
        target=lambda: said.append((i18n.language(), build(), i18n.language()))
    )
    worker.start()
    worker.join()
    assert said == [("en", ("es", translations("es").gettext("Input")), "en")]
