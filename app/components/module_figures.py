"""Figures our own ES modules draw on the page, each a Custom Components v2 host of one of
encoder/web's modules: the token lines (token_lines.js: norms per token), the value histogram
(value_histogram.js), the top units (top_units.js), the block diagram (block_diagram.js), the
heads' fingerprint (head_fingerprint.js), the sentences' similarity matrix (similarity_matrix.js:
its depth slider draws in the browser) and the masked words' lens grid (lens_grid.js). The
views, the lesson, the handout and Export draw these figures with these modules alone
(app.page.figures.Drawn: a module and its data, built beside the module in encoder/web).

Each module, joined with the still Streamlit glue (encoder/web/glue/streamlit.js), is held by
the page (app/components/page_hosted.py), its stylesheet is the component's; user text (tokens)
travels only in `data`. Hover, the keyboard's choice and the readout are handled in the browser
and send nothing back: a rerun sends the new numbers and the module draws them, with no Plotly on
the page.
"""

from __future__ import annotations

from app.charts.common import presenting
from app.components.page_hosted import page_component
from app.page.figures import Drawn, spoken
from encoder.web import hosts
from encoder.web.hosts import figure_style

MODULES = hosts.FIGURE_MODULES
# the components' names (a figure's element on the page names its component)
LINES, HISTOGRAM, TOP_UNITS, DIAGRAM, FINGERPRINT, SIMILARITY, LENS = (
    f"encoder_explorer.{module.removesuffix('.js')}" for module in MODULES
)
_COMPONENTS = {
    module: page_component(
        f"encoder_explorer.{module.removesuffix('.js')}",
        f"streamlit_{module.removesuffix('.js')}",
        figure_style(module),
    )
    for module in MODULES
}


def module_figure(figure: Drawn, *, key: str) -> None:
    """`figure` drawn by its module under `key`, in the page's language (in presenter mode with
    "large_text": encoder/web/figure_tools.js's mountFigure draws it larger)."""
    data = {**figure.data, "large_text": True} if presenting() else figure.data
    _COMPONENTS[figure.module](key=key, data=spoken(data))


def similarity_matrix(data: dict, *, key: str) -> None:
    """The similarity matrix of encoder.web.similarity_matrix.similarity_payload's `data`."""
    module_figure(Drawn(hosts.SIMILARITY, data), key=key)


def lens_grid(data: dict, *, key: str) -> None:
    """The lens grid of encoder.web.lens_grid.lens_payload's `data`."""
    module_figure(Drawn(hosts.LENS, data), key=key)
