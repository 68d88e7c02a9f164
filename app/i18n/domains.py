"""The catalogues' domains (which files' messages each holds), their extraction with Babel, and
the checks every shipped catalogue passes: complete (nothing untranslated or fuzzy), each
translation's placeholders the source's, a plural form for each of the language's forms, and no
translation another domain's hides."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from babel import Locale
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.pofile import read_po, write_po

from app.i18n import LANGUAGES
from app.i18n.browser import DOMAIN as BROWSER
from app.i18n.catalogue import HERE, LOCALE, PLACEHOLDER, SOURCE, compiled, po_files

ROOT = HERE.parent.parent
# Said: the library's (encoder.core.said); num: a number's name in a lesson step's numbers table
# (app.lesson.text.Text.num, and the `num` that app.page.changes' sentences are given)
KEYWORDS = {"_": None, "n_": (1, 2), "Said": None, "num": None}
# domain -> the files (or folders, every .py below) whose messages it holds
DOMAINS: dict[str, tuple[str, ...]] = {
    # the page around the views: the sidebar, the navigation, the class, the messages
    "frame": (
        *(
            f"app/{name}.py"
            for name in (
                "main",
                "registry",
                "runs",
                "memory",
                "sources",
                "settings",
                "downloads",
                "explorer_payloads",
                "training_session",
                "user_text",
                "corpus_stats",
                "streamlit_private",
            )
        ),
        "app/controls",
    ),  # fmt: skip
    "lesson": ("app/lesson",),
    # the views of one run's numbers, and their charts
    "views": (
        *(
            f"app/views/{name}.py"
            for name in (
                "tokens",
                "attention",
                "steps",
                "step_tables",
                "layernorm",
            )
        ),
        "app/page",
        *(f"app/charts/{name}.py" for name in ("attention", "steps", "norms", "common")),
    ),  # fmt: skip
    # the views that analyse, measure, train and export, and their charts
    "analysis": (
        *(
            f"app/views/{name}.py"
            for name in (
                "activations",
                "shapes",
                "cost",
                "corpus",
                "exercises",
                "export",
                "training",
                "training_results",
            )
        ),
        *(
            f"app/charts/{name}.py"
            for name in (
                "activations",
                "cost",
                "heads",
                "ablation",
                "training",
            )
        ),
    ),  # fmt: skip
    # what the library says: an architecture refused, a model on disk that cannot be read, a
    # task's name, a measurement that cannot run, a figure's words (marked with
    # encoder.core.said.Said)
    "library": tuple(
        f"encoder/{name}" for name in ("core", "tasks", "io", "inspect", "measure", "train", "web")
    ),
    # what an exercise's checker tells the student
    "exercises": ("encoder/exercises",),
    # what the class's store refuses (a full class, a closed question, a store away)
    "classroom": ("app/classroom",),
    # the browser's own words: the explorer, the scatter, a figure's tools, the page's scripts
    "browser": ("encoder/web", "app/assets/page"),
}
METHODS = {".py": "python", ".js": "javascript"}  # how Babel reads each kind of file
TRANSLATED = tuple(language for language in LANGUAGES if language != SOURCE)


def files_of(domain: str) -> Iterator[Path]:
    """The domain's files: the browser's .js files, the other domains' .py files."""
    kinds = {".js"} if domain == BROWSER else {".py"}
    for name in DOMAINS[domain]:
        path = ROOT / name
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in kinds)
        else:
            yield path


def template(domain: str) -> Catalog:
    """Every message marked in the domain's files, with where it is."""
    catalog = Catalog(project="Encoder Explorer", domain=domain)
    for path in files_of(domain):
        for line, message, comments, _context in extract_from_file(
            METHODS[path.suffix], str(path), keywords=KEYWORDS, comment_tags=("i18n:",)
        ):
            where = (path.relative_to(ROOT).as_posix(), line)
            catalog.add(message, locations=[where], auto_comments=comments)
    return catalog


def po_path(language: str, domain: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / f"{domain}.po"


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
    with (HERE / f"{domain}.pot").open("rb") as pot:
        wanted = {message.id for message in read_po(pot) if message.id}
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


def shadowed(language: str) -> Iterator[str]:
    """Each message the code's `_()` shows from another domain's catalogue, translated otherwise:
    the page speaks every domain of a language through one merged catalogue, which takes a
    message from the first file that holds it (catalogue.translations, in po_files' order), so
    this domain's translation is never shown. The browser's own catalogue is read whole by the
    browser (app.i18n.browser), so its translations are shown even where the page's differ."""
    first: dict[str | tuple, tuple[str, object]] = {}
    for path in po_files(language):
        with path.open("rb") as po:
            catalog = read_po(po, locale=language)
        for message in catalog:
            if not message.id:
                continue
            shown = first.setdefault(message.id, (path.stem, message.string))
            if path.stem != BROWSER and message.string != shown[1]:
                yield (
                    f"{language}/{path.stem}: {message.id!r}: the page shows {shown[0]}'s "
                    f"{shown[1]!r}, not this {message.string!r}"
                )


def check_all() -> list[str]:
    return [
        *(
            problem
            for domain in DOMAINS
            for language in TRANSLATED
            for problem in problems_of(language, domain)
        ),
        *(problem for language in TRANSLATED for problem in shadowed(language)),
    ]
