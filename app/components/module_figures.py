"""Figures our own ES modules draw on the page, each a Custom Components v2 host of one of
encoder/web's modules: the token lines (token_lines.js: LayerNorm's norms per token), the value
histogram (value_histogram.js), the top units (top_units.js: Activations' first tab), the block
diagram (block_diagram.js: Shapes) and the heads' fingerprint (head_fingerprint.js: Heads across
a corpus).

Each module, joined with the still Streamlit glue (encoder/web/glue/streamlit.js), is held by
the page (app/components/page_hosted.py), its stylesheet is the component's; user text (tokens)
travels only in `data`. Hover, the keyboard's choice and the readout are handled in the browser
and send nothing back: a rerun sends the new numbers and the module draws them, with no Plotly on
the page.
"""

from __future__ import annotations

from collections.abc import Callable

from app.charts.common import presenting
from app.components.page_hosted import page_component
from app.i18n import direction, language
from app.i18n.browser import words_now
from encoder.web import hosts, spoken_in
from encoder.web.hosts import figure_style

# the components' names (a figure's element on the page names its component)
LINES, HISTOGRAM, TOP_UNITS, DIAGRAM, FINGERPRINT = (
    f"encoder_explorer.{name}"
    for name in ("token_lines", "value_histogram", "top_units", "block_diagram", "head_fingerprint")
)
_lines = page_component(LINES, "streamlit_token_lines", figure_style(hosts.LINES))
_histogram = page_component(HISTOGRAM, "streamlit_value_histogram", figure_style(hosts.HISTOGRAM))
_top_units = page_component(TOP_UNITS, "streamlit_top_units", figure_style(hosts.TOP_UNITS))
_diagram = page_component(DIAGRAM, "streamlit_block_diagram", figure_style(hosts.DIAGRAM))
_fingerprint = page_component(
    FINGERPRINT, "streamlit_head_fingerprint", figure_style(hosts.FINGERPRINT)
)


def _drawn(component: Callable) -> Callable[..., None]:
    def draw(data: dict, *, key: str) -> None:
        data = {**data, "large_text": True} if presenting() else data
        component(key=key, data=spoken_in(data, language(), words_now(), direction()))

    return draw


# each draws its module's `data` under `key`, in the page's language (in presenter mode with
# "large_text": encoder/web/figure_tools.js's mountFigure draws it larger)
token_lines = _drawn(_lines)  # app.charts.norms.layernorm_lines
value_histogram = _drawn(_histogram)  # app.charts.value_histogram.value_histogram_data
top_units = _drawn(_top_units)  # app.charts.top_units.top_units_data
block_diagram = _drawn(_diagram)  # app.charts.diagram.block_diagram_data
head_fingerprint = _drawn(_fingerprint)  # app.charts.heads.fingerprint_data
