"""The catalogues: every domain's .po file of a language, read with Babel and compiled once per
process into one gettext Translations (the .po files are the source; no compiled file is kept).
The pseudo-language's are made, not read: each message wrapped in ⟦ ⟧ and lengthened by a
third, its {placeholders} left as they are."""

from __future__ import annotations

import gettext
import re
from functools import cache
from io import BytesIO
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

HERE = Path(__file__).resolve().parent
LOCALE = HERE / "locale"
SOURCE = "en"
PSEUDO = "en-XA"  # the pseudo-language, as Android and Chrome name it
PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*(?:![rsa])?(?::[^{}]*)?\}")


def po_files(language: str) -> list[Path]:
    return sorted((LOCALE / language / "LC_MESSAGES").glob("*.po"))


def compiled(path: Path) -> gettext.GNUTranslations:
    """One .po file as gettext reads a compiled one."""
    with path.open("rb") as po:
        catalog = read_po(po)
    mo = BytesIO()
    write_mo(mo, catalog, use_fuzzy=False)
    mo.seek(0)
    return gettext.GNUTranslations(mo)


def pseudo(message: str) -> str:
    """⟦message, lengthened⟧: its words padded by a third with "·", its placeholders kept."""
    kept = PLACEHOLDER.findall(message)
    padding = "·" * max(1, len(PLACEHOLDER.sub("", message)) // 3)
    return f"⟦{message}{padding}⟧" if kept or message else message


class PseudoTranslations(gettext.NullTranslations):
    def gettext(self, message: str) -> str:
        return pseudo(message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return pseudo(singular if n == 1 else plural)


@cache
def translations(language: str) -> gettext.NullTranslations:
    """Every catalogue of `language` in one (English and unknown languages: the messages as
    they are)."""
    if language == PSEUDO:
        return PseudoTranslations()
    merged = gettext.NullTranslations()
    for path in po_files(language):
        merged.add_fallback(compiled(path))
    return merged
