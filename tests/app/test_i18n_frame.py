"""The frame in the page's languages (app.i18n, domain "frame"): the sidebar, the navigation's
titles, the messages and the status line, the class's invitation. Chinese and the pseudo-language
draw the page without an exception (the views' tests draw the frame in Spanish and Arabic); in
the pseudo-language every text the frame draws is wrapped in ⟦ ⟧ (an unmarked string shows as
bare English); a Spanish status line writes the run's numbers as Spanish does."""

from __future__ import annotations

import re

import pytest
from babel.numbers import parse_decimal

from app import i18n, registry, settings
from app.controls import setup_keys, sidebar
from app.i18n.catalogue import HERE, PSEUDO
from app.i18n.domains import DOMAINS, message_ids
from encoder.core.options import OPTIONS
from tests.app.helpers import assert_no_exception, open_page

SMALL = {"d_model": "64", "num_heads": "4", "num_layers": "3", "d_ff": "128"}
# the sidebar's widgets whose labels (and options, where they are words) the frame draws
WIDGETS = ("radio", "selectbox", "select_slider", "slider", "number_input", "text_area",
           "text_input", "toggle", "button")  # fmt: skip
LANGUAGE_KEY = "_language"  # its label is in every language on purpose; options: their own names
# options that are values, not words (numbers are left out too)
VALUE_OPTIONS = ("device", "b_device")


@pytest.fixture
def speaking():
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


def wrapped(text: str) -> bool:
    return text.startswith("⟦") and text.endswith("⟧")


# one real language (the views' tests take the others; the catalogue check covers completeness)
@pytest.mark.parametrize("language", ["zh", PSEUDO])
def test_the_frame_draws_in_a_language(language):
    at = open_page(view="Attention", lang=language, compare="1", b_norm="post", timing="1", **SMALL)
    assert_no_exception(at)
    assert at.sidebar.header[0].value != "Input"
    assert at.main.caption[-1].value.split(" ")[0] != "Device"  # the status line


def test_every_text_of_the_sidebar_and_the_status_line_is_marked():
    at = open_page(view="Attention", lang=PSEUDO, compare="1", b_norm="post", timing="1", **SMALL)
    assert_no_exception(at)
    bare = [h.value for h in at.sidebar.header if not wrapped(h.value)]
    # a caption that lists found models gives their names and the finder's reasons ("- name")
    bare += [c.value for c in at.sidebar.caption if not c.value.startswith("- ")]
    bare = [text for text in bare if not wrapped(text)]
    for kind in WIDGETS:
        for widget in at.sidebar.get(kind):
            if widget.key == LANGUAGE_KEY:
                continue
            texts = [
                widget.label,
                getattr(widget, "help", "") or "",
                getattr(widget, "placeholder", "") or "",
            ]
            words = kind in ("radio", "selectbox") and widget.key not in VALUE_OPTIONS
            options = [str(option) for option in getattr(widget, "options", ())]
            texts += [option for option in options if not option.isdigit()] if words else []
            bare += [text for text in texts if text and not wrapped(text)]
    assert bare == []
    assert wrapped(at.main.caption[-1].value)  # the status line


def test_the_class_invitation_is_marked():
    at = open_page(view="Lesson", lang=PSEUDO)
    assert_no_exception(at)
    labels = [e.label for e in at.main.expander]
    assert any(label.startswith("⟦Teach a class") for label in labels), labels
    buttons = {b.key: b.label for b in at.main.button}
    assert wrapped(buttons["class_start"]) and wrapped(buttons["class_join"])
    inputs = {t.key: t for t in at.main.text_input}
    assert wrapped(inputs["class_code"].label) and wrapped(inputs["class_nickname"].label)


def test_a_spanish_status_line_writes_the_runs_numbers_in_spanish():
    english = open_page(view="Attention", timing="1", **SMALL).main.caption[-1].value
    spanish = open_page(view="Attention", lang="es", timing="1", **SMALL).main.caption[-1].value
    parameters = int(re.search(r"([\d,]+) parameters", english).group(1).replace(",", ""))
    said = re.search(r"([\d.]+) parámetros", spanish).group(1)
    assert parameters >= 1000 and "." in said  # grouped as Spanish groups thousands
    assert int(parse_decimal(said, locale="es")) == parameters


def test_the_navigation_shows_titles_in_the_language_and_keeps_english_ones_inside(speaking):
    speaking("es")
    shown = registry.shown_titles()
    assert list(shown) == list(registry.BY_TITLE)  # the views' identities stay English
    assert shown["Lesson"] == "Lección" and shown["Attention"] == "Atención"
    speaking(PSEUDO)
    assert all(wrapped(title) for title in registry.shown_titles().values())


def test_every_word_the_controls_take_from_elsewhere_has_a_message(speaking):
    """encoder.core.options' labels, helps, value names and phrases, the sources' names (each
    marked N_ where it is defined), the examples' and presets' names: each is a message of the
    catalogues, so the page can say it in every language."""
    speaking(PSEUDO)
    words = {
        message
        for domain in DOMAINS
        for message in message_ids(HERE / f"{domain}.pot")
        if isinstance(message, str)
    }
    for option in OPTIONS:
        texts = [option.label, option.help, *option.names.values()]
        # a count's plural forms say it, and "{}" (the value alone) has no word to translate
        texts += [] if option.key in settings.COUNTED or option.phrase == "{}" else [option.phrase]
        texts += [option.labels.get(v, option.name(v)) for v in option.choices if option.named]
        texts += [option.name(v) for v in option.choices if option.named]
        assert set(texts) <= set(words), option.key
    assert set(settings.LABELS.values()) <= set(words)
    pickers = sidebar.picker_labels()
    for item in (*setup_keys.EXAMPLES, *setup_keys.ARCHITECTURE_PRESETS):
        assert wrapped(pickers[item["label"]])


def test_the_phones_sidebar_opener_is_named_in_the_pages_language():
    at = open_page(view="Tokens", lang="es")
    styles = [e.proto.body for e in at.get("html") if "stExpandSidebarButton" in e.proto.body]
    assert len(styles) == 1 and 'content: "Vistas, texto y modelo"' in styles[0]


@pytest.mark.parametrize(
    ("language", "one", "three"),
    [("en", "1 layer", "3 layers"), ("es", "1 capa", "3 capas"), ("ar", "طبقة واحدة", "3 طبقات")],
)
def test_a_count_of_layers_is_said_in_the_languages_plural_form(speaking, language, one, three):
    speaking(language)
    assert (settings.say("num_layers", 1), settings.say("num_layers", 3)) == (one, three)
    assert sidebar.describe_b({"num_layers": 1}).endswith(one)
