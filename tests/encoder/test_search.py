"""Searching a corpus by meaning (encoder.inspect.search) with the bundled MiniLM: a corpus line
as the query finds itself first, at every depth; a corpus token's nearest tokens start with
itself; the chunked, padded pass equals each line run alone."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
import torch

from encoder import TransformerEncoder, load_pretrained
from encoder.inspect.corpus import bundled_corpus
from encoder.inspect.search import CHUNK, corpus_index
from encoder.inspect.similarity import embeddings_by_depth, pooling_of, states_at
from encoder.io.tokenize import bundled_model_dir
from tests.encoder.helpers import DEVICES

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def index(minilm):
    lines = bundled_corpus()[: CHUNK + 16]  # two chunks of different lengths
    return corpus_index(*minilm, lines, pooling_of(bundled_model_dir()))


def alone(minilm, text: str):
    """One line's trace, run by itself (no padding)."""
    batch = minilm.batch(text)
    return batch, minilm.model.trace(batch.input_ids, batch.attention_mask)


def test_the_bundled_corpus_is_embedded_at_every_depth_as_each_line_alone(minilm) -> None:
    lines = bundled_corpus()
    assert len(lines) == 328
    index = corpus_index(*minilm, lines, pooling_of(bundled_model_dir()))
    assert index.embeddings.shape == (7, 328, 384)
    assert torch.allclose(index.embeddings.norm(dim=-1), torch.ones(7, 328), atol=1e-5)
    for line in (0, 150, 327):
        batch, trace = alone(minilm, lines[line])
        expected = embeddings_by_depth(trace, batch.attention_mask, index.pooling)[:, 0]
        assert torch.allclose(index.embeddings[:, line], expected, atol=1e-5)
        assert index.tokens[line] == batch.tokens[0]


def test_a_corpus_line_as_the_query_finds_itself_first_at_every_depth(minilm, index) -> None:
    for line in (0, 7, CHUNK + 3):
        query = index.embed(minilm.model, [index.lines[line]])[:, 0]  # [L+1, d]
        for depth in range(index.num_layers + 1):
            hits = index.search(query[depth], depth, top=3)
            assert [hit.line for hit in hits][0] == line
            assert hits[0].text == index.lines[line]
            assert hits[0].cosine == pytest.approx(1.0, abs=1e-5)
            assert hits[0].cosine >= hits[1].cosine >= hits[2].cosine


def test_search_ranks_by_the_cosine_with_every_line(minilm, index) -> None:
    query = index.embed(minilm.model, ["A dog runs in the park."])[-1, 0]
    hits = index.search(query, index.num_layers, top=len(index.lines) + 5)
    assert len(hits) == len(index.lines)
    for hit in hits[:: len(hits) // 7]:
        expected = torch.cosine_similarity(query, index.embeddings[-1, hit.line], dim=0)
        assert hit.cosine == pytest.approx(float(expected), abs=1e-6)
    assert [h.cosine for h in hits] == sorted((h.cosine for h in hits), reverse=True)


def test_a_corpus_token_s_nearest_tokens_start_with_itself(minilm, index) -> None:
    line = CHUNK + 2
    batch, trace = alone(minilm, index.lines[line])
    for layer, position in ((0, 2), (3, 1), (index.num_layers, 3)):  # lamp, the, on
        state = states_at(trace, layer)[0, position]
        hits = index.nearest_tokens(minilm.model, state, layer, top=4)
        itself = [h for h in hits if (h.line, h.position) == (line, position)]
        assert len(itself) == 1 and itself[0].token == batch.tokens[0][position]
        assert itself[0].cosine == pytest.approx(1.0, abs=1e-5)
        assert hits[0].cosine == pytest.approx(1.0, abs=1e-5)  # the same word at the same
        # position of another line ties with it at the embeddings, never after a block
        assert layer == 0 or hits[1].cosine < 1 - 1e-3
        assert [h.cosine for h in hits] == sorted((h.cosine for h in hits), reverse=True)
    assert set(index._token_states) == {0, 3, index.num_layers}  # built when asked, not before


@pytest.mark.parametrize("device", DEVICES)
def test_an_index_on_a_device_equals_sentence_transformers_on_the_cpu(device) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    model, tokenizer = load_pretrained()  # its own copy: the shared MiniLM stays on the CPU
    lines = bundled_corpus()[:40]
    index = corpus_index(
        model.to(device), tokenizer, lines, pooling_of(bundled_model_dir()), device
    )
    reference = SentenceTransformer(str(bundled_model_dir()), device="cpu").encode(lines)
    assert index.embeddings.device.type == "cpu"
    torch.testing.assert_close(index.embeddings[-1], torch.from_numpy(reference), atol=1e-5, rtol=0)
    query = index.embed(model, [lines[3]])[-1, 0]
    assert index.search(query, index.num_layers)[0].line == 3
    assert index.nearest_tokens(model, index.token_states(model, 2)[7], 2)[
        0
    ].cosine == pytest.approx(1, abs=1e-5)


def test_a_blank_line_an_empty_corpus_and_a_depth_outside_are_refused(minilm, index) -> None:
    pooling = pooling_of(bundled_model_dir())
    with pytest.raises(ValueError, match="line 2 of the corpus is empty"):
        corpus_index(*minilm, ["A line.", "  ", "Another."], pooling)
    with pytest.raises(ValueError, match="the corpus is empty"):
        corpus_index(*minilm, [], pooling)
    with pytest.raises(ValueError, match="depth 7 is outside 0..6"):
        index.search(index.embeddings[0, 0], 7)
    other = TransformerEncoder(replace(minilm.model.cfg, num_layers=1))  # the index keeps none
    with pytest.raises(ValueError, match="this corpus was embedded by another model"):
        index.embed(other, ["A line."])
