"""The block diagram: one encoder block, pre- or post-norm, with live tensor shapes on its edges.

The boxes are the steps of encoder.core.block's table of operations, the one description of the
block that also gives the shape ledger and the memory estimate.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

import plotly.graph_objects as go

from app.charts.common import FONT_SIZE, MARGIN, SMALLEST_TEXT, base_layout, escape, new_figure
from encoder.core import hooks
from encoder.core.block import Op, shape_text

BOX_FILL = {"norm": "#FFF2B3", "attn": "#CFE3F5", "ffn": "#D5EFD0", "io": "#FFFFFF"}
INK, SKIP_INK = "#333333", "#0072B2"
CENTRE_X, BOX_HALF_WIDTH, BOX_HALF_HEIGHT = 4.4, 2.7, 0.28  # data units; one row per step
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


# A diagram step (an op's `stage`) -> its box kind, and for the steps that are more than one
# operation, the box's text and the label before the shape on its edge.
STAGE_KINDS = {
    "norm1": "norm",
    "qkv": "attn",
    "weights": "attn",
    "mix": "attn",
    "add1": "add",
    "norm2": "norm",
    "linear1": "ffn",
    "activation": "ffn",
    "linear2": "ffn",
    "add2": "add",
}
STAGE_TEXT = {
    "qkv": ("Q, K, V, split into heads", "Q, K, V  "),
    "weights": ("softmax(Q Kᵀ / √dₖ)", "weights  "),
    "mix": ("weights × V, concat, W_O", ""),
    "linear1": ("linear1  (d → d_ff)", ""),
    "linear2": ("linear2  (d_ff → d)", ""),
}


def _block_nodes(ops: list[Op]) -> list[Node]:
    """One box per step of the block (consecutive operations of one stage), between the block's
    input and output; a residual path leaves from the input and from the stream between the
    two halves (resid_mid)."""
    resid_mid = hooks.block(int(ops[0].layer)).resid_mid
    nodes = [Node("io", "block input x", escape(shape_text(ops[0].inputs[0])), branch=True)]
    for stage, group in groupby(ops, key=lambda op: op.stage):
        group = list(group)
        last = group[-1]
        text, label = STAGE_TEXT.get(stage, (last.operation, ""))
        nodes.append(
            Node(
                STAGE_KINDS[stage],
                "" if STAGE_KINDS[stage] == "add" else escape(text),
                escape(label + shape_text(last.output_shape)),
                branch=resid_mid in last.hooks,
            )
        )
    return [*nodes, Node("io", "block output")]


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


def block_diagram(ops: list[Op], norm_first: bool) -> go.Figure:
    """One encoder block, pre- or post-norm, drawn from its operations (encoder.core.block's
    table, with a run's shapes on the edges)."""
    nodes = _block_nodes(ops)
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
                font=dict(color="#555555", size=SMALLEST_TEXT),  # beside the boxes: small
            )
        )
    hidden = dict(visible=False, fixedrange=True)
    fig = new_figure()
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
