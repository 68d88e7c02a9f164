"""Browser-side modules and the payloads they draw: one ES module per explorer, shipped inside the
library so the page, notebooks and offline files load the same bytes (no build step, no CDN)."""

from importlib.resources import files


def asset(name: str) -> str:
    """The text of one of this package's browser files (e.g. "attention_explorer.js")."""
    return files(__name__).joinpath(name).read_text(encoding="utf-8")
