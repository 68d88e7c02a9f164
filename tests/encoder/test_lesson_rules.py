"""The lesson's rules (encoder.inspect.lesson): the query, its strongest long-range link, the heads
with a role, and the NumPy block against the torch model."""

from __future__ import annotations

import ast
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.inspect import heads, lesson, numpy_block
from encoder.inspect.token_kinds import CLS, PUNCTUATION, SEP, SPECIAL, WORD, token_kind
from tests.encoder.helpers import padded_batch, randomise_norms
from tests.shared import SENTENCE


@pytest.fixture(scope="module")
def minilm_trace(minilm):
    batch = minilm.batch(SENTENCE, "Short one.")
    return minilm.model, batch, minilm.model.trace(batch.input_ids, batch.attention_mask)


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (["[CLS]", "the", "animal", "because", "it", "was", "tired", ".", "[SEP]"], 4),
        (["[CLS]", "she", "gave", "him", "the", "book", "[SEP]"], 3),  # the last pronoun
        (["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"], 6),  # last content
        (["3", "1", "4", "1", "5"], 4),  # a toy task's sequence: the last position
        (["[CLS]", "!", "?", "[SEP]"], 2),  # no content: the last token that is not special
        (["[CLS]", "[SEP]"], 1),
        # byte-level BPE (RoBERTa) and SentencePiece (XLM-R): marks stripped, <s> </s> special
        (["<s>", "The", "Ġanimal", "Ġbecause", "Ġit", "Ġwas", "Ġtired", ".", "</s>"], 4),
        (["<s>", "▁the", "▁cat", "▁sat", "▁", ",", "</s>"], 3),
        (["<s>", "Ġ,", "</s>"], 1),  # "Ġ," is punctuation, not content
    ],
)
def test_the_query_is_the_last_pronoun_else_the_last_content_token(tokens, expected) -> None:
    assert lesson.pick_query(tokens) == expected


def test_opening_and_closing_tokens_of_each_family_are_one_kind() -> None:
    bert = ["[CLS]", "it", ",", "[SEP]", "[PAD]"]
    roberta = ["<s>", "Ġit", "Ġ,", "</s>", "<pad>"]
    assert [token_kind(t) for t in bert] == [token_kind(t) for t in roberta]
    assert [token_kind(t) for t in roberta] == [CLS, WORD, PUNCTUATION, SEP, SPECIAL]


def test_candidates_leave_out_special_tokens_punctuation_the_query_and_its_neighbours() -> None:
    tokens = ["[CLS]", "the", "dog", ",", "it", "ran", "home", ".", "[SEP]"]
    candidates, rule = lesson.link_candidates(tokens, 4)
    assert (candidates, rule) == ([1, 2, 6], "content")
    assert lesson.link_candidates(["[CLS]", "hi", "[SEP]"], 1) == ([0, 2], "other")
    assert lesson.link_candidates(["7"], 0) == ([0], "self")


def test_each_heads_strongest_link_sorted_by_weight() -> None:
    tokens = ["[CLS]", "a", "b", "c", "d", "e", "[SEP]"]
    rng = np.random.default_rng(0)
    attention = rng.dirichlet(np.ones(7), size=(3, 4, 7))  # [L, H, q, k]
    query = 5
    links = lesson.attention_links(attention, tokens, query)
    table = links.table
    assert list(table.columns) == ["layer", "head", "query", "key", "weight"]
    assert len(table) == 12 and (table["query"] == query).all()
    assert table["weight"].is_monotonic_decreasing
    allowed = [1, 2, 3]  # content tokens at least two positions from 5
    assert links.candidates == allowed
    for row in table.itertuples():  # every weight is the model's, the head's best allowed key
        assert row.key in allowed
        assert row.weight == attention[row.layer, row.head, query, row.key]
        assert row.weight == attention[row.layer, row.head, query, allowed].max()
    best = np.unravel_index(attention[:, :, query, allowed].argmax(), (3, 4, 3))
    assert (links.chosen["layer"], links.chosen["head"]) == best[:2]


def test_minilm_links_it_as_an_independent_loop_finds(minilm_trace) -> None:
    _, batch, trace = minilm_trace
    tokens = batch.tokens[0]
    n = len(tokens)
    query = lesson.pick_query(tokens)
    assert tokens[query] == "it"
    attention = trace.attention[:, 0, :, :n, :n].numpy()
    links = lesson.attention_links(attention, tokens, query)
    found = []
    for layer, head, key in itertools.product(range(6), range(12), range(n)):
        if tokens[key] in ("[CLS]", "[SEP]", ".", "'") or abs(key - query) < 2:
            continue
        found.append((float(attention[layer, head, query, key]), layer, head, key))
    weight, layer, head, key = max(found)
    chosen = links.chosen
    assert (chosen["layer"], chosen["head"], chosen["key"]) == (layer, head, key)
    assert chosen["weight"] == pytest.approx(weight, abs=0)
    print(f"it -> {tokens[key]!r} at layer {layer}, head {head}: {weight:.4f}")


def test_head_roles_name_the_head_that_plays_each_role_most() -> None:
    metrics = pd.DataFrame(
        {
            "layer": [0, 0, 1, 1],
            "head": [0, 1, 0, 1],
            "entropy": [0.1, 2.0, 0.5, 0.3],
            "to_previous": [0.9, 0.1, 0.2, 0.6],
            "to_next": [0.0, 0.1, 0.3, 0.1],
            "to_first": [0.0, 0.2, 0.7, 0.1],
            "to_last": [0.1, 0.1, 0.0, 0.2],
        }
    )
    roles = lesson.head_roles(metrics, n=8).set_index("role")
    assert tuple(roles.loc["previous token", ["layer", "head", "heads"]]) == (0, 0, 2)
    assert tuple(roles.loc["next token", ["layer", "head", "heads"]]) == (1, 0, 0)
    assert tuple(roles.loc["first token", ["layer", "head", "heads"]]) == (1, 0, 1)
    assert tuple(roles.loc["broad", ["layer", "head", "heads"]]) == (0, 1, 1)  # 2.0 > 0.9 ln 8
    assert roles.loc["previous token", "even"] == 1 / 8
    assert roles.loc["broad", "even"] == pytest.approx(math.log(8))


def test_minilm_has_a_previous_token_head_and_heads_parking_on_cls(minilm_trace) -> None:
    _, batch, trace = minilm_trace
    roles = lesson.head_roles(heads.head_metrics(trace, 0), len(batch.tokens[0]))
    roles = roles.set_index("role")
    assert roles.loc["previous token", "value"] > 0.9
    assert roles.loc["first token", "heads"] >= 10


# --- the NumPy block --------------------------------------------------------------------------


def test_the_numpy_block_imports_no_torch() -> None:
    tree = ast.parse(Path(numpy_block.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= {"math", "numpy"}


@pytest.mark.parametrize(
    ("norm_first", "activation", "norm_type"),
    list(itertools.product((True, False), ("relu", "gelu"), ("layernorm", "rmsnorm"))),
)
def test_the_numpy_block_equals_the_torch_block_with_padding(norm_first, activation, norm_type):
    cfg = EncoderConfig(
        vocab_size=100,
        d_model=32,
        num_heads=4,
        num_layers=2,
        d_ff=64,
        norm_first=norm_first,
        activation=activation,
        norm_type=norm_type,
        seed=3,
    )
    model = TransformerEncoder(cfg).eval()
    randomise_norms(model)
    input_ids, mask = padded_batch([7, 3, 5])
    trace = model.trace(input_ids, mask)
    check = lesson.numpy_block_check(cfg, model.state_dict(), trace)
    assert list(check["layer"]) == [0, 1]
    assert (check["max_abs_diff"] <= 1e-4).all(), check
    # and it is the block's own computation, not a copy: other weights give another output
    other = {k: v + 0.1 for k, v in model.state_dict().items()}
    moved = lesson.numpy_block_output(cfg, other, trace, 0)
    assert np.abs(moved - trace.hidden_states[1].double().numpy()).max() > 1e-2


def test_the_numpy_block_reproduces_minilm(minilm_trace) -> None:
    model, batch, trace = minilm_trace
    assert batch.attention_mask[1].sum() < batch.attention_mask.shape[1]  # padding
    check = lesson.numpy_block_check(model.cfg, model.state_dict(), trace)
    assert len(check) == 6 and (check["max_abs_diff"] <= 1e-4).all(), check


def test_the_numpy_gelu_is_the_exact_erf_form() -> None:
    x = np.linspace(-6, 6, 1001)
    expected = torch.nn.functional.gelu(torch.tensor(x)).numpy()  # torch's exact (erf) GELU
    assert np.abs(numpy_block.gelu(x) - expected).max() < 1e-12
