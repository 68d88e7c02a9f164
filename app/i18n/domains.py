"""The two catalogues, found by folder: `server`, every message marked in a .py file under app/
and encoder/ (the page's `_()` and the library's `Said`), and `browser`, every message marked in
a .js file there (the browser's own words, app.i18n.browser). A new module anywhere below is
read by the next `python -m app.i18n extract`; no list names it. Here too the checks every
shipped catalogue passes: complete (nothing untranslated or fuzzy), each translation's
placeholders the source's, a plural form for each of the language's forms."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from babel import Locale
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.pofile import read_po, write_po

from app.i18n import LANGUAGES
from app.i18n.catalogue import HERE, PLACEHOLDER, SOURCE, compiled, po_path

ROOT = HERE.parent.parent
FOLDERS = ("app", "encoder")  # every file of a catalogue's kind below these is read
# domain -> the files it reads (by their suffix) and how Babel reads them
DOMAINS = {"server": (".py", "python"), "browser": (".js", "javascript")}
# Said: the library's (encoder.core.said); N_: a message marked where it is defined and told
# where it is shown (`_(name)`); num: a number's name in a lesson step's numbers table
# (app.lesson.text.Text.num, and the `num` that the shared sentences are given)
KEYWORDS = {"_": None, "N_": None, "n_": (1, 2), "Said": None, "plural": (1, 2), "num": None}
TRANSLATED = tuple(language for language in LANGUAGES if language != SOURCE)


def files_of(domain: str) -> list[Path]:
    suffix = DOMAINS[domain][0]
    found = (path for folder in FOLDERS for path in (ROOT / folder).rglob(f"*{suffix}"))
    return sorted(path for path in found if "__pycache__" not in path.parts)


def template(domain: str) -> Catalog:
    """Every message marked in the domain's files, with where it is."""
    catalog = Catalog(project="Encoder Explorer", domain=domain)
    for path in files_of(domain):
        for line, message, comments, _context in extract_from_file(
            DOMAINS[domain][1], str(path), keywords=KEYWORDS, comment_tags=("i18n:",)
        ):
            where = (path.relative_to(ROOT).as_posix(), line)
            catalog.add(message, locations=[where], auto_comments=comments)
    return catalog


def extract_all() -> dict[str, int]:
    """Write each domain's .pot and update each language's .po: {domain: message count}."""
    counts = {}
    for domain in DOMAINS:
        pot = template(domain)
        counts[domain] = len(pot)
        marked = {message.id for message in pot if message.id}
        if all(
            message_ids(path) == marked
            for path in (HERE / f"{domain}.pot", *(po_path(lang, domain) for lang in TRANSLATED))
        ):
            continue  # unchanged: its files are left as they are (no new date in their header)
        with (HERE / f"{domain}.pot").open("wb") as out:
            write_po(out, pot, sort_output=True, include_lineno=False)
        for language in TRANSLATED:
            path = po_path(language, domain)
            if path.exists():
                with path.open("rb") as po:
                    catalog = read_po(po, locale=language)
            else:
                catalog = Catalog(locale=language, domain=domain, project="Encoder Explorer")
            catalog.update(pot, no_fuzzy_matching=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("wb") as out:
                write_po(out, catalog, sort_output=True, ignore_obsolete=True, include_lineno=False)
    return counts


def message_ids(path: Path) -> set:
    """The message ids of a template or a catalogue as it is on disk (empty if there is none)."""
    if not path.exists():
        return set()
    with path.open("rb") as po:
        return {message.id for message in read_po(po) if message.id}


def placeholders(text: str) -> list[str]:
    return sorted(PLACEHOLDER.findall(text))


def problems_of(language: str, domain: str) -> Iterator[str]:
    """What is wrong with one catalogue, one line each."""
    path = po_path(language, domain)
    if not path.exists():
        yield f"{language}/{domain}: no catalogue"
        return
    with path.open("rb") as po:
        catalog = read_po(po, locale=language)
    forms = Locale.parse(language).plural_form.tags | {"other"}  # CLDR leaves "other" out
    wanted = message_ids(HERE / f"{domain}.pot")
    have = {message.id for message in catalog if message.id}
    for missing in sorted(wanted - have, key=str):
        yield f"{language}/{domain}: not in the catalogue: {missing!r}"
    for message in catalog:
        if not message.id:
            continue
        name = f"{language}/{domain}: {message.id!r}"
        if message.fuzzy:
            yield f"{name}: fuzzy"
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if not all(strings):
            yield f"{name}: untranslated"
            continue
        sources = message.id if isinstance(message.id, tuple) else (message.id,)
        if isinstance(message.id, tuple) and len(strings) != len(forms):
            yield f"{name}: {len(strings)} plural forms, {language} has {len(forms)}"
        allowed = {p for source in sources for p in placeholders(source)}
        for text in strings:  # a plural form may leave out the count ("one token")
            plural_ok = isinstance(message.id, tuple) and set(placeholders(text)) <= allowed
            if not plural_ok and placeholders(text) not in [placeholders(s) for s in sources]:
                yield f"{name}: placeholders {placeholders(text)} not the source's"
    try:
        compiled(path)
    except Exception as error:  # noqa: BLE001 - any failure to compile is the problem itself
        yield f"{language}/{domain}: does not compile: {error}"


def check_all() -> list[str]:
    return [
        problem
        for domain in DOMAINS
        for language in TRANSLATED
        for problem in problems_of(language, domain)
    ]
