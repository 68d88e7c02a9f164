"""Heads across a corpus: statistics against a hand count, a previous-token head classified so,
the bundled corpus, the query-key plane, and bad pasted corpora."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.corpus import (
    GROUPS,
    MAX_CHARS,
    MAX_SENTENCES,
    MAX_TOKENS,
    bundled_corpus,
    bundled_corpus_source,
    corpus_of,
    corpus_statistics,
    fingerprint,
    group_counts,
    head_points,
    parse_corpus,
    project_queries_keys,
)
from encoder.inspect.moves import NORM_WEIGHTED
from encoder.io.tokenize import load_tokenizer, tokenize

TINY = ["The cat sat.", "A dog, a cat and a bird ran home!", "Why?", "Rain fell all night."]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def small_model(**options) -> TransformerEncoder:
    settings = {"vocab_size": 30522, "d_model": 16, "num_heads": 2, "num_layers": 2, "d_ff": 32}
    return TransformerEncoder(EncoderConfig(**{**settings, **options})).eval()


def hand_count(model: TransformerEncoder, tokens: list[list[str]], ids: list[list[int]]):
    """Each sentence run alone, every query's row read one number at a time: {name: [L, H]}."""
    L, H = model.cfg.num_layers, model.cfg.num_heads
    names = ("previous", "next", "self", "[CLS]", "[SEP]", "punctuation", "entropy", "spread")
    sums = {name: np.zeros((L, H)) for name in names}
    counts = dict.fromkeys(names, 0)
    for sentence, sentence_ids in zip(tokens, ids, strict=True):
        trace = model.trace(torch.tensor([sentence_ids]))
        n = len(sentence_ids)
        for i in range(n):
            counts["self"] += 1
            counts["entropy"] += 1
            counts["spread"] += n > 1
            counts["previous"] += i > 0
            counts["next"] += i < n - 1
            for layer in range(L):
                for head in range(H):
                    row = [float(w) for w in trace.attention[layer, 0, head, i]]
                    sums["self"][layer, head] += row[i]
                    if i > 0:
                        sums["previous"][layer, head] += row[i - 1]
                    if i < n - 1:
                        sums["next"][layer, head] += row[i + 1]
                    for j, token in enumerate(sentence):
                        if token in ("[CLS]", "[SEP]"):
                            sums[token][layer, head] += row[j]
                        elif not any(ch.isalnum() for ch in token):
                            sums["punctuation"][layer, head] += row[j]
                    h = -sum(w * math.log(w) for w in row if w > 0)
                    sums["entropy"][layer, head] += h
                    if n > 1:
                        sums["spread"][layer, head] += h / math.log(n)
        counts["[CLS]"] = counts["[SEP]"] = counts["punctuation"] = counts["self"]
    return {name: sums[name] / counts[name] for name in names}


def test_head_statistics_match_a_hand_count(tokenizer):
    model = small_model()
    corpus = corpus_of(tokenize(TINY, tokenizer, MAX_TOKENS))
    stats = corpus_statistics(model, corpus, batch_size=3)  # two batches, both padded
    expected = hand_count(model, corpus.tokens, corpus.ids)
    for name, values in expected.items():
        np.testing.assert_allclose(
            stats.table[name].to_numpy(), values.flatten(), atol=1e-5, err_msg=name
        )
    assert set(stats.table["group"]) <= set(GROUPS)
    assert len(stats.points) == corpus.token_count == sum(len(t) for t in corpus.tokens)
    assert stats.projections.shape == (2, 2, 2, corpus.token_count, 2)
    assert stats.nbytes > stats.projections.nbytes
    norm_rows = stats.shares[stats.shares["reading"] == NORM_WEIGHTED]
    sums = norm_rows[["[CLS]", "[SEP]", "punctuation"]].sum(axis=1)
    assert ((sums > 0) & (sums <= 1 + 1e-9)).all()


def previous_token_model() -> TransformerEncoder:
    """One layer whose head 0 looks from each position to the one before it, by hand.

    Tokens are zeroed; position t is (cos t.theta, sin t.theta, -cos, -sin, 0...) which a
    LayerNorm only scales. Head 0's keys read the angle, its queries the angle turned back by
    one step, sharply: the largest score is on the key one position back. Head 1 is uniform."""
    model = small_model(num_layers=1, d_model=8, d_ff=8, positional="learned", max_len=64)
    theta = 2 * math.pi / 80
    t = torch.arange(64, dtype=torch.float32) * theta
    sharp = 3000.0
    with torch.no_grad():
        model.embed.token.weight.zero_()
        position = torch.zeros(64, 8)
        position[:, 0], position[:, 1] = torch.cos(t), torch.sin(t)
        position[:, 2], position[:, 3] = -torch.cos(t), -torch.sin(t)
        model.embed.position.weight.copy_(position)
        attention = model.layers[0].self_attn
        attention.in_proj_weight.zero_()
        attention.in_proj_bias.zero_()
        c, s = math.cos(theta), math.sin(theta)
        attention.in_proj_weight[0, :2] = torch.tensor([c, s]) * sharp  # query: angle - theta
        attention.in_proj_weight[1, :2] = torch.tensor([-s, c]) * sharp
        attention.in_proj_weight[8, 0] = 1.0  # key: the angle itself
        attention.in_proj_weight[9, 1] = 1.0
        attention.in_proj_weight[16:] = torch.eye(8)  # values: something to move
    return model


def test_a_head_that_copies_the_previous_token_is_classified_so(tokenizer):
    model = previous_token_model()
    stats = corpus_statistics(
        model, corpus_of(tokenize(bundled_corpus()[:40], tokenizer, MAX_TOKENS))
    )
    head0 = stats.table.iloc[0]
    assert head0["previous"] > 0.99
    assert head0["group"] == "previous"
    assert stats.table.iloc[1]["group"] != "previous"
    counts = group_counts(stats.table).set_index("group")["heads"]
    assert counts["previous"] == 1 and counts.sum() == 2
    grid = fingerprint(stats.table)
    assert grid.shape == (2, 7) and grid[0, 0] == pytest.approx(head0["previous"])


def test_the_bundled_corpus_is_large_enough_and_names_its_source():
    sentences = bundled_corpus()
    assert len(sentences) >= 300
    assert len(set(sentences)) == len(sentences)
    assert (
        "CC0" in bundled_corpus_source() and "written for this project" in bundled_corpus_source()
    )


def test_the_plane_does_not_depend_on_where_the_keys_sit():
    generator = np.random.default_rng(0)
    queries = generator.normal(size=(50, 4))
    q_plane, k_plane = project_queries_keys(queries, queries + 7.0)  # keys: queries shifted
    np.testing.assert_allclose(q_plane, k_plane, atol=1e-9)
    # a cloud on a line in 4-D stays a line: the second coordinate is zero
    line = np.outer(np.arange(10.0), [1.0, 2.0, 0.0, -1.0])
    q_plane, k_plane = project_queries_keys(line, line)
    np.testing.assert_allclose(q_plane[:, 1], 0, atol=1e-9)


def test_head_points_label_every_query_and_key(tokenizer):
    model = small_model()
    corpus = corpus_of(tokenize(TINY, tokenizer, MAX_TOKENS))
    stats = corpus_statistics(model, corpus)
    points = head_points(stats, 1, 0)
    n = corpus.token_count
    assert list(points["role"]) == ["query"] * n + ["key"] * n
    assert list(points.columns) == ["x", "y", "role", "sentence", "position", "token", "kind"]
    first = points.iloc[0]
    assert corpus.tokens[first["sentence"]][first["position"]] == first["token"]
    with pytest.raises(ValueError, match=r"no head \(2, 0\): layers 0..1, heads 0..1"):
        head_points(stats, 2, 0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the corpus is empty"),
        ("  \n\n \t", "the corpus is empty"),
        ("Only one sentence.", "one sentence is not a corpus"),
        ("x\n" * (MAX_SENTENCES + 1), f"has {MAX_SENTENCES + 1:,} sentences; the limit is"),
        ("a" * (MAX_CHARS + 1), f"the limit is {MAX_CHARS:,}"),
    ],
)
def test_bad_pasted_corpora_get_a_message(text, message):
    with pytest.raises(ValueError, match=message):
        parse_corpus(text)


def test_a_corpus_of_special_tokens_only_gets_a_message(tokenizer):
    sentences = parse_corpus("[CLS]\n[SEP] [SEP]\n")
    with pytest.raises(ValueError, match="only special tokens"):
        corpus_of(tokenize(sentences, tokenizer, MAX_TOKENS))


def test_long_sentences_are_cut_and_counted(tokenizer):
    corpus = corpus_of(tokenize(["word " * 100, "short one"], tokenizer, 64))
    assert corpus.truncated == 1 and len(corpus.ids[0]) == 64 and corpus.tokens[0][-1] == "[SEP]"
