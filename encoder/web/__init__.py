"""Browser-side modules and the payloads they draw: one ES module per explorer, shipped inside the
library so the page, notebooks and offline files load the same bytes (joined into one file per
host by bundle.py, in Python: no npm, no CDN)."""

from importlib.resources import files


def asset(name: str) -> str:
    """The text of one of this package's browser files (e.g. "attention_explorer.js")."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")


def spoken_in(data: dict, lang: str, words: dict | None, direction: str = "ltr") -> dict:
    """A module's `data` drawn in language `lang` (a BCP 47 tag) with `words`, the browser's
    messages in it (app.i18n.browser), written in `direction` ("rtl": right to left, as
    app.i18n.direction says): the module then says its own words (readouts, buttons, labels) in
    it; English (no words) leaves `data` as it is."""
    if not words and lang == "en":
        return data
    return {**data, "lang": lang, "words": dict(words or {}), "direction": direction}
