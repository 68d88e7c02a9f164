"""`python -m encoder embed`: the JSON it prints (keys, shapes, MiniLM's embeddings equal to
sentence-transformers'), --layer, a checkpoint's own pooling, and exit 2 with a sentence."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from encoder.cli import USAGE_ERROR, main
from encoder.inspect.similarity import embeddings_by_depth, pooling_of
from encoder.io.tokenize import bundled_model_dir
from tests.encoder.pooling_dirs import write_sentence_transformers_dir

LINES = ["A man is playing a guitar.", "Someone plays an instrument.", "Stocks fell."]


def embedded(capsys, *args: str) -> dict:
    assert main(["embed", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_json_holds_minilm_s_embeddings_and_their_cosines(capsys) -> None:
    found = embedded(capsys, *LINES, "--pretrained")
    assert list(found) == ["pooling", "normalized", "embeddings", "similarity"]
    assert (found["pooling"], found["normalized"]) == ("mean", True)
    embeddings, similarity = np.array(found["embeddings"]), np.array(found["similarity"])
    assert embeddings.shape == (3, 384) and similarity.shape == (3, 3)
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(bundled_model_dir()), device="cpu").encode(LINES)
    np.testing.assert_allclose(embeddings, reference, atol=1e-5, rtol=0)
    np.testing.assert_allclose(similarity, reference @ reference.T, atol=1e-5)


def test_layer_n_is_the_stream_after_block_n_pooled_the_same_way(capsys, minilm) -> None:
    batch = minilm.batch(*LINES)
    trace = minilm.model.trace(batch.input_ids, batch.attention_mask)
    depths = embeddings_by_depth(trace, batch.attention_mask, pooling_of(bundled_model_dir()))
    for layer in (0, 2, 6):
        found = embedded(capsys, *LINES, "--pretrained", "--layer", str(layer))
        np.testing.assert_allclose(found["embeddings"], depths[layer].numpy(), atol=1e-5)
    assert not torch.allclose(depths[2], depths[6], atol=1e-2)


def test_a_checkpoint_s_own_pooling_and_a_random_model_s_mean(capsys, tmp_path) -> None:
    directory = write_sentence_transformers_dir(tmp_path, "pooling_mode_cls_token", False)
    found = embedded(capsys, *LINES[:2], "--checkpoint", str(directory))
    assert (found["pooling"], found["normalized"]) == ("cls", False)
    assert np.linalg.norm(found["embeddings"][0]) != pytest.approx(1.0, abs=1e-3)
    found = embedded(capsys, "A cat.", "A dog.", "--layers", "1", "--d-model", "16", "--heads", "2")
    assert (found["pooling"], found["normalized"]) == ("mean", False)
    assert np.array(found["embeddings"]).shape == (2, 16)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["A cat.", "   ", "--pretrained"], "sentence 2 is empty"),
        (["A cat.", "--pretrained", "--layer", "7"], "--layer 7 is outside 0..6"),
        (["A cat.", "--pretrained", "--layer", "-1"], "--layer -1 is outside 0..6"),
    ],
)
def test_bad_input_exits_2_with_a_sentence(capsys, args, said) -> None:
    assert main(["embed", *args, "--json"]) == USAGE_ERROR
    captured = capsys.readouterr()
    assert captured.out == "" and said in captured.err
