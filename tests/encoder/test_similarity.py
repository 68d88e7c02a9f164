"""Sentence embeddings and similarity by depth (encoder.inspect.similarity) against
sentence-transformers' own encode (the bundled MiniLM, loaded from its directory, never downloaded)
and against transformers' BertModel hidden states pooled here independently."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.similarity import (
    ALIKE_WITHIN,
    alike_depths,
    cosine_matrix,
    embeddings_by_depth,
    pooled,
    pooling_of,
    token_shares,
)
from encoder.io.tokenize import bundled_model_dir
from tests.encoder.pooling_dirs import write_sentence_transformers_dir

SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays an instrument.",
    "The stock market fell sharply today.",
    "Cats sleep.",
]


@pytest.fixture(scope="module")
def sentence_transformer():
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    return lambda directory: SentenceTransformer(str(directory), device="cpu")


@pytest.fixture(scope="module")
def run(minilm):
    batch = minilm.batch(*SENTENCES)
    return batch, minilm.model.trace(batch.input_ids, batch.attention_mask)


def reference_states(batch) -> list[np.ndarray]:
    """transformers' BertModel on the bundled MiniLM: every depth's hidden states, float64."""
    from transformers import BertModel

    bert = BertModel.from_pretrained(bundled_model_dir(), attn_implementation="eager").eval()
    with torch.no_grad():
        out = bert(batch.input_ids, attention_mask=batch.attention_mask, output_hidden_states=True)
    return [h.double().numpy() for h in out.hidden_states]


def test_minilm_reads_mean_pooling_then_normalised_from_its_directory() -> None:
    pooling = pooling_of(bundled_model_dir())
    assert (pooling.mode, pooling.normalized) == ("mean", True)
    assert "normalised" in pooling.why and "sentence-transformers config" in pooling.why


def test_without_a_sentence_transformers_config_it_is_mean_not_normalised(tmp_path) -> None:
    for directory in (None, tmp_path):
        pooling = pooling_of(directory)
        assert (pooling.mode, pooling.normalized) == ("mean", False)
        assert pooling.why.startswith("no sentence-transformers config")


def test_a_pooling_not_computed_here_falls_back_to_mean_and_says_so(tmp_path) -> None:
    write_sentence_transformers_dir(tmp_path, "pooling_mode_mean_sqrt_len_tokens", False)
    pooling = pooling_of(tmp_path)
    assert (pooling.mode, pooling.normalized) == ("mean", False)
    assert "pooling_mode_mean_sqrt_len_tokens" in pooling.why and "mean" in pooling.why


def test_a_module_after_the_pooling_is_named_as_left_out(tmp_path) -> None:
    write_sentence_transformers_dir(tmp_path, "pooling_mode_max_tokens", True)
    modules = json.loads((tmp_path / "modules.json").read_text())
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (tmp_path / "modules.json").write_text(json.dumps([*modules, dense]))
    pooling = pooling_of(tmp_path)
    assert (pooling.mode, pooling.normalized) == ("max", True)
    assert pooling.why.startswith("max over real tokens, then normalised")
    assert "its Dense module is left out" in pooling.why


def test_minilm_embeddings_equal_sentence_transformers_encode(run, sentence_transformer) -> None:
    batch, trace = run
    ours = embeddings_by_depth(trace, batch.attention_mask, pooling_of(bundled_model_dir()))[-1]
    reference = sentence_transformer(bundled_model_dir()).encode(SENTENCES)
    assert ours.shape == reference.shape
    np.testing.assert_allclose(ours.numpy(), reference, atol=1e-5, rtol=0)


def test_every_depth_is_the_transformers_hidden_state_pooled(run) -> None:
    batch, trace = run
    embeddings = embeddings_by_depth(trace, batch.attention_mask, pooling_of(bundled_model_dir()))
    states = reference_states(batch)
    assert embeddings.shape == (len(states), len(SENTENCES), 384)
    for depth, hidden in enumerate(states):
        for row, n in enumerate(batch.lengths):
            mean = hidden[row, :n].mean(axis=0)
            expected = mean / np.linalg.norm(mean)
            np.testing.assert_allclose(embeddings[depth, row].numpy(), expected, atol=1e-5)


def test_the_last_depth_is_the_output_after_a_pre_norm_model_s_final_norm() -> None:
    cfg = EncoderConfig(
        vocab_size=50, d_model=16, num_heads=2, num_layers=2, d_ff=32, norm_first=True
    )
    model = TransformerEncoder(cfg).eval()
    ids, mask = (
        torch.tensor([[1, 5, 7, 2], [1, 9, 2, 0]]),
        torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
    )
    trace = model.trace(ids, mask)
    pooling = pooling_of(None)
    embeddings = embeddings_by_depth(trace, mask, pooling)
    assert torch.equal(embeddings[-1], pooled(trace.output, mask, pooling))
    assert not torch.allclose(embeddings[-1], pooled(trace.hidden_states[-1], mask, pooling))
    assert torch.allclose(embeddings[1, 1], trace.hidden_states[1][1, :3].mean(dim=0))


def test_cosine_matrix_is_every_pair_s_cosine() -> None:
    vectors = torch.randn(3, 4, 8, dtype=torch.float64)
    matrix = cosine_matrix(vectors)
    for depth in range(3):
        for i in range(4):
            for j in range(4):
                u, v = vectors[depth, i], vectors[depth, j]
                assert matrix[depth, i, j] == pytest.approx(float(u @ v / (u.norm() * v.norm())))


def test_token_shares_sum_to_the_cosine_every_pair_every_depth(run) -> None:
    batch, trace = run
    pooling = pooling_of(bundled_model_dir())
    similarity = cosine_matrix(embeddings_by_depth(trace, batch.attention_mask, pooling))
    states = reference_states(batch)
    for depth, hidden in enumerate(states):
        for a, n_a in enumerate(batch.lengths):
            for b, n_b in enumerate(batch.lengths):
                shares = token_shares(trace, batch.attention_mask, pooling, a, b, depth)
                assert shares.shape == (n_a,)
                assert float(shares.sum()) == pytest.approx(
                    float(similarity[depth, a, b]), abs=1e-5
                )
                # independently: token i's share is x_i . v / (|v| n |u|), from transformers
                x, y = hidden[a, :n_a], hidden[b, :n_b]
                u, v = x.mean(axis=0), y.mean(axis=0)
                expected = x @ v / (np.linalg.norm(v) * n_a * np.linalg.norm(u))
                np.testing.assert_allclose(shares.numpy(), expected, atol=1e-5)
    assert (token_shares(trace, batch.attention_mask, pooling, 0, 2, 6) < 0).any()  # signed


@pytest.mark.parametrize(
    ("key", "mode", "normalize"),
    [("pooling_mode_cls_token", "cls", False), ("pooling_mode_max_tokens", "max", True)],
)
def test_cls_and_max_pooling_read_from_a_directory_equal_sentence_transformers(
    tmp_path, run, sentence_transformer, key, mode, normalize
) -> None:
    directory = write_sentence_transformers_dir(tmp_path, key, normalize)
    pooling = pooling_of(directory)
    assert (pooling.mode, pooling.normalized) == (mode, normalize)
    batch, trace = run
    ours = embeddings_by_depth(trace, batch.attention_mask, pooling)[-1]
    reference = sentence_transformer(directory).encode(SENTENCES)
    np.testing.assert_allclose(ours.numpy(), reference, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match=f"need mean pooling: under {mode} pooling"):
        token_shares(trace, batch.attention_mask, pooling, 0, 1, 2)


def test_the_alike_depth_is_the_first_from_which_the_cosine_stays_near_its_last() -> None:
    series = [0.2, 0.9, 0.5, 0.78, 0.84, 0.8]  # within 0.05 of 0.8 from depth 3 on (not at 1)
    similarity = torch.eye(3).repeat(6, 1, 1)
    similarity[:, 0, 1] = similarity[:, 1, 0] = torch.tensor(series)
    similarity[:, 0, 2] = similarity[:, 2, 0] = torch.tensor([0.7, 0.6, 0.3, 0.2, 0.1, 0.1])
    pairs = {(p.a, p.b): p for p in alike_depths(similarity, ["A b", "C", "D"])}
    assert set(pairs) == {(0, 1), (0, 2), (1, 2)}
    assert pairs[0, 1].depth == 3 and pairs[0, 2].depth == 4 and pairs[1, 2].depth == 0
    assert pairs[0, 1].cosines == pytest.approx(series)
    assert pairs[0, 1].said == (
        "“A b” and “C” become alike from block 2 (cosine 0.20 at the embeddings, 0.80 at "
        "the output)"
    )
    assert pairs[0, 2].said.startswith("“A b” and “D” grow apart until block 3 (cosine 0.70")
    assert "from the embeddings" in pairs[1, 2].said


def test_every_alike_depth_of_minilm_obeys_the_rule(run) -> None:
    batch, trace = run
    embeddings = embeddings_by_depth(trace, batch.attention_mask, pooling_of(bundled_model_dir()))
    pairs = alike_depths(cosine_matrix(embeddings), SENTENCES)
    assert len(pairs) == len(SENTENCES) * (len(SENTENCES) - 1) // 2
    for pair in pairs:
        after = np.array(pair.cosines[pair.depth :])
        assert np.all(np.abs(after - pair.cosines[-1]) <= ALIKE_WITHIN)
        if pair.depth:
            assert abs(pair.cosines[pair.depth - 1] - pair.cosines[-1]) > ALIKE_WITHIN
