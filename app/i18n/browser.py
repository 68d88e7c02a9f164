"""The browser's words: the "browser" catalogue's messages (every .js module's: the explorer, the
scatter, a figure's tools, the page's scripts) in one language, as the browser's
`_()` and `n_()` (encoder/web/shared.js) read them: {English message: its translation}, and for a
plural message {singular: {CLDR category: form}} (the category Intl.PluralRules picks). English
has none: the browser's messages are English."""

from __future__ import annotations

import gettext
from functools import cache

from babel import Locale
from babel.messages.pofile import read_po

from app.i18n import LANGUAGES, language
from app.i18n.catalogue import LOCALE, PSEUDO, SOURCE, po_path, pseudo

DOMAIN = "browser"
SAMPLES = (*range(0, 201), 1000, 1_000_000, 2_000_000)  # numbers that show every form


def categories(lang: str, expression: str, forms: int) -> tuple[str, ...]:
    """Each gettext plural form's CLDR category in `lang` (form i: the category of the numbers
    that the catalogue's plural expression sends to i)."""
    plural = gettext.c2py(expression)
    rule = Locale.parse(lang).plural_form
    found: dict[int, str] = {}
    for n in SAMPLES:
        found.setdefault(plural(n), rule(n))
    return tuple(found.get(i, "other") for i in range(forms))


@cache
def browser_words(lang: str) -> dict[str, str | dict[str, str]]:
    """The browser domain's messages in `lang` (a key of LANGUAGES or PSEUDO); {} in English
    or for a language without a catalogue."""
    path = po_path(lang, DOMAIN)
    if lang == PSEUDO:
        path = LOCALE.parent / f"{DOMAIN}.pot"
    elif lang == SOURCE or lang not in LANGUAGES or not path.exists():
        return {}
    with path.open("rb") as po:
        catalog = read_po(po, locale=None if lang == PSEUDO else lang)
    words: dict[str, str | dict[str, str]] = {}
    for message in catalog:
        if not message.id:
            continue
        if isinstance(message.id, tuple):
            if lang == PSEUDO:
                singular, plural = message.id[:2]
                words[singular] = {"one": pseudo(singular), "other": pseudo(plural)}
                continue
            if not all(message.string) or message.fuzzy:
                continue
            names = categories(lang, catalog.plural_expr, catalog.num_plurals)
            words[message.id[0]] = dict(zip(names, message.string, strict=True))
        elif lang == PSEUDO:
            words[message.id] = pseudo(message.id)
        elif message.string and not message.fuzzy:
            words[message.id] = message.string
    return words


def words_now() -> dict[str, str | dict[str, str]]:
    """The browser's words in this run's language."""
    return browser_words(language())
