"""Norm-weighted attention (what a head moves) and rollout, against references written here."""

from __future__ import annotations

import pytest
import torch

from encoder.core import hooks
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.moves import (
    NORM_WEIGHTED,
    WEIGHT,
    norm_weighted_attention,
    readings_sentence,
    share_summary,
    sink_shares,
)
from encoder.inspect.rollout import rollout, rollout_sentence, trace_rollout
from encoder.io.checkpoints import bundled_model_dir
from encoder.io.tokenize import tokenize
from tests.encoder.helpers import padded_batch

SENTENCES = ["The cat sat on the mat, and then it slept.", "Heads move values.", ""]


def attention_input(model: TransformerEncoder, trace, layer: int) -> torch.Tensor:
    """What block `layer`'s attention reads: its norm's output (pre-norm) or the stream."""
    if model.cfg.norm_first:
        return trace[hooks.block(layer).ln1.out]
    return trace.hidden_states[layer]


def reference_norm_weighted(model: TransformerEncoder, trace) -> torch.Tensor:
    """alpha_ij * ||(x_j W_V^h + b_V^h) W_O^h||, one head and key at a time, in float64."""
    d, H, dk = model.cfg.d_model, model.cfg.num_heads, model.cfg.head_dim
    out = torch.zeros(trace.attention.shape, dtype=torch.float64)
    for layer, block in enumerate(model.layers):
        x = attention_input(model, trace, layer).double()  # [B, T, d]
        w_v = block.self_attn.in_proj_weight[2 * d :].detach().double()
        b_v = block.self_attn.in_proj_bias[2 * d :].detach().double()
        w_o = block.self_attn.out_proj.weight.detach().double()
        for head in range(H):
            cols = slice(head * dk, (head + 1) * dk)
            value = x @ w_v[cols].T + b_v[cols]  # [B, T, dk]
            moved = value @ w_o[:, cols].T  # [B, T, d]
            alpha = trace.attention[layer, :, head].double()  # [B, q, k]
            out[layer, :, head] = alpha * moved.norm(dim=-1)[:, None, :]
    return out


@pytest.mark.parametrize("norm_first", [True, False])
def test_norm_weighted_matches_the_weights_computed_by_hand(norm_first):
    cfg = EncoderConfig(
        vocab_size=100, d_model=16, num_heads=4, num_layers=2, d_ff=32, norm_first=norm_first
    )
    model = TransformerEncoder(cfg).eval()
    with torch.no_grad():  # non-zero biases, so the value bias is really counted
        for block in model.layers:
            block.self_attn.in_proj_bias.normal_()
    input_ids, mask = padded_batch([7, 4], vocab_size=50)
    ln_outs = [hooks.block(i).ln1.out for i in range(cfg.num_layers)]
    trace = model.trace(input_ids, mask, names=ln_outs)
    ours = norm_weighted_attention(trace, model)
    assert ours.shape == trace.attention.shape
    torch.testing.assert_close(
        ours.double(), reference_norm_weighted(model, trace), atol=1e-5, rtol=1e-5
    )
    assert (ours[:, 1, :, :, 4:] == 0).all()  # padded keys move nothing


def test_an_ablated_head_moves_nothing():
    cfg = EncoderConfig(vocab_size=100, d_model=16, num_heads=4, num_layers=2, d_ff=32)
    model = TransformerEncoder(cfg).eval()
    input_ids, mask = padded_batch([5])
    trace = model.trace(input_ids, mask, names=[], ablate_heads=[(1, 2)])
    moved = norm_weighted_attention(trace, model)
    assert (moved[1, :, 2] == 0).all() and (moved[1, :, 1] > 0).any()


@pytest.fixture(scope="module")
def minilm_and_bert(minilm):
    model, tokenizer = minilm
    batch = tokenize(SENTENCES, tokenizer, max_len=64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        from transformers import BertModel

        bert = BertModel.from_pretrained(bundled_model_dir(), attn_implementation="eager").eval()
    return model, batch, bert


def test_norm_weighted_matches_transformers_bert_for_minilm(minilm_and_bert):
    model, batch, bert = minilm_and_bert
    with torch.no_grad():
        theirs = bert(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            output_hidden_states=True,
            output_attentions=True,
        )
        H, dk = bert.config.num_attention_heads, 384 // bert.config.num_attention_heads
        expected = []
        for layer, bert_layer in enumerate(bert.encoder.layer):
            value = bert_layer.attention.self.value(theirs.hidden_states[layer])  # [B, T, d]
            value = value.view(*value.shape[:2], H, dk)  # [B, T, H, dk]
            w_o = bert_layer.attention.output.dense.weight.view(-1, H, dk)  # [d, H, dk]
            moved = torch.einsum("bthk,dhk->bhtd", value, w_o).norm(dim=-1)  # [B, H, T]
            expected.append(theirs.attentions[layer] * moved[:, :, None, :])
    trace = model.trace(batch.input_ids, batch.attention_mask, names=[])
    real = batch.attention_mask.bool()[None, :, None, :, None]  # padded query rows differ
    ours = norm_weighted_attention(trace, model) * real
    torch.testing.assert_close(ours, torch.stack(expected) * real, atol=1e-4, rtol=0)


def test_minilm_moves_less_to_cls_sep_and_punctuation_than_it_looks(minilm_and_bert):
    model, batch, _ = minilm_and_bert
    trace = model.trace(batch.input_ids, batch.attention_mask, names=[])
    shares = sink_shares(trace, model, batch.tokens)
    assert len(shares) == 2 * 6 * 12 and set(shares["reading"]) == {WEIGHT, NORM_WEIGHTED}
    # the [CLS] share of the raw weights, counted here from the attention itself
    real = batch.attention_mask.bool()
    expected = trace.attention[2, :, 5, :, 0][real].mean()  # layer 2, head 5, key 0 = [CLS]
    row = shares[(shares["reading"] == WEIGHT) & (shares["layer"] == 2) & (shares["head"] == 5)]
    assert float(row["[CLS]"].iloc[0]) == pytest.approx(float(expected), abs=1e-6)
    summary = share_summary(shares)
    overall = summary[summary["layer"] == "all"].set_index("reading")["sinks"]
    assert overall[NORM_WEIGHTED] < 0.75 * overall[WEIGHT]
    sentence = readings_sentence(summary)
    assert f"{overall[WEIGHT]:.0%}" in sentence and f"{overall[NORM_WEIGHTED]:.0%}" in sentence


def reference_rollout(attention: torch.Tensor, n: int) -> list[torch.Tensor]:
    """Abnar & Zuidema's formula on one sentence's n real tokens, in float64: [L] of [n, n]."""
    found, current = [], torch.eye(n, dtype=torch.float64)
    for layer in attention:  # [H, T, T]
        mean = layer[:, :n, :n].double().mean(dim=0)
        mixed = 0.5 * mean + 0.5 * torch.eye(n, dtype=torch.float64)
        mixed = mixed / mixed.sum(dim=1, keepdim=True)
        current = mixed @ current
        found.append(current)
    return found


def test_rollout_matches_the_formula_on_each_sentence_alone():
    cfg = EncoderConfig(vocab_size=100, d_model=16, num_heads=4, num_layers=3, d_ff=32)
    model = TransformerEncoder(cfg).eval()
    lengths = [6, 3]
    input_ids, mask = padded_batch(lengths)
    trace = model.trace(input_ids, mask, names=[])
    rolled = trace_rollout(trace)
    assert rolled.shape == (3, 2, 6, 6)
    for b, n in enumerate(lengths):
        expected = reference_rollout(trace.attention[:, b], n)
        for layer in range(3):
            torch.testing.assert_close(rolled[layer, b, :n, :n].double(), expected[layer])
        assert (rolled[:, b, n:] == 0).all() and (rolled[:, b, :, n:] == 0).all()
    torch.testing.assert_close(rolled[:, 0].sum(dim=-1), torch.ones(3, 6))  # rows are shares


def test_rollout_of_heads_that_only_look_at_themselves_is_the_identity():
    attention = torch.eye(4).expand(2, 1, 3, 4, 4)  # [L, B, H, T, T]
    torch.testing.assert_close(
        rollout(attention, torch.ones(1, 4)), torch.eye(4).expand(2, 1, 4, 4)
    )


def test_rollout_sentence_names_the_largest_sources():
    matrix = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.0, 0.0, 1.0]])
    sentence = rollout_sentence(matrix, ["[CLS]", "dog", "[SEP]"], query=1)
    assert sentence.startswith(
        "After the last layer, “dog” (position 1) draws most on “[SEP]” (60%)"
    )
    assert "30% of it is still its own input token" in sentence
