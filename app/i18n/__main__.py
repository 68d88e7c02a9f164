"""`python -m app.i18n extract`: every marked message (`_("...")`, `n_("...", "...", n)`, ...) of
every .py file under app/ and encoder/ into app/i18n/server.pot, of every .js file there into
browser.pot, and each language's server.po and browser.po brought up to date with them (new
messages untranslated, gone ones dropped). `python -m app.i18n check`: what
tests/app/test_i18n.py asserts, as a list of problems (exit 1 if any)."""

from __future__ import annotations

import sys

from app.i18n.domains import check_all, extract_all


def main(argv: list[str]) -> int:
    command = argv[1] if len(argv) > 1 else ""
    if command == "extract":
        for domain, count in extract_all().items():
            print(f"{domain}: {count} messages")
        return 0
    if command == "check":
        problems = check_all()
        print("\n".join(problems) or "every catalogue is complete")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
