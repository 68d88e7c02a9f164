"""Browser-side modules and the payloads they draw: one ES module per explorer, shipped inside the
library so the page, notebooks and offline files load the same bytes (joined into one file per
host by bundle.py, in Python: no npm, no CDN)."""

from importlib.resources import files

import numpy as np

# Series told apart by colour (lines, markers): every pair at least 10 apart (CIE76) in normal and
# simulated colour-blind vision, each at least 3:1 on white; in this order (blue, olive, green,
# magenta, vermillion, indigo, black, grey); shared.js has the same list (tests/app/test_palette.py
# checks both). Okabe and Ito's, darkened to 3:1, had two blues 9 apart and an orange 3 from
# vermillion for a protanope.
SERIES_COLOURS = [
    "#0072B2", "#6B5A00", "#00876A", "#C0488F", "#D55E00", "#3D2A8C", "#000000", "#8C8C8C"
]  # fmt: skip
DIGITS = 4  # decimals a figure's values keep in its data


def rounded(values) -> np.ndarray:
    return np.round(np.asarray(values, dtype=np.float32), DIGITS)


def plain(values) -> list:
    """`rounded` values as plain Python floats (nested lists, as the array's shape), each its
    shortest decimal: 0.1234, not float32's 0.12340000271797180 (an ES module's data)."""
    return np.round(rounded(values).astype(np.float64), DIGITS).tolist()


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
