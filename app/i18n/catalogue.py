"""The catalogues: a language's `server` .po file (app/i18n/locale/<lang>/LC_MESSAGES/server.po),
read with Babel and compiled once per process into a gettext Translations (the .po files are the
source; no compiled file is kept); the browser's (browser.po) is read by app.i18n.browser.
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


def po_path(language: str, domain: str = "server") -> Path:
    return LOCALE / language / "LC_MESSAGES" / f"{domain}.po"


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
    """The server catalogue of `language` (English and unknown languages: the messages as they
    are)."""
    if language == PSEUDO:
        return PseudoTranslations()
    path = po_path(language)
    return compiled(path) if path.exists() else gettext.NullTranslations()
