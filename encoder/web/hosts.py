"""The explorer's ES module as a host loads it: the module's own source followed by a few lines
of host glue (anywidget's `export default {render}`, an offline page's mount call).

The module is one file with no imports, so glue appended to it can call `mount` directly and
the result is still one self-contained module (anywidget imports `_esm` from a Blob; an offline
file inlines it in a <script type="module">).
"""

from __future__ import annotations

from encoder.web import asset

MODULE = "attention_explorer.js"
STYLE = "attention_explorer.css"


def explorer_style() -> str:
    """The explorer's stylesheet."""
    return asset(STYLE)


def module_with_host(glue: str) -> str:
    """The explorer's module with a host's glue appended (glue is trusted code of ours, never
    anything a user typed: user text travels as data)."""
    return f"{asset(MODULE)}\n// ---- host glue\n{glue}"
