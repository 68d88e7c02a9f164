"""The block diagram: one encoder block, pre- or post-norm, with live tensor shapes on its edges.

The boxes are the steps of encoder.core.block's table of operations, the one description of the
block that also gives the shape ledger and the memory estimate; what the config changes beyond
them (RoPE's turn of q and k, a gated feed-forward, no biases, a local window, an embedding
projection, shared weights) is said in the boxes' text and in notes under the block.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

import plotly.graph_objects as go

from app.charts.activations import GATED_INNER
from app.charts.common import FONT_SIZE, MARGIN, SMALLEST_TEXT, base_layout, escape, new_figure
from app.i18n import _, told
from encoder.core import hooks
from encoder.core.block import Op, shape_text
from encoder.core.config import EncoderConfig
from encoder.core.options import ACTIVATION_NAMES

BOX_FILL = {"norm": "#FFF2B3", "attn": "#CFE3F5", "ffn": "#D5EFD0", "io": "#FFFFFF"}
INK, SKIP_INK = "#333333", "#0072B2"
CENTRE_X, BOX_HALF_WIDTH, BOX_HALF_HEIGHT = 4.4, 2.7, 0.28  # data units; one row per step
SKIP_X, LABEL_X, GROUP_RIGHT = 1.1, 4.55, 11.8
ADD_RADIUS_PX = 16  # the residual add is a round glyph (⊕, 42 px font): arrows stop short of it
ROW_PX = 62
NOTE_ROW = 0.5  # a note's line under the block, in rows of ROW_PX


@dataclass(frozen=True)
class Node:
    """One step of the block, drawn top to bottom; its words as plain text (the Plotly figure
    escapes them, block_diagram.js draws them as text)."""

    kind: str  # "io" | "norm" | "attn" | "ffn" | "add"
    text: str = ""  # the box's text (an add: its operation's name, drawn as ⊕)
    label: str = ""  # what the edge leaving this node carries, before its shape ("weights")
    shape: str = ""  # the shape of the tensor leaving this node ('[1, 9, 384]')
    branch: bool = False  # a residual skip path leaves from this node's outgoing edge

    @property
    def edge(self) -> str:
        """The edge's label as the Plotly figure writes it: 'weights  [1, 12, 9, 9]'."""
        return f"{self.label}  {self.shape}" if self.label else self.shape


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


def _stage_texts() -> dict[str, tuple[str, str]]:
    """{stage: (box text, edge label)}, in the run's language."""
    return {
        "qkv": (_("Q, K, V, split into heads"), "Q, K, V"),
        "weights": ("softmax(Q Kᵀ / √dₖ)", _("weights")),
        "mix": (_("weights × V, concat, W_O"), ""),
        "linear1": ("linear1  (d → d_ff)", ""),
        "linear2": ("linear2  (d_ff → d)", ""),
    }


# What a config changes in a box's text: RoPE turns q and k before the scores; a gated
# feed-forward's linear1 gives the activation's input and its gate, which the activation multiplies.
GATED_STAGES = ("linear1", "activation")


def _stage_text(stage: str, cfg: EncoderConfig | None, default: str) -> tuple[str, str]:
    """A box's text and the label before the shape on its edge."""
    if cfg is not None and cfg.positional == "rope" and stage == "qkv":
        return _("Q, K, V; RoPE turns Q, K"), "Q, K, V"
    if cfg is not None and cfg.gated and stage in GATED_STAGES:
        if stage == "linear1":
            return "linear1  (d → 2·d_ff)", _("input, gate")
        act = ACTIVATION_NAMES[cfg.activation]
        return _("{act}: {inner}(input) × gate", act=act, inner=GATED_INNER[cfg.activation]), ""
    return _stage_texts().get(stage, (default, ""))


def _listed(layers: list[int]) -> str:
    """'1, 2, 4 and 5'."""
    words = [str(layer) for layer in layers]
    if len(words) == 1:
        return words[0]
    return _("{layers} and {last}", layers=", ".join(words[:-1]), last=words[-1])


def architecture_notes(cfg: EncoderConfig) -> list[str]:
    """What this config changes beyond the boxes, one short sentence each (none for a plain
    BERT-style block)."""
    notes = []
    if cfg.positional == "rope":
        notes.append(
            _("No positions added to the embeddings: each block turns q and k by position (RoPE)")
        )
    local = [layer for layer in range(cfg.num_layers) if cfg.is_local(layer)]
    if local:
        rest = [layer for layer in range(cfg.num_layers) if layer not in local]
        values = dict(
            local=_listed(local), reach=cfg.attention_window // 2, window=cfg.attention_window
        )
        notes.append(
            _(
                "Layers {local} attend only to keys within {reach} positions (window {window}); "
                "{rest} to all",
                rest=_listed(rest),
                **values,
            )
            if rest
            else _(
                "Layers {local} attend only to keys within {reach} positions (window {window})",
                **values,
            )
        )
    if not cfg.linear_bias or not cfg.norm_bias:
        if not cfg.linear_bias and not cfg.norm_bias:
            notes.append(_("No biases in the linear layers or the norms"))
        elif not cfg.linear_bias:
            notes.append(_("No biases in the linear layers"))
        else:
            notes.append(_("No biases in the norms"))
    if cfg.embedding_size:
        notes.append(
            _(
                "Embeddings are {size} wide, projected to d_model = {d_model} before block 0",
                size=cfg.embedding_size,
                d_model=cfg.d_model,
            )
        )
    if not cfg.has_attention_norm(0):
        notes.append(
            _("Block 0, drawn here, has no norm before its attention; the other blocks have one")
            if cfg.num_layers > 1
            else _("Block 0, drawn here, has no norm before its attention")
        )
    if cfg.shared_layers:
        notes.append(
            _("All {layers} blocks use these same weights (one set)", layers=cfg.num_layers)
        )
    return notes


def _block_nodes(ops: list[Op], cfg: EncoderConfig | None = None) -> list[Node]:
    """One box per step of the block (consecutive operations of one stage), between the block's
    input and output; a residual path leaves from the input and from the stream between the
    two halves (resid_mid)."""
    resid_mid = hooks.block(int(ops[0].layer)).resid_mid
    nodes = [Node("io", _("block input x"), shape=shape_text(ops[0].inputs[0]), branch=True)]
    for stage, group in groupby(ops, key=lambda op: op.stage):
        group = list(group)
        last = group[-1]
        kind = STAGE_KINDS[stage]
        text, label = _stage_text(stage, cfg, last.operation)
        nodes.append(
            Node(
                kind,
                told(last.operation) if kind == "add" else text,
                label,
                shape_text(last.output_shape),
                branch=resid_mid in last.hooks,
            )
        )
    return [*nodes, Node("io", _("block output"), shape=shape_text(ops[-1].output_shape))]


def _residual_paths(nodes: list[Node]) -> list[tuple[int, int]]:
    """Each residual path as (the node whose outgoing edge it leaves, the add it comes back
    into): from the latest branch before each add."""
    paths, start = [], None
    for i, node in enumerate(nodes):
        if node.kind == "add" and start is not None:
            paths.append((start, i))
        if node.branch:
            start = i
    return paths


def _groups(nodes: list[Node]) -> list[tuple[str, str, int, int]]:
    """The framed groups of boxes: (kind, name, first node, last node), for each kind the block
    has."""
    names = (("attn", _("multi-head self-attention")), ("ffn", _("feed-forward network")))
    found = []
    for kind, name in names:
        rows = [i for i, node in enumerate(nodes) if node.kind == kind]
        if rows:
            found.append((kind, name, min(rows), max(rows)))
    return found


def block_title(cfg: EncoderConfig) -> str:
    """The diagram's title: pre- or post-norm, in the run's language."""
    return (
        _("Pre-norm block: normalise first, then attention / feed-forward, then add")
        if cfg.norm_first
        else _("Post-norm block: attention / feed-forward, add, then normalise")
    )


def block_diagram_data(ops: list[Op], cfg: EncoderConfig) -> dict:
    """The block diagram as block_diagram.js's data (encoder/web/block_diagram.js), from the same
    nodes as the Plotly figure (block_diagram): its title; its nodes top to bottom, each {kind
    ("io", "norm", "attn", "ffn" or "add"), text (the box's, or the add's operation), label
    (what its outgoing edge carries before the shape, or ""), shape (the tensor leaving it;
    the block output's: the block's), branch (a residual path leaves its outgoing edge)};
    skips: each residual path [from node, into add]; groups: the framed boxes {kind, name,
    first, last}; notes: architecture_notes; the word on the residual path; the boxes' fills
    and the residual path's colour. Words in the run's language, as plain text."""
    nodes = _block_nodes(ops, cfg)
    return {
        "title": block_title(cfg),
        "nodes": [
            {
                "kind": node.kind,
                "text": node.text,
                "label": node.label,
                "shape": node.shape,
                "branch": node.branch,
            }
            for node in nodes
        ],
        "skips": [list(path) for path in _residual_paths(nodes)],
        "groups": [
            {"kind": kind, "name": name, "first": first, "last": last}
            for kind, name, first, last in _groups(nodes)
        ],
        "notes": architecture_notes(cfg),
        "residual": _("residual"),
        "fills": dict(BOX_FILL),
        "skip_colour": SKIP_INK,
    }


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


def block_diagram(ops: list[Op], cfg: EncoderConfig) -> go.Figure:
    """One encoder block of a model with config `cfg`, pre- or post-norm, drawn from its
    operations (encoder.core.block's table, with a run's shapes on the edges)."""
    nodes = _block_nodes(ops, cfg)
    left, right = CENTRE_X - BOX_HALF_WIDTH, CENTRE_X + BOX_HALF_WIDTH
    layout_shapes, annotations = [], []
    # y where each node's residual path leaves the main line: under its box, or its add's glyph
    leaves = [
        -i - 0.5 if n.kind == "add" else -i - BOX_HALF_HEIGHT - 0.14 for i, n in enumerate(nodes)
    ]
    skip_from = {add: leaves[start] for start, add in _residual_paths(nodes)}
    for i, node in enumerate(nodes):
        y = -i
        if node.kind == "add":
            annotations.append(
                dict(x=CENTRE_X, y=y, text="⊕", showarrow=False, font=dict(size=42, color=INK))
            )
            layout_shapes.append(
                dict(  # the residual path: left, down, then back in to the add
                    type="path",
                    path=f"M {CENTRE_X},{skip_from[i]} L {SKIP_X},{skip_from[i]} L {SKIP_X},{y}",
                    line=dict(color=SKIP_INK, width=3),
                )
            )
            annotations.append(_arrow(SKIP_X, y, CENTRE_X, y, colour=SKIP_INK, end=ADD_RADIUS_PX))
            annotations.append(
                dict(
                    x=SKIP_X - 0.25,
                    y=(skip_from[i] + y) / 2,
                    text=_("residual"),
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
                    text=escape(node.text),
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
                    text=escape(node.edge),
                    showarrow=False,
                    xanchor="left",
                    font=dict(family="monospace", size=FONT_SIZE + 1, color="#222222"),
                )
            )
    for _kind, name, first, last in _groups(nodes):
        top, bottom = -first + BOX_HALF_HEIGHT + 0.06, -last - BOX_HALF_HEIGHT - 0.06
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
    notes = architecture_notes(cfg)
    last = -len(nodes) + 1  # the block output's row
    for i, note in enumerate(notes):  # under the block, one line each, in rows of NOTE_ROW
        annotations.append(
            dict(
                x=0.1,
                y=last - 0.75 - NOTE_ROW * i,
                text="• " + escape(note),
                showarrow=False,
                xanchor="left",
                font=dict(color=INK, size=FONT_SIZE),
            )
        )
    hidden = dict(visible=False, fixedrange=True)
    fig = new_figure()
    fig.update_layout(
        shapes=layout_shapes,
        annotations=[a for a in annotations if a["text"] or a["showarrow"]],
        xaxis=dict(hidden, range=[0, 12]),
        yaxis=dict(hidden, range=[last - 0.4 - NOTE_ROW * len(notes) - 0.2 * bool(notes), 0.4]),
        plot_bgcolor="white",
    )
    title = block_title(cfg)
    rows = len(nodes) + NOTE_ROW * len(notes) + 0.2 * bool(notes)
    base_layout(fig, title, height=round(ROW_PX * rows) + 70)
    return fig.update_layout(margin=dict(MARGIN, t=50, b=10))
