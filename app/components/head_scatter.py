"""The head scatter on the page: a Custom Components v2 host of encoder/web's head_scatter.js.

The module, joined with its Streamlit glue (encoder/web/glue/streamlit.js), is held by the page
(app/components/page_hosted.py) and its stylesheet is the component's; user text (tokens,
sentences) travels only in `data`. Hover, the keyboard's point (the plane is one Tab stop: arrow
keys, Home, End, Escape) and colouring are handled in the browser and send nothing back.
"""

from __future__ import annotations

from app.components.page_hosted import page_component
from encoder.web.hosts import scatter_style

NAME = "encoder_explorer.head_scatter"

_scatter = page_component(NAME, "streamlit_head_scatter", scatter_style())


def head_scatter(data: bytes, *, key: str) -> None:
    """Draw `data`, encoder.web.scatter.scatter_data's as JSON bytes without words (the scatter
    speaks the page's language: encoder/web/shared.js's PAGE_SPEECH; app.corpus_stats.scatter_for:
    kept serialised, and sent as the bytes they are)."""
    _scatter(key=key, data=data)
