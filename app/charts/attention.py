"""Attention figures: every head of one sentence as a mosaic, one head in detail, the padded batch.

Heatmaps use two pairs of axes. The data axes (x, y) carry one hidden tick per cell whose text is
that cell's label: plotly's hover writes a tick's text for %{x} / %{y}, so the hover can name the
layer, head and token without sending a label per cell. The overlaid axes (x2, y2, same ranges)
carry the visible tick labels and the padding mask trace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from app.charts.common import (
    PAD_TOKEN,
    SMALLEST_TEXT,
    base_layout,
    escape,
    new_figure,
    short,
    subtitled,
    visible_ticks,
)
from app.i18n import _, n_

ATTENTION_COLORSCALE = "Viridis"  # perceptually uniform, colour-blind safe
OVERVIEW_MAX_TOKENS = 48  # per head tile of an overview; longer inputs are block-averaged
PAD_FILL = "rgba(200, 200, 200, 0.85)"  # over padded cells: the values stay faintly visible


@dataclass(frozen=True)
class Segment:
    """A run of cells along one heatmap axis: real tokens, padding, or the gap between tiles."""

    start: int
    stop: int
    kind: str  # "token" | "pad" | "gap"


def _padding_mask(x_segments: list[Segment], y_segments: list[Segment]) -> go.Heatmap:
    """One coarse heatmap (a brick per segment pair) greying every padded row and column."""
    x_segments = [s for s in x_segments if s.stop > s.start]
    y_segments = [s for s in y_segments if s.stop > s.start]
    z = [
        [
            1.0 if "gap" not in (ys.kind, xs.kind) and "pad" in (ys.kind, xs.kind) else None
            for xs in x_segments
        ]
        for ys in y_segments
    ]
    return go.Heatmap(
        z=z,
        x=[s.start - 0.5 for s in x_segments] + [x_segments[-1].stop - 0.5],  # brick edges
        y=[s.start - 0.5 for s in y_segments] + [y_segments[-1].stop - 0.5],
        xaxis="x2",
        yaxis="y2",
        colorscale=[[0, PAD_FILL], [1, PAD_FILL]],
        showscale=False,
        hoverinfo="skip",
        name=_("padding"),
    )


def _label_axes() -> go.Scatter:
    """An empty trace on the label axes (x2, y2): plotly draws an axis only with a trace on it."""
    return go.Scatter(x=[], y=[], xaxis="x2", yaxis="y2", hoverinfo="skip", showlegend=False)


def _axis_pair(letter: str, hover: list[str], visible: tuple[list[float], list[str]]) -> dict:
    """A data axis with one hidden tick per cell (for hover) and an overlay axis with the visible
    labels; square cells pad the ranges toward the left / top, which the overlay axis follows
    (padding the domains instead would misalign it)."""
    other, toward = ("y", "left") if letter == "x" else ("x", "top")
    n = len(hover)
    plain = dict(
        showgrid=False, zeroline=False, ticks="", constrain="domain", constraintoward=toward
    )
    data_range = [-0.5, n - 0.5] if letter == "x" else [n - 0.5, -0.5]  # query 0 at the top
    return {
        f"{letter}axis": dict(
            plain, tickvals=list(range(n)), ticktext=hover, showticklabels=False, range=data_range
        ),
        f"{letter}axis2": dict(
            plain,
            overlaying=letter,
            matches=letter,
            anchor=f"{other}2",
            tickvals=visible[0],
            ticktext=visible[1],
        ),
    }


def _heatmap_axes(
    fig: go.Figure,
    hover_x: list[str],
    hover_y: list[str],
    visible_x: tuple[list[float], list[str]],
    visible_y: tuple[list[float], list[str]],
) -> None:
    """Hover labels and visible labels for a heatmap on x/y; y reversed, square cells."""
    axes = _axis_pair("x", hover_x, visible_x) | _axis_pair("y", hover_y, visible_y)
    axes["yaxis"]["scaleanchor"] = "x"
    fig.update_layout(**axes, plot_bgcolor="white")


def _attention_heatmap(z: np.ndarray, colour_title: str, hover: str, zmax: float) -> go.Heatmap:
    """Weights on a 0..zmax scale (1 unless stretched); NaN cells (gaps) get no hover."""
    if zmax < 1:
        colour_title = _(
            "{title} (scale stretched to {largest})",
            title=colour_title,
            largest=format(zmax, ".3g"),
        )
    return go.Heatmap(
        z=z,
        zmin=0,
        zmax=zmax,
        colorscale=ATTENTION_COLORSCALE,
        colorbar=dict(title=dict(text=colour_title, side="right"), thickness=14),
        hoverongaps=False,
        hovertemplate=hover + "<extra></extra>",
        name="attention",
    )


def _block_starts(n_valid: int, n_total: int, factor: int) -> np.ndarray:
    """First index of each block of `factor` positions; padding starts a fresh block."""
    return np.concatenate([np.arange(0, n_valid, factor), np.arange(n_valid, n_total, factor)])


def _block_sum(values: np.ndarray, starts: np.ndarray, axis: int) -> np.ndarray:
    return np.add.reduceat(values, starts, axis=axis)


def _block_labels(starts: np.ndarray, n_total: int, n_valid: int, queries: bool) -> list[str]:
    """'query 5', 'queries 22-32', with '(padding)' on padded blocks; keys' alike."""
    stops = np.append(starts[1:], n_total)
    labels = []
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        last, padding = stop - 1, start >= n_valid
        if stop - start == 1:
            label = (
                (
                    _("query {index} (padding)", index=start)
                    if padding
                    else _("query {index}", index=start)
                )
                if queries
                else (
                    _("key {index} (padding)", index=start)
                    if padding
                    else _("key {index}", index=start)
                )
            )
        elif queries:
            label = (
                _("queries {first}-{last} (padding)", first=start, last=last)
                if padding
                else _("queries {first}-{last}", first=start, last=last)
            )
        else:
            label = (
                _("keys {first}-{last} (padding)", first=start, last=last)
                if padding
                else _("keys {first}-{last}", first=start, last=last)
            )
        labels.append(label)
    return labels


def _colour_max(real_weights: np.ndarray, stretch: bool) -> float:
    """1, or with `stretch` the largest weight drawn among real tokens (random weights spread
    attention almost evenly, which is all dark on a 0..1 scale)."""
    return float(real_weights.max()) if stretch else 1.0


@dataclass(frozen=True)
class Mosaic:
    """Every (layer, head) tile of [L, H, T, T] values laid out as one matrix, with its labels."""

    z: np.ndarray  # [L * stride - 1, H * stride - 1], NaN between tiles
    tiles: np.ndarray  # [L, H, tile, tile] the (block-averaged) values before rounding
    factor: int  # positions per block (1: every token its own cell)
    n_tokens: int
    n_valid: int
    n_valid_blocks: int
    hover_x: list[str]
    hover_y: list[str]
    x_segments: list[Segment]
    y_segments: list[Segment]
    x_ticks: tuple[list[float], list[str]]
    y_ticks: tuple[list[float], list[str]]

    @property
    def real(self) -> np.ndarray:
        """The tiles' cells between real tokens: [L, H, real blocks, real blocks]."""
        return self.tiles[:, :, : self.n_valid_blocks, : self.n_valid_blocks]


def _segments(count: int, tile: int, n_valid_blocks: int) -> list[Segment]:
    """One axis of `count` tiles of `tile` cells: each tile's tokens and padding, and the gap
    cell between tiles."""
    stride = tile + 1
    out = []
    for i in range(count):
        s = i * stride
        out += [
            Segment(s, s + n_valid_blocks, "token"),
            Segment(s + n_valid_blocks, s + tile, "pad"),
        ]
        out += [Segment(s + tile, s + stride, "gap")] if i < count - 1 else []
    return out


def attention_mosaic(
    values: np.ndarray,
    n_valid: int,
    *,
    max_tokens: int = OVERVIEW_MAX_TOKENS,
    layers: list[int] | None = None,
) -> Mosaic:
    """Lay out [L, H, T, T] values (weights or their differences); `layers` names the rows
    (default 0..L-1). Past max_tokens, cells are blocks: the mean over a block of queries of the
    values summed over a block of keys, so weight rows still sum to 1."""
    values = np.asarray(values, dtype=np.float32)  # [layer, head, query, key]
    n_layers, n_heads, n_tokens = values.shape[:3]
    layers = list(range(n_layers)) if layers is None else list(layers)
    factor = math.ceil(n_tokens / max_tokens) if n_tokens > max_tokens else 1
    starts = _block_starts(n_valid, n_tokens, factor)
    if factor > 1:
        query_sizes = np.diff(np.append(starts, n_tokens))[:, None]  # [query block, 1]
        values = _block_sum(_block_sum(values, starts, axis=2), starts, axis=3) / query_sizes
    tile = len(starts)
    stride = tile + 1  # one NaN cell between tiles
    tiles = np.full((n_layers, n_heads, stride, stride), np.nan, dtype=np.float32)
    tiles[:, :, :tile, :tile] = np.round(values, 4)
    # [layer, query, head, key] -> rows = layer * stride + query, columns = head * stride + key
    z = tiles.transpose(0, 2, 1, 3).reshape(n_layers * stride, n_heads * stride)[:-1, :-1]

    n_valid_blocks = int(np.searchsorted(starts, n_valid))
    queries = _block_labels(starts, n_tokens, n_valid, queries=True) + [""]
    keys = _block_labels(starts, n_tokens, n_valid, queries=False) + [""]
    centre = (tile - 1) / 2

    return Mosaic(
        z=z,
        tiles=values,
        factor=factor,
        n_tokens=n_tokens,
        n_valid=n_valid,
        n_valid_blocks=n_valid_blocks,
        hover_x=[
            _("head {head} · {key}", head=j // stride, key=keys[j % stride])
            for j in range(z.shape[1])
        ],
        hover_y=[
            _("layer {layer} · {query}", layer=layers[i // stride], query=queries[i % stride])
            for i in range(z.shape[0])
        ],
        x_segments=_segments(n_heads, tile, n_valid_blocks),
        y_segments=_segments(n_layers, tile, n_valid_blocks),
        x_ticks=([h * stride + centre for h in range(n_heads)], [f"H{h}" for h in range(n_heads)]),
        y_ticks=([i * stride + centre for i in range(n_layers)], [f"L{i}" for i in layers]),
    )


def mosaic_figure(mosaic: Mosaic, heatmap: go.Heatmap, title: str) -> go.Figure:
    """The mosaic drawn with `heatmap` (its values trace), padding greyed, sized to fit."""
    fig = new_figure([heatmap, _padding_mask(mosaic.x_segments, mosaic.y_segments)])
    _heatmap_axes(fig, mosaic.hover_x, mosaic.hover_y, mosaic.x_ticks, mosaic.y_ticks)
    padding = mosaic.n_tokens - mosaic.n_valid
    if padding:
        title = _("{title} + {padding} padding (grey)", title=title, padding=padding)
    if mosaic.factor > 1:
        title = subtitled(
            title,
            _(
                "{positions} positions in blocks of {factor}: a cell is the attention a block of "
                "queries gives a block of keys (summed over keys, averaged over queries)",
                positions=mosaic.n_tokens,
                factor=mosaic.factor,
            ),
        )
    # about 850 px of plot width on a wide page: as tall as the mosaic needs, never a screenful
    rows, columns = mosaic.z.shape
    height = int(np.clip(850 * rows / columns, 200, 720)) + 110
    return base_layout(fig, title, height)


def attention_overview(
    attention: np.ndarray,
    n_valid: int,
    *,
    max_tokens: int = OVERVIEW_MAX_TOKENS,
    stretch: bool = False,
) -> go.Figure:
    """Every layer x head of one sentence as one mosaic heatmap; attention is [L, H, T, T]."""
    mosaic = attention_mosaic(attention, n_valid, max_tokens=max_tokens)
    n_layers, n_heads = mosaic.tiles.shape[:2]
    weight = _("block weight") if mosaic.factor > 1 else _("weight")
    heatmap = _attention_heatmap(
        mosaic.z,
        weight,
        "%{y}<br>%{x}<br>" + weight + " %{z:.4f}",
        _colour_max(mosaic.real, stretch),
    )
    title = _(
        "Attention of every head: {layers} x {heads}, {tokens}",
        layers=n_("{count} layer", "{count} layers", n_layers),
        heads=n_("{count} head", "{count} heads", n_heads),
        tokens=n_("{count} token", "{count} tokens", n_valid),
    )
    return mosaic_figure(mosaic, heatmap, title)


def attention_head(
    pattern: np.ndarray, tokens: list[str], n_valid: int, *, title: str, stretch: bool = False
) -> go.Figure:
    """One head's [T, T] attention (query rows, key columns) with token labels."""
    pattern = np.asarray(pattern, dtype=np.float32)  # [query, key]
    heatmap = _attention_heatmap(
        pattern,
        _("weight"),
        _("query '%{y}' (%{y:d}) -> key '%{x}' (%{x:d})<br>weight %{z:.6f}"),
        _colour_max(pattern[:n_valid, :n_valid], stretch),
    )
    return token_grid_figure(heatmap, tokens, n_valid, title=title)


def token_grid_figure(
    heatmap: go.Heatmap, tokens: list[str], n_valid: int, *, title: str
) -> go.Figure:
    """A [T, T] query x key heatmap (its values trace given) of a sentence's real tokens: the
    first `n_valid` rows and columns, the padding of a batch left out."""
    n_tokens = len(tokens)
    shape = np.shape(heatmap.z)
    if shape != (n_tokens, n_tokens):
        raise ValueError(
            f"pattern shape {shape} needs to be [T, T] with T = len(tokens) = {n_tokens}"
        )
    tokens = tokens[:n_valid]
    heatmap.update(z=np.asarray(heatmap.z)[:n_valid, :n_valid])  # [query, key]
    labels = [escape(t) for t in tokens]
    fig = new_figure([heatmap, _label_axes()])
    visible = visible_ticks(tokens)
    _heatmap_axes(fig, labels, labels, visible, visible)
    fig.update_layout(
        xaxis2_title_text=_("key (attended to)"),
        yaxis2_title_text=_("query (attending)"),
        xaxis2_tickangle=-60,
    )
    return base_layout(fig, escape(title), height=int(np.clip(22 * n_valid, 420, 900)) + 150)


def batch_mask_grid(tokens: list[list[str]], attention_mask: np.ndarray) -> go.Figure:
    """The padded batch [B, T]: one row per sentence, token cells vs padding cells."""
    mask = np.asarray(attention_mask).astype(int)  # [batch, position]
    n_sentences, n_tokens = mask.shape
    padded = [[row[t] if t < len(row) else PAD_TOKEN for t in range(n_tokens)] for row in tokens]
    cell_chars = int(np.clip(170 // n_tokens, 3, 12))  # what fits a cell at ~1100 px wide
    fig = new_figure(
        go.Heatmap(
            z=mask,
            zmin=0,
            zmax=1,
            text=[[short(token, cell_chars) for token in row] for row in padded],
            customdata=[[escape(token) for token in row] for row in padded],
            texttemplate="%{text}",
            textfont=dict(size=SMALLEST_TEXT, color="#111111"),
            colorscale=[[0, "#dddddd"], [0.5, "#dddddd"], [0.5, "#9ecae1"], [1, "#9ecae1"]],
            showscale=False,
            xgap=2,
            ygap=2,
            hovertemplate=_("%{y}, position %{x}<br>token %{customdata}<br>attention mask %{z}")
            + "<extra></extra>",
        )
    )
    fig.update_layout(
        xaxis=dict(
            title_text=_("position"),
            showgrid=False,
            zeroline=False,
            dtick=1 if n_tokens <= 40 else None,
        ),
        yaxis=dict(
            tickvals=list(range(n_sentences)),
            ticktext=[_("sentence {number}", number=s + 1) for s in range(n_sentences)],
            autorange="reversed",
            showgrid=False,
        ),
    )
    title = _("Padded batch: blue = token (mask 1), grey = padding (mask 0)")
    return base_layout(fig, title, height=150 + 44 * n_sentences)
