"""The page's languages and the one `_()` every string a user reads goes through.

    from app.i18n import _, n_, number
    _("Layer {layer}, head {head} gives {weight} to {token}",
      layer=2, head=1, weight=number(0.715, 3), token=quoted(token))
    n_("{count} token", "{count} tokens", count)   # the language's plural forms
    TITLE = N_("Tokens")   # marked where it is defined (a table's word); _(TITLE) where shown

Catalogues are gettext .po files, two per language, found by folder (domains.py): `server`
(every .py under app/ and encoder/) and `browser` (every .js there), at
app/i18n/locale/<lang>/LC_MESSAGES/<domain>.po, made from app/i18n/<domain>.pot by
`python -m app.i18n extract`, read with Babel and compiled once per process (catalogue.py).
A message is English, the source; its placeholders are named, and the values (numbers already
formatted by `number`, tokens the user typed) are put in after translation, so a translation
orders them as its language does and never translates them. The pseudo-language
(PSEUDO) wraps and lengthens every marked message, for the test that finds unmarked text.

Which language a run speaks comes from `speaking` (main.py points it at the session's choice:
the sidebar, the URL's `lang`, the browser's language); this module imports no Streamlit, so
charts and views use it alike.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import cache
from string import Formatter
from typing import NamedTuple, TypeVar

from babel import Locale
from babel.numbers import (
    format_decimal,
    format_percent,
    get_decimal_symbol,
    get_group_symbol,
    get_minus_sign_symbol,
)

from app.i18n.catalogue import PSEUDO, SOURCE, translations
from encoder.core.said import N_ as N_  # the marker, for app code too
from encoder.core.said import Listed, Quoted, Written, said_of


class Language(NamedTuple):
    """A language the page speaks: its own name (as the sidebar offers it), the Babel locale
    whose numbers, percents and direction (CLDR's) it takes, and its quotation marks as CLDR
    gives them (delimiters: quotationStart, quotationEnd), which Babel does not carry."""

    name: str
    locale: str
    quotes: tuple[str, str]


# The page's languages, by code (as a link's `lang=` names it): a new language is a row here and
# a copy of the catalogues (docs/translating.md). Arabic's opening mark is U+201D: in
# right-to-left text it stands on the right, where a quotation opens.
SPOKEN = {
    "en": Language("English", "en", ("“", "”")),
    "es": Language("Español", "es", ("«", "»")),
    "zh": Language("简体中文", "zh_Hans_CN", ("“", "”")),
    "ar": Language("العربية", "ar", ("”", "“")),
}
LANGUAGES = {code: spoken.name for code, spoken in SPOKEN.items()}
NUMBER_LOCALES = {**{code: spoken.locale for code, spoken in SPOKEN.items()}, PSEUDO: "en"}
# written right to left, as CLDR says: the page's and the browser's one list (`direction()` goes
# to the browser with each run, streamlit_private.page_language, and in each module's data)
RIGHT_TO_LEFT = frozenset(
    code
    for code, spoken in SPOKEN.items()
    if Locale.parse(spoken.locale).character_order == "right-to-left"
)
T = TypeVar("T")
ISOLATE = ("\u2068", "\u2069")  # first-strong isolate … pop: a quoted token keeps its direction

_speaking: Callable[[], str] = lambda: SOURCE  # noqa: E731  (set by main.py, once)
_this_run = threading.local()  # .language: what this thread's script run speaks, once known


def speak_with(language_of_this_run: Callable[[], str]) -> None:
    """Where `_()` learns this run's language (a key of LANGUAGES, or PSEUDO)."""
    global _speaking
    _speaking = language_of_this_run


def speak_now(spoken: str | None) -> None:
    """This thread's script run speaks `spoken` from here on (main.py, once the link and the
    sidebar have said; None: not known yet). A run then asks the session once, not at each of
    its thousands of messages and numbers (about 25 µs each, 150 ms a run: 5,500 asks); a
    thread never told (a fragment's own run, a background measurement) asks `speak_with`'s
    function each time. Streamlit runs each session's script in a thread of its own."""
    _this_run.language = spoken


def language() -> str:
    """This run's language: a key of LANGUAGES, or PSEUDO."""
    spoken = getattr(_this_run, "language", None) or _speaking()
    return spoken if spoken in LANGUAGES or spoken == PSEUDO else SOURCE


def in_this_language(build: Callable[[], T]) -> Callable[[], T]:
    """`build`, to be called later in another thread, speaking this run's language: a download's
    file, which Streamlit builds when its button is clicked (on_click="ignore") in a worker
    thread that knows no session, and so would speak English."""
    spoken = language()

    def built() -> T:
        before = getattr(_this_run, "language", None)
        speak_now(spoken)
        try:
            return build()
        finally:
            speak_now(before)

    return built


def direction() -> str:
    """ "rtl" or "ltr": how this run's language is written."""
    return "rtl" if language() in RIGHT_TO_LEFT else "ltr"


def quoted(text: str) -> str:
    """`text` in this run's language's quotation marks (its row in SPOKEN); right to left, the text
    isolated, so that a left-to-right token does not carry the marks to its side."""
    start, end = SPOKEN.get(language(), SPOKEN[SOURCE]).quotes
    if direction() == "rtl":
        text = ISOLATE[0] + text + ISOLATE[1]
    return start + text + end


def _(message: str, **values: object) -> str:
    """`message` in this run's language, with `values` put in its named placeholders."""
    said = translations(language()).gettext(message)
    return said.format(**values) if values else said


def in_every_language(message: str) -> str:
    """`message` in each of the page's languages, once each, joined by " · " (what a reader who
    reads none of the others finds the language control by: "Language · Idioma · 语言 · اللغة")."""
    return " · ".join(dict.fromkeys(translations(code).gettext(message) for code in LANGUAGES))


def n_(singular: str, plural: str, count: int, **values: object) -> str:
    """The form of `singular`/`plural` that `count` takes in this run's language, with `count`
    (formatted) and `values` put in its placeholders."""
    said = translations(language()).ngettext(singular, plural, count)
    return said.format(count=number(count), **values)


def number(value: float, digits: int = 0, grouped: bool = True) -> str:
    """`value` written as this run's language writes numbers ("0,715" in Spanish), with
    `digits` decimals, its thousands grouped unless `grouped` is False (in English, as
    f"{value:,.3f}" or, ungrouped, f"{value:.3f}")."""
    pattern = ("#,##0" if grouped else "0") + ("." + "0" * digits if digits > 0 else "")
    written = format_decimal(value, format=pattern, locale=NUMBER_LOCALES[language()])
    return minus_sign() + written[1:] if written.startswith("-") else written


def percent(share: float, digits: int = 0) -> str:
    """`share` as a percentage, as this run's language writes one (CLDR's pattern, by Babel):
    "12.5%" in English (as f"{share:.1%}"), "12,5 %" in Spanish; `digits` decimals, not grouped;
    its minus `minus_sign`'s."""
    locale = NUMBER_LOCALES[language()]
    written = format_percent(share, _percent_pattern(locale, digits), locale=locale)
    return minus_sign() + written[1:] if written.startswith("-") else written


@cache
def _percent_pattern(locale: str, digits: int) -> str:
    """The locale's percent pattern ("#,##0 %"), its number ungrouped with `digits` decimals."""
    number_part = "0" + ("." + "0" * digits if digits > 0 else "")
    return re.sub(r"[#0,.]+", number_part, Locale.parse(locale).percent_formats[None].pattern)


def told(said: object) -> str:
    """What the library said (an `encoder.core.said.Said`, or an error raised with one) in this
    run's language: its template translated (a sentence that counts, `Said.plural`, in the
    language's form for its count), its bare numbers written as the language writes them;
    anything else, and everything in English, as `str` gives it."""
    if isinstance(said, BaseException):
        said = said_of(said)  # the Said it was raised with, else its str
    template, values = getattr(said, "template", None), getattr(said, "values", {})
    if template is None or language() == SOURCE:
        return str(said)
    bare = {name for _, name, spec, turn in Formatter().parse(template) if not (spec or turn)}
    written = {name: _written(value) if name in bare else value for name, value in values.items()}
    plural, catalogue = getattr(said, "plural_template", None), translations(language())
    translated = (
        catalogue.gettext(template)
        if plural is None
        else catalogue.ngettext(template, plural, values["count"])
    )
    return translated.format(**written) if values else translated


def told_sentence(said: object) -> str:
    """told(said) as a sentence of its own: its first letter a capital, a full stop at its end."""
    text = told(said).rstrip(".")
    return f"{text[:1].upper()}{text[1:]}."


def _written(value: object) -> object:
    """A number as the run's language writes it (whole numbers as f"{value}" does, others to
    the digits `repr` gives; a percentage as `percent` writes it); a sentence the
    library said inside another (a Said, an error raised with one) told in the language too; a
    token the reader typed (a Quoted) in the language's quotation marks; a Listed's items so, with
    ", " between; anything else as it is."""
    if hasattr(value, "template") or isinstance(value, BaseException):
        return told(value)
    if isinstance(value, Quoted):
        return quoted(value.text)
    if isinstance(value, Listed):
        return ", ".join(str(_written(item)) for item in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, Written) and value.text.endswith("%"):  # format(share, ".1%")
        return percent(float(value), len(value.text[:-1].partition(".")[2]))
    return localised(repr(value))


def symbols() -> str:
    """The language's decimal and group symbols, as Plotly's layout.separators takes them
    (".," in English, ",." in Spanish)."""
    locale = NUMBER_LOCALES[language()]
    return get_decimal_symbol(locale) + get_group_symbol(locale)


@cache
def _minus_sign(locale: str) -> str:
    return get_minus_sign_symbol(locale)


def minus_sign() -> str:
    """The language's minus sign: "-", but in Arabic a left-to-right mark before it (CLDR's), so
    that "-0.5" keeps its sign on the left inside right-to-left text and tables, as the
    browser's Intl writes it (Babel's patterns write a bare "-")."""
    return _minus_sign(NUMBER_LOCALES[language()])


SIGN = re.compile(r"(?<![\w.])-(?=\d)")  # a number's minus, not an exponent's ("1e-05")


def localised(shown: str) -> str:
    """A number written in English (format(value, spec): ".3g", ",", ".1%"...) as this run's
    language writes it: the same digits, the language's decimal and group symbols ("0.715" is
    "0,715" in Spanish) and its minus sign (`minus_sign`). The English is left as it is, byte
    for byte."""
    if language() == SOURCE:
        return shown
    if not writes_numbers_as_english():
        decimal, group = symbols()
        shown = "".join(decimal if c == "." else group if c == "," else c for c in shown)
    minus = minus_sign()
    return shown if minus == "-" else SIGN.sub(minus, shown)


def writes_numbers_as_english() -> bool:
    """Whether this run's language writes numbers with English's symbols ("0.715", "1,536"):
    English, Chinese and Arabic do here; Spanish does not."""
    return symbols() == ".,"


def choose_language(asked: str | None, browser_locale: str | None) -> str:
    """The language to speak: the one asked for (the URL's `lang`, the sidebar), if we have it;
    else the browser's, if we have it; else English."""
    for wanted in (asked, (browser_locale or "").replace("_", "-").split("-")[0].lower()):
        if wanted in LANGUAGES or (wanted == PSEUDO and asked == PSEUDO):
            return wanted
    return SOURCE
