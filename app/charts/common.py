"""What every figure shares: fonts, colours, margins, escaping of user text, tick labels, HTML.

User text (tokens) is HTML-escaped before it reaches plotly: plotly renders a subset of HTML (<b>,
<br>, <a>, ...) in labels and hover text, and turns entities such as &lt; back into the characters
typed.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from app.i18n import _, direction, language, symbols
from encoder.io.tokenize import PAD as PAD_TOKEN  # noqa: F401  (padding, as a chart shows it)
from encoder.web import SERIES_COLOURS  # noqa: F401  (the charts' series, as the modules')

FONT_SIZE = 14  # a figure's body text (px), as large as its ticks and subtitles
SMALLEST_TEXT = 14  # no figure text under this (px), ticks and subtitles included (DESIGN 4b)
PRESENTER_TEXT = 16  # presenter mode's smallest figure text (px): read from the back of a room
FONT_FAMILY = '"Source Sans", "Source Sans Pro", sans-serif'  # the page's own typeface
MAX_TICK_LABELS = 60  # more tokens than this: label every k-th tick (hover still names each)
TICK_CHARS = 14  # visible tick labels are cut to this length (hover shows the whole token)
DIVERGING = "RdBu_r"  # signed values and differences: blue < 0 < red, white at 0
MARGIN = dict(l=60, r=20, t=60, b=50)
PLOTLY_HEIGHT = 450  # px: the height plotly draws a figure that sets none


_presenting: list[Callable[[], bool]] = [bool]  # bool() is False; app.registry binds the session's


def presenting_from(read: Callable[[], bool]) -> None:
    """Where the page learns whether this run is in presenter mode (the session's `present`,
    held across every view: app.registry binds it); the builders here never ask."""
    _presenting[0] = read


def presenting() -> bool:
    """Whether this run's page is in presenter mode: large type in every figure, the drawers'
    one question (app.page.widgets.show, the explorer's and the SVG figures' hosts)."""
    return bool(_presenting[0]())


def smallest_text() -> int:
    """The smallest figure text this run draws (px): PRESENTER_TEXT in presenter mode, else
    SMALLEST_TEXT."""
    return PRESENTER_TEXT if presenting() else SMALLEST_TEXT


def escape(text: str) -> str:
    """User text made literal for plotly (quotes stay: plotly shows &quot; as typed)."""
    return html.escape(text, quote=False)


def plural(count: int, word: str) -> str:
    """'1 layer', '6 layers'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def depth_name(depth: int) -> str:
    """The residual stream at `depth` (hidden_states[depth]): 'embeddings' for 0, 'block k' for
    the stream after block k."""
    return _("embeddings") if depth == 0 else _("block {block}", block=depth - 1)


def depth_labels(num_layers: int) -> list[str]:
    """Axis labels for every depth: 'embeddings', then 'after block k'."""
    return [depth_name(0)] + [
        _("after block {block}", block=d - 1) for d in range(1, num_layers + 1)
    ]


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
    """A figure in the plotly_white template; `data` may be traces or a figure (make_subplots).
    Built at once from plain trace dicts (each with its "type") and a whole layout, a figure
    costs about 1 ms; grown through add_trace, make_subplots and update_layout, 15-60 ms, most
    of a rerun's figure time. A builder of dicts writes what the validator would (colour scales
    as lists: VIRIDIS), which tests/app/test_lean_figures.py checks."""
    if isinstance(data, go.Figure):
        spec = data.to_dict()
        data, layout = spec["data"], {**spec["layout"], **(layout or {})}
    layout = {**(layout or {}), "template": PLOTLY_WHITE}
    return go.Figure(data, layout=layout, _validate=VALIDATE)


def base_spec(title: str, height: int) -> dict:
    """Every figure's title, body size, height, margins and hover text, and the numbers in the
    page's language (its decimal and group symbols), as a layout."""
    written = symbols()
    return {
        "title": {"text": title, "x": 0, "xanchor": "left"},
        "font": {"size": FONT_SIZE},
        "height": height,
        "margin": dict(MARGIN),
        "hoverlabel": {"font": {"size": FONT_SIZE}},
        **({"separators": written} if written != ".," else {}),
    }


def subtitled(title: str, subtitle: str) -> str:
    """A figure's title with a smaller line under it (plotly's <sup>)."""
    return f"{title}<br><sup>{subtitle}</sup>"


def base_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(base_spec(title, height))
    return fig


def colour_scale(name: str) -> list[list]:
    """A named colour scale as the list plotly.py's validator writes it out (plotly.js reads the
    name too, but a figure built of dicts must be the same JSON with validation on or off)."""
    return [list(stop) for stop in go.Heatmap(colorscale=name).colorscale]


VIRIDIS = colour_scale("Viridis")
DIVERGING_SCALE = colour_scale(DIVERGING)
SIGN_CELLS = 400  # a signed heatmap of at most this many cells marks each cell's sign in it
SIGN_SHARE = 0.1  # ... where the value is at least this share of the scale's end (else blank)
MINUS = "\u2212"


def signed_scale(z: np.ndarray, limit: float, colour_title: str) -> dict:
    """A signed heatmap's colours, with the sign carried by more than its colour (WCAG 1.4.1):
    the scale symmetric around zero (white), its colour bar titled and its numbers signed
    ("+0.5"), and in a small grid each cell marked "+" or "\u2212" where it is visibly off
    zero; a trace's keys (a plain dict, or go.Heatmap's keyword arguments)."""
    trace = {
        "zmin": -limit,
        "zmax": limit,
        "zmid": 0,
        "colorscale": DIVERGING_SCALE,
        "colorbar": {
            "title": {"text": colour_title, "side": "right"},
            "thickness": 14,
            "tickformat": "+.2~g",
        },
    }
    if 0 < z.size <= SIGN_CELLS:
        cut = SIGN_SHARE * limit
        marks = np.where(z >= cut, "+", np.where(z <= -cut, MINUS, ""))
        trace |= {"text": marks.tolist(), "texttemplate": "%{text}"}
    return trace


TITLE_LINE = 1.3  # a title line's height over its font size
SUP_SCALE = 0.7  # plotly draws <sup> (a title's subtitle line) at 70 % of the title's size


def text_layout(smallest: int = SMALLEST_TEXT) -> dict:
    """A figure's text sizes as a template's layout (what a figure leaves unset): ticks at
    `smallest` px, the body, axis titles, legend and colour bars 2 px larger, the title large
    enough that its <sup> subtitles are `smallest` px, and a bar's text never shrunk below it
    (plotly shrinks a bar's text to the bar's thickness: uniformtext "show"); in the page's own
    typeface."""
    body = {"size": smallest + 2}
    axis = {"tickfont": {"size": smallest}, "title": {"font": body}}
    return {
        "font": {**body, "family": FONT_FAMILY},
        "title": {"font": {"size": math.ceil(smallest / SUP_SCALE)}},
        "xaxis": axis,
        "yaxis": axis,
        "legend": {"font": body},
        "hoverlabel": {"font": body},
        "uniformtext": {"mode": "show", "minsize": smallest},
    }


def _size(font, size: int) -> dict:
    """A font's size no smaller than `size` px (an unset one becomes `size`), as an update."""
    return {"size": max(font.size or 0, size)}


def legible(fig: go.Figure, smallest: int) -> go.Figure:
    """`fig` with the sizes it sets itself (annotations, text in cells, a chart's own ticks or
    colour bar) no smaller than text_layout(smallest)'s; what it leaves unset takes the
    template's. One update of the layout (property by property plotly takes ~30 ms a figure;
    this ~15). In place; returns `fig`."""
    sizes = text_layout(smallest)
    layout = fig.layout
    patch = {
        "font": _size(layout.font, sizes["font"]["size"]),
        "title": {"font": _size(layout.title.font, sizes["title"]["font"]["size"])},
        "legend": {"font": _size(layout.legend.font, smallest)},
        "hoverlabel": {"font": _size(layout.hoverlabel.font, smallest)},
    }
    for axis in [*fig.select_xaxes(), *fig.select_yaxes()]:
        patch[axis.plotly_name] = {
            "tickfont": _size(axis.tickfont, smallest),
            "title": {"font": _size(axis.title.font, smallest)},
        }
    if layout.annotations:
        patch["annotations"] = [
            {
                **note.to_plotly_json(),
                "font": {**note.font.to_plotly_json(), **_size(note.font, smallest)},
            }
            for note in layout.annotations
        ]
    fig.update_layout(patch)
    bar = {"tickfont": {"size": smallest}, "title": {"font": {"size": smallest}}}
    for trace in fig.data:
        update = {}
        if "colorbar" in trace and trace.showscale is not False:
            update["colorbar"] = bar
        marker = getattr(trace, "marker", None)
        if marker is not None and "colorbar" in marker and marker.colorscale is not None:
            update["marker"] = {"colorbar": bar}
        if "textfont" in trace and (trace.text is not None or getattr(trace, "texttemplate", None)):
            update["textfont"] = _size(trace.textfont, smallest)
        if update:
            trace.update(update)
    return fig


def visible_ticks(tokens: list[str]) -> tuple[list[int], list[str]]:
    """Every token, or every k-th one when there are more than MAX_TICK_LABELS; long ones cut."""
    step = 1 if len(tokens) <= MAX_TICK_LABELS else math.ceil(len(tokens) / (MAX_TICK_LABELS // 2))
    positions = list(range(0, len(tokens), step))
    return positions, [short(tokens[i], TICK_CHARS) for i in positions]


def figure_to_html(fig: go.Figure) -> str:
    """A self-contained HTML page (plotly.js inlined, works offline) that declares the run's
    language and direction, as its titles are in it (plotly's page declares none)."""
    page = pio.to_html(fig, include_plotlyjs=True, full_html=True)
    return page.replace("<html>", f'<html lang="{language()}" dir="{direction()}">', 1)
