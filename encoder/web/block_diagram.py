"""The block diagram's data (block_diagram.js): one encoder block, pre- or post-norm, with live
tensor shapes on its edges.

The boxes are the steps of encoder.core.block's table of operations, the one description of the
block that also gives the shape ledger and the memory estimate; what the config changes beyond
them (RoPE's turn of q and k, a gated feed-forward, no biases, a local window, an embedding
projection, shared weights) is said in the boxes' text and in notes under the block. Its words
are `Said`s (English, with their templates): a front end tells them in its reader's language.
"""

from __future__ import annotations

from itertools import groupby

from encoder.core import hooks
from encoder.core.block import Op, shape_text
from encoder.core.config import EncoderConfig
from encoder.core.options import ACTIVATION_NAMES, GATED_INNER
from encoder.core.said import Said

BOX_FILL = {"norm": "#FFF2B3", "attn": "#CFE3F5", "ffn": "#D5EFD0", "io": "#FFFFFF"}
SKIP_INK = "#0072B2"  # the residual path


def _node(kind: str, text: str, label: str = "", shape: str = "", branch: bool = False) -> dict:
    """One step of the block, drawn top to bottom: its kind ("io", "norm", "attn", "ffn" or
    "add"), its box's text (an add: its operation's name, drawn as ⊕), what the edge leaving it
    carries before its shape ("weights"), the shape of the tensor leaving it ('[1, 9, 384]'),
    and whether a residual path leaves from its outgoing edge."""
    return {"kind": kind, "text": text, "label": label, "shape": shape, "branch": branch}


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
    """{stage: (box text, edge label)}, each a Said."""
    return {
        "qkv": (Said("Q, K, V, split into heads"), "Q, K, V"),
        "weights": ("softmax(Q Kᵀ / √dₖ)", Said("weights")),
        "mix": (Said("weights × V, concat, W_O"), ""),
        "linear1": ("linear1  (d → d_ff)", ""),
        "linear2": ("linear2  (d_ff → d)", ""),
    }


# What a config changes in a box's text: RoPE turns q and k before the scores; a gated
# feed-forward's linear1 gives the activation's input and its gate, which the activation multiplies.
GATED_STAGES = ("linear1", "activation")


def _stage_text(stage: str, cfg: EncoderConfig | None, default: str) -> tuple[str, str]:
    """A box's text and the label before the shape on its edge."""
    if cfg is not None and cfg.positional == "rope" and stage == "qkv":
        return Said("Q, K, V; RoPE turns Q, K"), "Q, K, V"
    if cfg is not None and cfg.gated and stage in GATED_STAGES:
        if stage == "linear1":
            return "linear1  (d → 2·d_ff)", Said("input, gate")
        act = ACTIVATION_NAMES[cfg.activation]
        return Said("{act}: {inner}(input) × gate", act=act, inner=GATED_INNER[cfg.activation]), ""
    return _stage_texts().get(stage, (default, ""))


def _listed(layers: list[int]) -> str:
    """'1, 2, 4 and 5'."""
    words = [str(layer) for layer in layers]
    if len(words) == 1:
        return words[0]
    return Said("{layers} and {last}", layers=", ".join(words[:-1]), last=words[-1])


def architecture_notes(cfg: EncoderConfig) -> list[str]:
    """What this config changes beyond the boxes, one short sentence each (none for a plain
    BERT-style block)."""
    notes = []
    if cfg.positional == "rope":
        notes.append(
            Said(
                "No positions added to the embeddings: each block turns q and k by position (RoPE)"
            )
        )
    local = [layer for layer in range(cfg.num_layers) if cfg.is_local(layer)]
    if local:
        rest = [layer for layer in range(cfg.num_layers) if layer not in local]
        values = dict(
            local=_listed(local), reach=cfg.attention_window // 2, window=cfg.attention_window
        )
        notes.append(
            Said(
                "Layers {local} attend only to keys within {reach} positions (window {window}); "
                "{rest} to all",
                rest=_listed(rest),
                **values,
            )
            if rest
            else Said(
                "Layers {local} attend only to keys within {reach} positions (window {window})",
                **values,
            )
        )
    if not cfg.linear_bias or not cfg.norm_bias:
        if not cfg.linear_bias and not cfg.norm_bias:
            notes.append(Said("No biases in the linear layers or the norms"))
        elif not cfg.linear_bias:
            notes.append(Said("No biases in the linear layers"))
        else:
            notes.append(Said("No biases in the norms"))
    if cfg.embedding_size:
        notes.append(
            Said(
                "Embeddings are {size} wide, projected to d_model = {d_model} before block 0",
                size=cfg.embedding_size,
                d_model=cfg.d_model,
            )
        )
    if not cfg.has_attention_norm(0):
        notes.append(
            Said("Block 0, drawn here, has no norm before its attention; the other blocks have one")
            if cfg.num_layers > 1
            else Said("Block 0, drawn here, has no norm before its attention")
        )
    if cfg.shared_layers:
        notes.append(
            Said("All {layers} blocks use these same weights (one set)", layers=cfg.num_layers)
        )
    return notes


def _block_nodes(ops: list[Op], cfg: EncoderConfig | None = None) -> list[dict]:
    """One box per step of the block (consecutive operations of one stage), between the block's
    input and output; a residual path leaves from the input and from the stream between the
    two halves (resid_mid)."""
    resid_mid = hooks.block(int(ops[0].layer)).resid_mid
    nodes = [_node("io", Said("block input x"), shape=shape_text(ops[0].inputs[0]), branch=True)]
    for stage, group in groupby(ops, key=lambda op: op.stage):
        group = list(group)
        last = group[-1]
        kind = STAGE_KINDS[stage]
        text, label = _stage_text(stage, cfg, last.operation)
        nodes.append(
            _node(
                kind,
                last.operation if kind == "add" else text,
                label,
                shape_text(last.output_shape),
                branch=resid_mid in last.hooks,
            )
        )
    return [*nodes, _node("io", Said("block output"), shape=shape_text(ops[-1].output_shape))]


def _residual_paths(nodes: list[dict]) -> list[list[int]]:
    """Each residual path as [the node whose outgoing edge it leaves, the add it comes back
    into]: from the latest branch before each add."""
    paths, start = [], None
    for i, node in enumerate(nodes):
        if node["kind"] == "add" and start is not None:
            paths.append([start, i])
        if node["branch"]:
            start = i
    return paths


def _groups(nodes: list[dict]) -> list[dict]:
    """The framed groups of boxes: {kind, name, first node, last node}, for each kind the block
    has."""
    names = (("attn", Said("multi-head self-attention")), ("ffn", Said("feed-forward network")))
    found = []
    for kind, name in names:
        rows = [i for i, node in enumerate(nodes) if node["kind"] == kind]
        if rows:
            found.append({"kind": kind, "name": name, "first": min(rows), "last": max(rows)})
    return found


def block_title(cfg: EncoderConfig) -> str:
    """The diagram's title: pre- or post-norm, each a Said."""
    return (
        Said("Pre-norm block: normalise first, then attention / feed-forward, then add")
        if cfg.norm_first
        else Said("Post-norm block: attention / feed-forward, add, then normalise")
    )


def block_diagram_data(ops: list[Op], cfg: EncoderConfig) -> dict:
    """The block diagram as block_diagram.js's data: its title; its nodes top to bottom, each {kind
    ("io", "norm", "attn", "ffn" or "add"), text (the box's, or the add's operation), label
    (what its outgoing edge carries before the shape, or ""), shape (the tensor leaving it;
    the block output's: the block's), branch (a residual path leaves its outgoing edge)};
    skips: each residual path [from node, into add]; groups: the framed boxes {kind, name,
    first, last}; notes: architecture_notes; the word on the residual path; the boxes' fills
    and the residual path's colour. Words as plain text, each a Said
    (the app tells them in the page's language)."""
    nodes = _block_nodes(ops, cfg)
    return {
        "title": block_title(cfg),
        "nodes": nodes,
        "skips": _residual_paths(nodes),
        "groups": _groups(nodes),
        "notes": architecture_notes(cfg),
        "residual": Said("residual"),
        "fills": dict(BOX_FILL),
        "skip_colour": SKIP_INK,
    }
