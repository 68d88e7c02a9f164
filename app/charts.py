"""Figure builders: captured data (numpy arrays, pandas frames) in, plotly figures out.

No streamlit here, so every chart also works in a notebook. User text (tokens) is HTML-escaped
before it reaches plotly: plotly renders a subset of HTML (<b>, <br>, <a>, ...) in labels and
hover text, and turns entities such as &lt; back into the characters typed.

Heatmaps use two pairs of axes. The data axes (x, y) carry one hidden tick per cell whose text is
that cell's label: plotly's hover writes a tick's text for %{x} / %{y}, so the hover can name the
layer, head and token without sending a label per cell. The overlaid axes (x2, y2, same ranges)
carry the visible tick labels and the padding mask trace.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

FONT_SIZE = 14
ATTENTION_COLORSCALE = "Viridis"  # perceptually uniform, colour-blind safe
PAD_FILL = "rgba(200, 200, 200, 0.85)"  # over padded cells: the values stay faintly visible
PAD_TOKEN = "[PAD]"
MAX_TICK_LABELS = 60  # more tokens than this: label every k-th tick (hover still names each)
TICK_CHARS = 14  # visible tick labels are cut to this length (hover shows the whole token)
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9"]
MARGIN = dict(l=60, r=20, t=60, b=50)


def escape(text: str) -> str:
    """User text made literal for plotly (quotes stay: plotly shows &quot; as typed)."""
    return html.escape(text, quote=False)


def plural(count: int, word: str) -> str:
    """'1 layer', '6 layers'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def short(text: str, max_chars: int) -> str:
    """A tick or cell label: escaped, cut to max_chars with '…' (hover keeps the full text)."""
    return escape(text if len(text) <= max_chars else text[: max_chars - 1] + "…")


def base_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, x=0, xanchor="left"),
        template="plotly_white",
        font=dict(size=FONT_SIZE),
        height=height,
        margin=MARGIN,
        hoverlabel=dict(font_size=FONT_SIZE),
    )
    return fig


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
        name="padding",
    )


def _axis_pair(letter: str, hover: list[str], visible: tuple[list[float], list[str]]) -> dict:
    """A data axis with one hidden tick per cell (for hover) and an overlay axis with the visible
    labels; square cells pad the ranges toward the left / top, which the overlay axis follows
    (padding the domains instead would misalign it)."""
    other, toward = ("y", "left") if letter == "x" else ("x", "top")
    n = len(hover)
    plain = dict(showgrid=False, zeroline=False, ticks="", constraintoward=toward)
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
        colour_title += f" (scale stretched to {zmax:.3g})"
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


def _block_labels(starts: np.ndarray, n_total: int, n_valid: int, one: str, many: str) -> list[str]:
    """'query 5', 'queries 22-32', with '(padding)' on padded blocks."""
    stops = np.append(starts[1:], n_total)
    labels = []
    for start, stop in zip(starts.tolist(), stops.tolist(), strict=True):
        label = f"{one} {start}" if stop - start == 1 else f"{many} {start}-{stop - 1}"
        labels.append(label + (" (padding)" if start >= n_valid else ""))
    return labels


def _colour_max(real_weights: np.ndarray, stretch: bool) -> float:
    """1, or with `stretch` the largest weight drawn among real tokens (random weights spread
    attention almost evenly, which is all dark on a 0..1 scale)."""
    return float(real_weights.max()) if stretch else 1.0


def attention_overview(
    attention: np.ndarray, n_valid: int, *, max_tokens: int = 48, stretch: bool = False
) -> go.Figure:
    """Every layer x head of one sentence as one mosaic heatmap; attention is [L, H, T, T]."""
    attention = np.asarray(attention, dtype=np.float32)  # [layer, head, query, key]
    n_layers, n_heads, n_tokens, _ = attention.shape
    factor = math.ceil(n_tokens / max_tokens) if n_tokens > max_tokens else 1
    starts = _block_starts(n_valid, n_tokens, factor)
    if factor > 1:  # mean over a block of queries of the weight summed over a block of keys,
        # so every row still sums to 1 and the 0..1 colour scale keeps its meaning
        query_sizes = np.diff(np.append(starts, n_tokens))[:, None]  # [query block, 1]
        attention = _block_sum(_block_sum(attention, starts, axis=2), starts, axis=3) / query_sizes
    tile = len(starts)
    stride = tile + 1  # one NaN cell between tiles
    tiles = np.full((n_layers, n_heads, stride, stride), np.nan, dtype=np.float32)
    tiles[:, :, :tile, :tile] = np.round(attention, 4)
    # [layer, query, head, key] -> rows = layer * stride + query, columns = head * stride + key
    mosaic = tiles.transpose(0, 2, 1, 3).reshape(n_layers * stride, n_heads * stride)[:-1, :-1]

    n_valid_blocks = int(np.searchsorted(starts, n_valid))
    queries = _block_labels(starts, n_tokens, n_valid, "query", "queries") + [""]
    keys = _block_labels(starts, n_tokens, n_valid, "key", "keys") + [""]
    hover_y = [f"layer {i // stride} · {queries[i % stride]}" for i in range(mosaic.shape[0])]
    hover_x = [f"head {j // stride} · {keys[j % stride]}" for j in range(mosaic.shape[1])]
    centre = (tile - 1) / 2

    def segments(count: int) -> list[Segment]:
        out = []
        for i in range(count):
            s = i * stride
            out += [
                Segment(s, s + n_valid_blocks, "token"),
                Segment(s + n_valid_blocks, s + tile, "pad"),
            ]
            out += [Segment(s + tile, s + stride, "gap")] if i < count - 1 else []
        return out

    weight = "block weight" if factor > 1 else "weight"
    fig = go.Figure(
        [
            _attention_heatmap(
                mosaic,
                weight,
                f"%{{y}}<br>%{{x}}<br>{weight} %{{z:.4f}}",
                _colour_max(attention[:, :, :n_valid_blocks, :n_valid_blocks], stretch),
            ),
            _padding_mask(segments(n_heads), segments(n_layers)),
        ]
    )
    _heatmap_axes(
        fig,
        hover_x,
        hover_y,
        ([h * stride + centre for h in range(n_heads)], [f"H{h}" for h in range(n_heads)]),
        ([i * stride + centre for i in range(n_layers)], [f"L{i}" for i in range(n_layers)]),
    )
    padding = n_tokens - n_valid
    layers, heads, tokens = (
        plural(n_layers, "layer"),
        plural(n_heads, "head"),
        plural(n_valid, "token"),
    )
    title = f"Attention of every head: {layers} x {heads}, {tokens}"
    if padding:
        title += f" + {padding} padding (grey)"
    if factor > 1:
        title += (
            f"<br><sup>{n_tokens} positions in blocks of {factor}: a cell is the attention a block"
            " of queries gives a block of keys (summed over keys, averaged over queries)</sup>"
        )
    # about 850 px of plot width on a wide page: as tall as the mosaic needs, never a screenful
    height = int(np.clip(850 * mosaic.shape[0] / mosaic.shape[1], 200, 720)) + 110
    return base_layout(fig, title, height)


def _visible_ticks(tokens: list[str]) -> tuple[list[int], list[str]]:
    """Every token, or every k-th one when there are more than MAX_TICK_LABELS; long ones cut."""
    step = 1 if len(tokens) <= MAX_TICK_LABELS else math.ceil(len(tokens) / (MAX_TICK_LABELS // 2))
    positions = list(range(0, len(tokens), step))
    return positions, [short(tokens[i], TICK_CHARS) for i in positions]


def attention_head(
    pattern: np.ndarray, tokens: list[str], n_valid: int, *, title: str, stretch: bool = False
) -> go.Figure:
    """One head's [T, T] attention (query rows, key columns) with token labels."""
    pattern = np.asarray(pattern, dtype=np.float32)  # [query, key]
    n_tokens = pattern.shape[0]
    if pattern.shape != (n_tokens, n_tokens) or len(tokens) != n_tokens:
        raise ValueError(
            f"pattern shape {pattern.shape} needs to be [T, T] with T = len(tokens) = {len(tokens)}"
        )
    labels = [escape(t) for t in tokens]
    segments = [Segment(0, n_valid, "token"), Segment(n_valid, n_tokens, "pad")]
    fig = go.Figure(
        [
            _attention_heatmap(
                pattern,
                "weight",
                "query '%{y}' (%{y:d}) -> key '%{x}' (%{x:d})<br>weight %{z:.6f}",
                _colour_max(pattern[:n_valid, :n_valid], stretch),
            ),
            _padding_mask(segments, segments),
        ]
    )
    visible = _visible_ticks(tokens)
    _heatmap_axes(fig, labels, labels, visible, visible)
    fig.update_layout(
        xaxis2_title_text="key (attended to)",
        yaxis2_title_text="query (attending)",
        xaxis2_tickangle=-60,
    )
    return base_layout(fig, escape(title), height=int(np.clip(22 * n_tokens, 420, 900)) + 150)


def batch_mask_grid(tokens: list[list[str]], attention_mask: np.ndarray) -> go.Figure:
    """The padded batch [B, T]: one row per sentence, token cells vs padding cells."""
    mask = np.asarray(attention_mask).astype(int)  # [batch, position]
    n_sentences, n_tokens = mask.shape
    padded = [[row[t] if t < len(row) else PAD_TOKEN for t in range(n_tokens)] for row in tokens]
    cell_chars = int(np.clip(170 // n_tokens, 3, 12))  # what fits a cell at ~1100 px wide
    fig = go.Figure(
        go.Heatmap(
            z=mask,
            zmin=0,
            zmax=1,
            text=[[short(token, cell_chars) for token in row] for row in padded],
            customdata=[[escape(token) for token in row] for row in padded],
            texttemplate="%{text}",
            textfont=dict(size=FONT_SIZE - 1, color="#111111"),
            colorscale=[[0, "#dddddd"], [0.5, "#dddddd"], [0.5, "#9ecae1"], [1, "#9ecae1"]],
            showscale=False,
            xgap=2,
            ygap=2,
            hovertemplate="%{y}, position %{x}<br>token %{customdata}<br>attention mask %{z}"
            "<extra></extra>",
        )
    )
    fig.update_layout(
        xaxis=dict(
            title_text="position",
            showgrid=False,
            zeroline=False,
            dtick=1 if n_tokens <= 40 else None,
        ),
        yaxis=dict(
            tickvals=list(range(n_sentences)),
            ticktext=[f"sentence {s + 1}" for s in range(n_sentences)],
            autorange="reversed",
            showgrid=False,
        ),
    )
    title = "Padded batch: blue = token (mask 1), grey = padding (mask 0)"
    return base_layout(fig, title, height=150 + 44 * n_sentences)


def _token_at(tokens: list[str], position: int) -> str:
    """The token at a position; positions past the sentence are padding."""
    return tokens[position] if position < len(tokens) else PAD_TOKEN


def _token_axis(positions: list[int], tokens: list[str]) -> dict:
    """Numeric positions labelled with (escaped) tokens; duplicates stay apart."""
    ticks, text = _visible_ticks([_token_at(tokens, p) for p in positions])
    return dict(tickvals=[positions[i] for i in ticks], ticktext=text, tickangle=-45)


NORM_ORDER = ["embed.ln", "ln1", "ln2", "final_norm"]


def layernorm_chart(stats: pd.DataFrame, tokens: list[str], layer: int) -> go.Figure:
    """Mean and std over d of each norm's input and output, per token, for one layer."""
    rows = stats[stats["layer"] == layer]
    if rows.empty:
        raise ValueError(
            f"no LayerNorm statistics for layer={layer}; layers present: "
            f"{sorted(stats['layer'].unique().tolist())}"
        )
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.1,
        subplot_titles=("mean over the d features", "standard deviation over the d features"),
    )
    norms = [n for n in NORM_ORDER if n in set(rows["norm"])]
    for colour, norm in zip(OKABE_ITO, norms, strict=False):
        part = rows[rows["norm"] == norm].sort_values("position")
        labels = [escape(_token_at(tokens, p)) for p in part["position"].tolist()]
        for side, dash, symbol in (("in", "dot", "circle-open"), ("out", "solid", "circle")):
            name = f"{norm} {side}put"
            for row, stat in ((1, "mean"), (2, "std")):
                fig.add_scatter(
                    x=part["position"],
                    y=part[f"{side}_{stat}"],
                    customdata=labels,
                    mode="lines+markers",
                    name=name,
                    legendgroup=name,
                    showlegend=row == 1,
                    line=dict(color=colour, dash=dash, width=2),
                    marker=dict(symbol=symbol, size=8, color=colour),
                    hovertemplate=f"'%{{customdata}}' (%{{x}})<br>{name} {stat} %{{y:.4f}}"
                    "<extra></extra>",
                    row=row,
                    col=1,
                )
    fig.update_xaxes(_token_axis(sorted(rows["position"].unique().tolist()), tokens), row=2, col=1)
    place = {"embed.ln": "the embeddings", "final_norm": "the final norm"}.get(norms[0])
    title = f"Norm statistics in {place or f'block {layer}'}: input (dotted) vs output (solid)"
    fig.update_layout(legend=dict(orientation="h", x=0, y=1.06, yanchor="bottom"))
    base_layout(fig, title, height=640)
    return fig.update_layout(margin=dict(MARGIN, t=110))


def residual_norm_chart(resid: pd.DataFrame, tokens: list[str]) -> go.Figure:
    """L2 norm of the residual stream across depth: a thin line per token, the mean thick."""
    depths = sorted(resid["depth"].unique().tolist())
    xs, ys, labels = [], [], []
    for position, part in resid.sort_values("depth").groupby("position", sort=True):
        label = escape(_token_at(tokens, position))
        xs += part["depth"].tolist() + [None]  # None breaks the line between tokens
        ys += part["l2_norm"].tolist() + [None]
        labels += [f"'{label}' ({position})"] * len(part) + [None]
    mean = resid.groupby("depth")["l2_norm"].mean()
    fig = go.Figure(
        [
            go.Scatter(
                x=xs,
                y=ys,
                customdata=labels,
                mode="lines",
                name="each token",
                line=dict(color="rgba(0, 114, 178, 0.35)", width=1),
                hovertemplate="%{customdata} after %{x}: %{y:.3f}<extra></extra>",
            ),
            go.Scatter(
                x=mean.index,
                y=mean.values,
                mode="lines+markers",
                name="mean over tokens",
                line=dict(color="#D55E00", width=5),
                marker=dict(size=10),
                hovertemplate="mean after %{x}: %{y:.3f}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        xaxis=dict(
            title_text="residual stream after",
            tickvals=depths,
            ticktext=["embeddings" if d == 0 else f"block {d - 1}" for d in depths],
        ),
        yaxis=dict(title_text="L2 norm", rangemode="tozero"),
        legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"),
    )
    return base_layout(fig, "Size of each token's residual stream vector across depth", 460)


# --- block diagram -------------------------------------------------------------------------

BOX_FILL = {"norm": "#FFF2B3", "attn": "#CFE3F5", "ffn": "#D5EFD0", "io": "#FFFFFF"}
INK, SKIP_INK = "#333333", "#0072B2"
CENTRE_X, BOX_HALF_WIDTH, BOX_HALF_HEIGHT = 4.4, 2.5, 0.28  # data units; one row per step
SKIP_X, LABEL_X, GROUP_RIGHT = 1.1, 4.55, 11.8
ADD_RADIUS_PX = 16  # the residual add is a round glyph (⊕, 42 px font): arrows stop short of it
ROW_PX = 62


@dataclass(frozen=True)
class Node:
    """One step of the block, drawn top to bottom."""

    kind: str  # "io" | "norm" | "attn" | "ffn" | "add"
    text: str = ""
    edge: str = ""  # label of the edge leaving this node (a tensor shape)
    branch: bool = False  # a residual skip path leaves from this node's outgoing edge


def _block_nodes(norm_first: bool, shapes: dict[str, str], norm: str, act: str) -> list[Node]:
    attention = [
        Node("attn", "Q, K, V projections, split into heads", f"Q, K, V  {shapes['qkv']}"),
        Node("attn", "softmax(Q Kᵀ / √dₖ)", f"weights  {shapes['scores']}"),
        Node("attn", "weights × V, concat heads, W_O", shapes["attn_out"]),
    ]
    ffn = [
        Node("ffn", "linear1  (d → d_ff)", shapes["mlp_hidden"]),
        Node("ffn", act, shapes["mlp_hidden"]),
        Node("ffn", "linear2  (d_ff → d)", shapes["mlp_out"]),
    ]
    source = Node("io", "block input x", shapes["input"], branch=True)
    sink = Node("io", "block output")
    if norm_first:  # x + Attention(norm1(x)), then h + FFN(norm2(h))
        return [
            source,
            Node("norm", f"{norm} (norm1)"),
            *attention,
            Node("add", edge=shapes["resid_mid"], branch=True),
            Node("norm", f"{norm} (norm2)"),
            *ffn,
            Node("add", edge=shapes["output"]),
            sink,
        ]
    return [  # norm1(x + Attention(x)), then norm2(h + FFN(h))
        source,
        *attention,
        Node("add"),
        Node("norm", f"{norm} (norm1)", shapes["resid_mid"], branch=True),
        *ffn,
        Node("add"),
        Node("norm", f"{norm} (norm2)", shapes["output"]),
        sink,
    ]


def _arrow(
    x0: float, y0: float, x1: float, y1: float, *, colour: str = INK, start: int = 0, end: int = 0
) -> dict:
    """An arrow in data coordinates, `start` / `end` pixels short of its two ends."""
    return dict(
        x=x1,
        y=y1,
        ax=x0,
        ay=y0,
        xref="x",
        yref="y",
        axref="x",
        ayref="y",
        text="",
        showarrow=True,
        arrowhead=2,
        arrowsize=1.1,
        arrowwidth=2.5,
        arrowcolor=colour,
        startstandoff=start,
        standoff=end,
    )


def block_diagram(
    norm_first: bool,
    shapes: dict[str, str],
    *,
    norm_label: str = "LayerNorm",
    activation: str = "GELU",
) -> go.Figure:
    """One encoder block, pre- or post-norm, with the live tensor shapes on its edges."""
    shapes = {key: escape(value) for key, value in shapes.items()}
    nodes = _block_nodes(norm_first, shapes, escape(norm_label), escape(activation))
    left, right = CENTRE_X - BOX_HALF_WIDTH, CENTRE_X + BOX_HALF_WIDTH
    layout_shapes, annotations = [], []
    skip_from = None  # y where the open residual path leaves the main line
    for i, node in enumerate(nodes):
        y = -i
        if node.kind == "add":
            annotations.append(
                dict(x=CENTRE_X, y=y, text="⊕", showarrow=False, font=dict(size=42, color=INK))
            )
            layout_shapes.append(
                dict(  # the residual path: left, down, then back in to the add
                    type="path",
                    path=f"M {CENTRE_X},{skip_from} L {SKIP_X},{skip_from} L {SKIP_X},{y}",
                    line=dict(color=SKIP_INK, width=3),
                )
            )
            annotations.append(_arrow(SKIP_X, y, CENTRE_X, y, colour=SKIP_INK, end=ADD_RADIUS_PX))
            annotations.append(
                dict(
                    x=SKIP_X - 0.25,
                    y=(skip_from + y) / 2,
                    text="residual",
                    textangle=-90,
                    showarrow=False,
                    font=dict(color=SKIP_INK),
                )
            )
        else:
            layout_shapes.append(
                dict(
                    type="rect",
                    x0=left,
                    x1=right,
                    y0=y - BOX_HALF_HEIGHT,
                    y1=y + BOX_HALF_HEIGHT,
                    fillcolor=BOX_FILL[node.kind],
                    line=dict(width=2, color=INK, dash="dot" if node.kind == "io" else "solid"),
                )
            )
            annotations.append(
                dict(
                    x=CENTRE_X,
                    y=y,
                    text=node.text,
                    showarrow=False,
                    font=dict(size=FONT_SIZE + 2, color=INK),
                )
            )
        bottom = y if node.kind == "add" else y - BOX_HALF_HEIGHT
        if i + 1 < len(nodes):
            below = nodes[i + 1].kind == "add"
            annotations.append(
                _arrow(
                    CENTRE_X,
                    bottom,
                    CENTRE_X,
                    y - 1 if below else y - 1 + BOX_HALF_HEIGHT,
                    start=ADD_RADIUS_PX if node.kind == "add" else 0,
                    end=ADD_RADIUS_PX if below else 0,
                )
            )
            annotations.append(
                dict(
                    x=LABEL_X,
                    y=y - 0.52,
                    text=node.edge,
                    showarrow=False,
                    xanchor="left",
                    font=dict(family="monospace", size=FONT_SIZE + 1, color="#222222"),
                )
            )
        if node.branch:
            skip_from = y - 0.5 if node.kind == "add" else bottom - 0.14
    for kind, name in (("attn", "multi-head self-attention"), ("ffn", "feed-forward network")):
        rows = [-i for i, node in enumerate(nodes) if node.kind == kind]
        top, bottom = max(rows) + BOX_HALF_HEIGHT + 0.06, min(rows) - BOX_HALF_HEIGHT - 0.06
        layout_shapes.append(
            dict(
                type="rect",
                x0=left - 0.2,
                x1=GROUP_RIGHT,
                y0=bottom,
                y1=top,
                layer="below",
                line=dict(color="#888888", width=1.5, dash="dash"),
            )
        )
        annotations.append(
            dict(
                x=GROUP_RIGHT - 0.1,
                y=(top + bottom) / 2,
                text=f"<i>{name}</i>",
                showarrow=False,
                xanchor="right",
                font=dict(color="#555555"),
            )
        )
    hidden = dict(visible=False, fixedrange=True)
    fig = go.Figure()
    fig.update_layout(
        shapes=layout_shapes,
        annotations=[a for a in annotations if a["text"] or a["showarrow"]],
        xaxis=dict(hidden, range=[0, 12]),
        yaxis=dict(hidden, range=[-len(nodes) + 1 - 0.4, 0.4]),
        plot_bgcolor="white",
    )
    title = (
        "Pre-norm block: normalise first, then attention / feed-forward, then add"
        if norm_first
        else "Post-norm block: attention / feed-forward, add, then normalise"
    )
    base_layout(fig, title, height=ROW_PX * len(nodes) + 70)
    return fig.update_layout(margin=dict(MARGIN, t=50, b=10))


def figure_to_html(fig: go.Figure) -> str:
    """A self-contained HTML page (plotly.js inlined, works offline)."""
    return pio.to_html(fig, include_plotlyjs=True, full_html=True)
