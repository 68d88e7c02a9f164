"""User text inside Streamlit messages, shown exactly as typed.

`st.warning`, `st.info` and friends render markdown (plus Streamlit's `:color[...]` directives
and `$...$` LaTeX). Backslash-escaping every ASCII punctuation character, which CommonMark
allows, turns all of that back into plain characters.
"""

from __future__ import annotations

import re
import string

from app.i18n import quoted as in_quotes

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")


def literal(text: str) -> str:
    """`text` escaped so that markdown shows it character for character."""
    return _PUNCTUATION.sub(r"\\\1", text).replace("\n", " ")


def quoted(token: str) -> str:
    """A token inside markdown text: in the language's quotation marks (app.i18n.quoted; a token
    may be a straight quote), literal."""
    return literal(in_quotes(token))
