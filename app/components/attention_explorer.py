"""The attention explorer on the page: a Custom Components v2 host of encoder/web's ES module.

The component is registered once, with the library's module, joined with its Streamlit glue
(encoder/web/glue/streamlit_explorer.js), held by the page (app/components/page_hosted.py), and
its stylesheet; user text only ever
travels in the payload (raw bytes, no base64, no JSON of numbers). Every look (hover, query, pin,
mode, setup, another head) is handled in the browser and sends nothing; the explorer writes its
layer and head into the page's URL at once (history.replaceState, no message), and reports them
to Python as the component's `selection` state only once they settle (a second without another
head), so the session's `layer` and `head` follow with one cheap rerun. Streamlit sends an
unchanged payload again as a reference to the one the browser holds.

A still explorer (`report=False`: the lesson's steps, whose head is the step's, not the
Attention view's) opens where its payload's header says, and neither writes the URL nor reports
to the session. CCv2 data is bytes or JSON, not both, so it is a second registration of the same
module with the still glue (encoder/web/glue/streamlit.js).
"""

from __future__ import annotations

from collections.abc import Callable

from app.charts.common import presenting
from app.components.page_hosted import page_component
from encoder.web.hosts import explorer_style
from encoder.web.payload import with_large_text

NAME = "encoder_explorer.attention_explorer"
STILL_NAME = "encoder_explorer.attention_explorer_still"

_explorer = page_component(NAME, "streamlit_explorer", explorer_style())
_still_explorer = page_component(STILL_NAME, "streamlit_still_explorer", explorer_style())


def attention_explorer(
    payload: bytes, *, key: str, on_select: Callable[[], None] | None = None, report: bool = True
) -> dict | None:
    """Draw the explorer for `payload` (encoder.web.payload's bytes); returns the settled
    selection {"layer", "head"} once the browser has reported one, else None. `on_select` runs
    (as a widget callback) when it changes. `report=False`: a still explorer, opened where the
    payload's header says; it reports nothing and leaves the URL alone (returns None). In
    presenter mode its labels are large (encoder.web.payload.with_large_text)."""
    if presenting():
        payload = with_large_text(payload)
    if not report:
        _still_explorer(key=key, data=payload)
        return None
    result = _explorer(
        key=key,
        data=payload,
        default={"selection": None},
        on_selection_change=on_select or (lambda: None),
    )
    return result.selection
