"""encoder.web.block_diagram.block_diagram_data: block_diagram.js's data is the block's table of
operations (a node a stage between the input and the output, each edge the shape of its stage's
last operation), in pre- or post-norm order, with the residual paths, the frames and the notes,
as plain JSON and plain text, told in the page's language (app.page.figures.told_all)."""

from __future__ import annotations

import json
from itertools import groupby

import pytest

from app import i18n
from app.page.figures import told_all
from encoder.core.block import block_ops, shape_text
from encoder.core.config import EncoderConfig
from encoder.web.block_diagram import BOX_FILL, SKIP_INK, architecture_notes, block_diagram_data

B, T = 2, 9  # distinct sizes: each shape names one tensor (d 64, 4 heads of 16, d_ff 256)


def config(norm_first: bool = True, **overrides) -> EncoderConfig:
    return EncoderConfig(d_model=64, num_heads=4, d_ff=256, norm_first=norm_first, **overrides)


def data_of(cfg: EncoderConfig) -> dict:
    return block_diagram_data(block_ops(cfg, 0, B, T), cfg)


@pytest.fixture
def speaking():
    yield lambda language: i18n.speak_with(lambda: language)
    i18n.speak_with(lambda: "en")


@pytest.mark.parametrize("norm_first", [True, False])
def test_a_node_a_stage_each_edge_its_last_operations_output(norm_first):
    cfg = config(norm_first)
    ops = block_ops(cfg, 0, B, T)
    data = block_diagram_data(ops, cfg)
    assert json.loads(json.dumps(data)) == data  # plain JSON
    stages = [list(group) for _stage, group in groupby(ops, key=lambda op: op.stage)]
    nodes = data["nodes"]
    assert len(nodes) == len(stages) + 2 == 12
    assert nodes[0] == {
        "kind": "io",
        "text": "block input x",
        "label": "",
        "shape": shape_text(ops[0].inputs[0]),
        "branch": True,
    }
    assert nodes[0]["shape"] == "[2, 9, 64]"
    for node, group in zip(nodes[1:-1], stages, strict=True):
        assert node["shape"] == shape_text(group[-1].output_shape)
    assert nodes[-1]["kind"] == "io" and nodes[-1]["text"] == "block output"
    assert nodes[-1]["shape"] == shape_text(ops[-1].output_shape) == "[2, 9, 64]"
    # what the edges carry: Q, K and V split into heads, the weights, the feed-forward's width
    by_text = {node["text"]: node for node in nodes}
    assert by_text["Q, K, V, split into heads"]["label"] == "Q, K, V"
    assert by_text["Q, K, V, split into heads"]["shape"] == "[2, 4, 9, 16]"
    assert by_text["softmax(Q Kᵀ / √dₖ)"]["label"] == "weights"
    assert by_text["softmax(Q Kᵀ / √dₖ)"]["shape"] == "[2, 4, 9, 9]"
    assert by_text["linear1  (d → d_ff)"]["shape"] == "[2, 9, 256]"
    # the adds: their operation's name, drawn as ⊕
    adds = [i for i, node in enumerate(nodes) if node["kind"] == "add"]
    assert len(adds) == 2 and all(nodes[i]["text"] == "residual add" for i in adds)
    assert data["fills"] == BOX_FILL and data["skip_colour"] == SKIP_INK == "#0072B2"
    assert data["residual"] == "residual" and data["notes"] == []


def test_pre_norm_normalises_before_each_sublayer_post_norm_after_each_add():
    def kinds(cfg):
        return [(node["kind"], node["text"]) for node in data_of(cfg)["nodes"]]

    pre, post = kinds(config(True)), kinds(config(False))
    norm1, norm2 = ("norm", "ln1 (LayerNorm)"), ("norm", "ln2 (LayerNorm)")
    assert pre[1] == norm1 and pre[6] == norm2  # before attention, before linear1
    assert pre[-2][0] == "add"  # the block's output is the second add's
    assert post[5] == norm1 and post[-2] == norm2  # after each add: the output is ln2's
    assert post[4][0] == "add" and post[1][1] == "Q, K, V, split into heads"
    pre_data, post_data = data_of(config(True)), data_of(config(False))
    assert pre_data["title"].startswith("Pre-norm block")
    assert post_data["title"].startswith("Post-norm block")
    # the residual paths: from the input into the first add, from the stream between the two
    # halves (the first add's output, or ln1's in post-norm) into the second
    assert pre_data["skips"] == [[0, 5], [5, 10]]
    assert post_data["skips"] == [[0, 4], [5, 9]]
    assert [n["branch"] for n in post_data["nodes"]].count(True) == 2
    # the frames: the attention's three boxes, the feed-forward's three
    assert pre_data["groups"] == [
        {"kind": "attn", "name": "multi-head self-attention", "first": 2, "last": 4},
        {"kind": "ffn", "name": "feed-forward network", "first": 7, "last": 9},
    ]
    assert [(g["first"], g["last"]) for g in post_data["groups"]] == [(1, 3), (6, 8)]


def test_rope_a_gate_and_the_notes_are_the_configs():
    cfg = config(
        True, positional="rope", activation="geglu", linear_bias=False, norm_bias=False,
        attention_window=4, global_every=3, num_layers=5, embedding_size=32, shared_layers=True,
    )  # fmt: skip
    data = data_of(cfg)
    texts = [node["text"] for node in data["nodes"]]
    assert "Q, K, V; RoPE turns Q, K" in texts and "GeGLU: GELU(input) × gate" in texts
    linear1 = next(node for node in data["nodes"] if node["text"] == "linear1  (d → 2·d_ff)")
    assert linear1["label"] == "input, gate" and linear1["shape"] == "[2, 9, 512]"
    assert data["notes"] == architecture_notes(cfg)
    assert data["notes"] == [
        "No positions added to the embeddings: each block turns q and k by position (RoPE)",
        "Layers 1, 2 and 4 attend only to keys within 2 positions (window 4); 0 and 3 to all",
        "No biases in the linear layers or the norms",
        "Embeddings are 32 wide, projected to d_model = 64 before block 0",
        "All 5 blocks use these same weights (one set)",
    ]
    assert data_of(config(True))["notes"] == []  # a BERT-style block: no notes
    modern = config(True, first_attention_norm=False, num_layers=3)
    texts = [node["text"] for node in data_of(modern)["nodes"]]
    assert "ln1 (LayerNorm)" not in texts and "ln2 (LayerNorm)" in texts
    assert len(texts) == 11  # no first norm: a stage fewer
    assert data_of(modern)["skips"] == [[0, 4], [4, 9]]


def test_in_another_language_the_words_are_translated_and_not_escaped(speaking):
    speaking("es")
    data = told_all(data_of(config(True)))
    texts = [node["text"] for node in data["nodes"]]
    assert texts[0] == "entrada del bloque x" and "suma residual" in texts
    assert data["title"].startswith("Bloque pre-norm")
    assert data["groups"][0]["name"] == "autoatención multicabeza"
    weights = next(node for node in data["nodes"] if node["label"])
    assert weights["shape"] == "[2, 4, 9, 16]"
    assert "&" not in json.dumps(data, ensure_ascii=False)  # plain text: the module's textContent
