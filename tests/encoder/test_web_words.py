"""The browser's words (encoder/web/shared.js): `_()` puts values in a translation, `n_()` picks
the form Intl.PluralRules names for the count, `number()` writes a number as the language does
(English exactly as toFixed and toLocaleString did), and app.i18n.browser gives every message of
the "browser" domain in each language, plural messages by CLDR category. Needs node."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from app.i18n.browser import browser_words
from app.i18n.catalogue import PSEUDO
from app.i18n.domains import template
from encoder.web import asset

CASES = """
const out = {};
out.en = [number(0.715, 3, false), number(1.0005, 3, false), number(-0.0001, 3, false),
  number(1234567), _("Layer {layer}:", {layer: 2}),
  n_("{count} token", "{count} tokens", 1), n_("{count} token", "{count} tokens", 1234)];
speakWith(WORDS_ES, "es");
out.es = [number(0.715, 3, false), number(1.0005, 3, false), _("Matrix"),
  n_("Only the rollout after the last layer was sent for {count} token: it is drawn whichever "
    + "layer is chosen.", "Only the rollout after the last layer was sent for {count} tokens: it "
    + "is drawn whichever layer is chosen.", 3),
  _("{name}: {query} attends most to {key} {value}",
    {name: "capa 2, cabeza 1", query: '"it"', key: '"tired"', value: number(0.715, 3, false)})];
speakWith(WORDS_AR, "ar", "rtl");
out.ar = [number(0.715, 3, false), rightToLeft(),
  ...[0, 1, 2, 3, 11, 100].map((n) => n_("{count} token (query ↓ key →): point at a cell, or "
    + "use ↑/↓, to read its tokens and value.", "{count} tokens (query ↓ key →): point at a cell, "
    + "or use ↑/↓, to read its tokens and value.", n))];
speakWith(null, null);
out.back = [_("Matrix"), spoken(), rightToLeft()];
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def said(tmp_path_factory) -> dict:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("needs node")
    script = tmp_path_factory.mktemp("words") / "words.js"
    tables = {
        "WORDS_ES": browser_words("es"),
        "WORDS_AR": browser_words("ar"),
    }
    head = "".join(f"const {name} = {json.dumps(t)};\n" for name, t in tables.items())
    script.write_text(asset("shared.js") + "\n" + head + CASES, encoding="utf-8")
    done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_english_is_written_as_before(said) -> None:
    assert said["en"] == [
        "0.715",
        "1.000",  # toFixed's rounding of the binary value, not 1.001
        "-0.000",
        "1,234,567",
        "Layer 2:",
        "1 token",
        "1,234 tokens",
    ]
    assert said["back"] == ["Matrix", "en", False]


def test_spanish_words_and_numbers(said) -> None:
    number, same, matrix, plural, sentence = said["es"]
    assert (number, same, matrix) == ("0,715", "1,000", "Matriz")
    assert plural.startswith("Solo se envió") and "3 tokens" in plural
    assert sentence == 'capa 2, cabeza 1: "it" atiende sobre todo a "tired" 0,715'


def test_arabic_plural_forms_and_western_digits(said) -> None:
    number, rtl, *forms = said["ar"]
    assert number == "0.715" and rtl is True
    assert len(set(forms)) == 6  # zero, one, two, few, many, other: each its own form
    assert forms[1].startswith("رمز واحد") and forms[2].startswith("رمزان")
    assert forms[3].startswith("3 رموز")


def test_every_browser_message_is_in_each_languages_words() -> None:
    messages = {m.id[0] if isinstance(m.id, tuple) else m.id for m in template("browser") if m.id}
    for language in ("es", "zh", "ar", PSEUDO):
        words = browser_words(language)
        assert set(words) == messages, language
        for message, said in words.items():
            if isinstance(said, dict):
                assert "other" in said, (language, message)
    assert browser_words("en") == {}
    assert browser_words(PSEUDO)["Matrix"].startswith("⟦Matrix")
