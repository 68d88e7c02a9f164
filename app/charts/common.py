"""What every figure shares: fonts, colours, margins, escaping of user text, tick labels, HTML.

User text (tokens) is HTML-escaped before it reaches plotly: plotly renders a subset of HTML (<b>,
<br>, <a>, ...) in labels and hover text, and turns entities such as &lt; back into the characters
typed.
"""

from __future__ import annotations

import html
import math

import plotly.graph_objects as go
import plotly.io as pio

FONT_SIZE = 14
PAD_TOKEN = "[PAD]"
MAX_TICK_LABELS = 60  # more tokens than this: label every k-th tick (hover still names each)
TICK_CHARS = 14  # visible tick labels are cut to this length (hover shows the whole token)
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9"]
DIVERGING = "RdBu_r"  # signed values and differences: blue < 0 < red, white at 0
MARGIN = dict(l=60, r=20, t=60, b=50)


def escape(text: str) -> str:
    """User text made literal for plotly (quotes stay: plotly shows &quot; as typed)."""
    return html.escape(text, quote=False)


def plural(count: int, word: str) -> str:
    """'1 layer', '6 layers'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def depth_name(depth: int) -> str:
    """The residual stream at `depth` (hidden_states[depth]): 'embeddings' for 0, 'block k' for
    the stream after block k."""
    return "embeddings" if depth == 0 else f"block {depth - 1}"


def depth_labels(num_layers: int) -> list[str]:
    """Axis labels for every depth: 'embeddings', then 'after block k'."""
    return [depth_name(0)] + [f"after {depth_name(d)}" for d in range(1, num_layers + 1)]


def short(text: str, max_chars: int) -> str:
    """A tick or cell label: escaped, cut to max_chars with '…' (hover keeps the full text)."""
    return escape(text if len(text) <= max_chars else text[: max_chars - 1] + "…")


# plotly.py checks every property it is given, item by item, and copies the template into each
# figure: 40-230 ms per figure, most of a rerun's server time. Our builders' inputs are our own
# arrays, and tests/app/test_lean_figures.py checks that every builder's JSON is the same with
# validation on, so figures are built without it and the template is resolved once.
VALIDATE = False
PLOTLY_WHITE = pio.templates["plotly_white"].to_plotly_json()


def new_figure(data=None, layout: dict | None = None) -> go.Figure:
    """A figure in the plotly_white template; `data` may be traces or a figure (make_subplots)."""
    if isinstance(data, go.Figure):
        spec = data.to_dict()
        data, layout = spec["data"], {**spec["layout"], **(layout or {})}
    layout = {**(layout or {}), "template": PLOTLY_WHITE}
    return go.Figure(data, layout=layout, _validate=VALIDATE)


def base_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left"),
        font=dict(size=FONT_SIZE),
        height=height,
        margin=MARGIN,
        hoverlabel=dict(font_size=FONT_SIZE),
    )
    return fig


def visible_ticks(tokens: list[str]) -> tuple[list[int], list[str]]:
    """Every token, or every k-th one when there are more than MAX_TICK_LABELS; long ones cut."""
    step = 1 if len(tokens) <= MAX_TICK_LABELS else math.ceil(len(tokens) / (MAX_TICK_LABELS // 2))
    positions = list(range(0, len(tokens), step))
    return positions, [short(tokens[i], TICK_CHARS) for i in positions]


def figure_to_html(fig: go.Figure) -> str:
    """A self-contained HTML page (plotly.js inlined, works offline)."""
    return pio.to_html(fig, include_plotlyjs=True, full_html=True)
