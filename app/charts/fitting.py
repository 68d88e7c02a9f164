"""A figure fitted to its place: its title broken into lines for a narrow column or a phone
(plotly never wraps a title), and the whole figure mirrored for a right-to-left language."""

from __future__ import annotations

import re

import plotly.graph_objects as go

from app.charts.common import (
    MARGIN,
    PLOTLY_HEIGHT,
    SUP_SCALE,
    TITLE_LINE,
    text_layout,
)

TAG = re.compile(r"<[^>]+>")  # plotly's markup in a title: no width of its own


WIDE = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")  # CJK, full-width


def _width(text: str) -> int:
    """How many characters' room a title's text takes: its markup none, a CJK or full-width
    character two (as wide as two Latin letters)."""
    plain = TAG.sub("", text)
    return len(plain) + len(WIDE.findall(plain))


def _words(text: str) -> list[tuple[str, str]]:
    """A title line's words, each with what joins it to the one before: a space between words;
    nothing between the characters of Chinese (written without spaces, and broken anywhere but
    before its closing punctuation)."""
    words = []
    for word in text.split(" "):
        parts = re.findall(
            r"[\u2e80-\u9fff\uf900-\ufaff][\u3000-\u303f\uff00-\uffef]*|[^\u2e80-\u9fff\uf900-\ufaff]+",
            word,
        ) or [word]
        words += [(part, " " if i == 0 else "") for i, part in enumerate(parts)]
    return words


def _wrapped(title: str, chars: int) -> str:
    """A title with lines longer than `chars` characters broken at spaces (or between Chinese
    characters); a subtitle line (<sup>, drawn at SUP_SCALE of the size) takes proportionally
    more, and stays one on each line it is broken into. The markup counts no characters."""
    lines = []
    for line in title.split("<br>"):
        sup = line.startswith("<sup>") and line.endswith("</sup>")
        text, budget = (line[5:-6], int(chars / SUP_SCALE)) if sup else (line, chars)
        pieces, current = [], ""
        for word, joint in _words(text):
            if current and _width(current) + len(joint) + _width(word) > budget:
                pieces.append(current)
                current = word
            else:
                current = f"{current}{joint}{word}" if current else word
        pieces.append(current)
        lines += [f"<sup>{piece}</sup>" for piece in pieces] if sup else pieces
    return "<br>".join(lines)


def wrap_title(fig: go.Figure, chars: int) -> go.Figure:
    """The figure's title in lines of at most `chars` characters (plotly never wraps: a long
    title runs past a narrow figure's edge), the top margin and the height grown by the lines
    added. In place; returns `fig`."""
    layout = fig.layout
    title = layout.title.text or ""
    wrapped = _wrapped(title, chars)
    added = wrapped.count("<br>") - title.count("<br>")
    if added:
        size = layout.title.font.size or text_layout()["title"]["font"]["size"]
        extra = round(added * TITLE_LINE * size)
        fig.update_layout(
            title_text=wrapped,
            margin_t=(layout.margin.t or MARGIN["t"]) + extra,
            height=(layout.height or PLOTLY_HEIGHT) + extra,
        )
    return fig


def fit_narrow(fig: go.Figure, title_chars: int) -> go.Figure:
    """A figure for a narrow place (half the page, a phone): its title in lines of at most
    `title_chars` characters, and a legend above the plot moved below it (above, it would run
    into the wrapped title). In place; returns `fig`."""
    wrap_title(fig, title_chars)
    legend = fig.layout.legend
    if legend.y is not None and legend.y > 1 and legend.orientation == "h":
        # at the foot of the figure, under the axis' labels and title whatever their height:
        # Plotly keeps room for a legend placed on the figure (a place on the plot, y=-0.18,
        # took no account of them, and the longer labels of presenter mode, Spanish or tokens
        # turned 45° ran into it)
        fig.update_layout(legend=dict(yref="container", y=0, yanchor="bottom", x=0, xanchor="left"))
    return fig


FLIPPED = {"left": "right", "right": "left"}  # an anchor, a side or an alignment, mirrored


def _flipped(thing: dict, default_x: float | None = None) -> dict:
    """A paper-placed thing's (a title, legend, colour bar, annotation) keys mirrored: x about the
    middle, its anchor and alignment the other way round; `default_x` where it sets none (a
    colour bar's or a legend's 1.02, past the right edge)."""
    x = thing.get("x", default_x)
    if x is None:
        return {}
    anchor = thing.get("xanchor", "left" if default_x is not None else "auto")
    mirrored = {"x": round(1 - x, 6), "xanchor": FLIPPED.get(anchor, anchor)}
    if "align" in thing:
        mirrored["align"] = FLIPPED.get(thing["align"], thing["align"])
    return mirrored


def _reads_in_order(axis: dict, traces: list[dict], name: str) -> bool:
    """Whether an x axis is an order of things (tokens, depths: labels in place of numbers, or
    categories) rather than a quantity."""
    if axis.get("type") == "category" or axis.get("ticktext") is not None:
        return True
    shown = [trace.get("x") for trace in traces if trace.get("xaxis", "x") == name]
    return any(len(x) and isinstance(x[0], str) for x in shown if isinstance(x, list | tuple))


def mirror(fig: go.Figure) -> go.Figure:
    """`fig` drawn for a right-to-left language, where the order of its things matters (an x axis
    of tokens or depths, app.charts' category axes): that axis runs from the right, the panels,
    margins, y axes, colour bars, legend, title and notes placed as in a mirror; a quantity's
    axis (a number line) keeps its direction. A figure without such an axis is as it was. In
    place; returns `fig`."""
    spec = fig.to_plotly_json()
    layout, traces = spec["layout"], spec["data"]
    names = [key for key in layout if re.fullmatch(r"xaxis\d*", key)] or ["xaxis"]
    ordered = [key for key in names if _reads_in_order(layout.get(key, {}), traces, "x" + key[5:])]
    if not ordered:
        return fig
    patch: dict = {}
    for key in ordered:
        axis = layout.get(key, {})
        if axis.get("matches"):
            continue  # follows the axis it matches
        if axis.get("range") is not None:
            patch[key] = {"range": list(reversed(axis["range"]))}
        else:
            patch[key] = {"autorange": True if axis.get("autorange") == "reversed" else "reversed"}
        if axis.get("constraintoward") in FLIPPED:
            patch[key]["constraintoward"] = FLIPPED[axis["constraintoward"]]
    for key in names + [k for k in layout if re.fullmatch(r"yaxis\d*", k)] + ["yaxis"]:
        axis = layout.get(key, {})
        part = patch.setdefault(key, {})
        if "domain" in axis and key.startswith("x"):
            low, high = axis["domain"]
            part["domain"] = [round(1 - high, 6), round(1 - low, 6)]
        if key.startswith("y"):
            part["side"] = FLIPPED.get(axis.get("side", "left"), "right")
            if axis.get("anchor") == "free" and "position" in axis:
                part["position"] = round(1 - axis["position"], 6)
    margin = layout.get("margin", {})
    patch["margin"] = {"l": margin.get("r", 80), "r": margin.get("l", 80)}
    patch["title"] = _flipped({"x": 0.5, "xanchor": "auto", **layout.get("title", {})})
    patch["legend"] = _flipped(layout.get("legend", {}), 1.02)
    if layout.get("annotations"):
        patch["annotations"] = [
            {**note, **_flipped(note)} if note.get("xref", "x").startswith("paper") else note
            for note in layout["annotations"]
        ]
    fig.update_layout(patch)
    for trace in fig.data:
        if "colorbar" in trace and getattr(trace, "showscale", None) is not False:
            trace.update(colorbar=_flipped(trace.colorbar.to_plotly_json(), 1.02))
    return fig
