"""encoder.notebook's similarity and fill: the figures' widgets hold the model's own numbers
(MiniLM's sentence embeddings pooled and compared here, independently; a tiny BERT's masked words
as transformers predicts them), open where asked, say why a model without a head predicts no
words, and save as an offline file."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from encoder.io.checkpoints import load_checkpoint
from encoder.io.tokenize import tokenize
from encoder.notebook import LensGrid, SimilarityMatrix, fill, similarity
from encoder.web import DIGITS
from tests.encoder.family_checkpoints import MASKED_LM, build_checkpoint
from tests.encoder.head_checkpoints import reference_masked_lm

SENTENCES = ["A cat sat on the mat.", "A kitten rested on the rug.", "Stock markets fell."]
ROUNDING = 0.5 * 10**-DIGITS + 1e-6  # the payload's rounding, and float32's


def test_similarity_holds_minilms_cosines_at_every_depth():
    widget = similarity(SENTENCES, depth=2)
    assert isinstance(widget, SimilarityMatrix)
    data = widget.data
    checkpoint = load_checkpoint()  # the bundled MiniLM
    model = checkpoint.encoder
    batch = tokenize(SENTENCES, checkpoint.tokenizer, model.cfg.max_len)
    with torch.no_grad():
        trace = model.trace(batch.input_ids, batch.attention_mask, names=())
    mask = batch.attention_mask[..., None].double()
    depths = [*trace.hidden_states[:-1], trace.output]  # MiniLM: post-norm, no final norm
    expected = []
    for states in depths:  # mean over real tokens, normalised (its sentence-transformers config)
        pooled = (states.double() * mask).sum(1) / mask.sum(1)
        unit = pooled / pooled.norm(dim=-1, keepdim=True)
        expected.append((unit @ unit.T).numpy())
    np.testing.assert_allclose(data["values"], np.stack(expected), atol=ROUNDING)
    assert data["labels"] == SENTENCES and data["depth"] == 2
    assert data["depths"] == ["embeddings", *(f"after block {b}" for b in range(5)), "output"]
    assert data["notes"] == [
        "mean over real tokens, then normalised, as the model's sentence-transformers config says"
    ]
    assert [pair[:2] for pair in data["alike"]] == [[0, 1], [0, 2], [1, 2]]


def test_fill_holds_a_bert_checkpoints_words_and_their_lens(tmp_path):
    directory = build_checkpoint("bert", tmp_path, model_class=MASKED_LM["bert"])
    text = "The cat sat on the [MASK] in the sentence."
    widget = fill(text, checkpoint=directory, top=5)
    assert isinstance(widget, LensGrid)
    data = widget.data
    checkpoint = load_checkpoint(directory)
    encoding = checkpoint.tokenizer.encode(text)
    position = encoding.tokens.index("[MASK]")
    assert data["masks"] == [position] and data["tokens"] == encoding.tokens
    with torch.no_grad():
        logits = reference_masked_lm(directory, "bert")(input_ids=torch.tensor([encoding.ids]))
    values, ids = logits.logits[0, position].softmax(-1).topk(5)
    last = data["top_tokens"][-1][0]
    named = [checkpoint.tokenizer.id_to_token(i) for i in ids.tolist()]
    # a word the tiny tokenizer does not name (its head is wider than its vocabulary): "#id"
    assert last == [f"#{i}" if t is None else t for t, i in zip(named, ids.tolist(), strict=True)]
    np.testing.assert_allclose(data["top_p"][-1][0], values.numpy(), atol=ROUNDING)
    assert data["final"][-1][0] == pytest.approx(float(values[0]), abs=ROUNDING)
    assert len(data["layers"]) == checkpoint.encoder.cfg.num_layers
    saved = widget.save_html(tmp_path / "lens.html").read_text(encoding="utf-8")
    assert 'data-module="lens_grid.js"' in saved


def test_fill_says_why_minilm_predicts_no_words():
    with pytest.raises(ValueError, match="no masked-LM head"):
        fill("Paris is the [MASK] of France.")
