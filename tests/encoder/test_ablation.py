"""Comparing a trace with one whose heads are switched off: every figure recomputed here from a
copy of the model whose W_O columns for those heads are zero, on the CPU and on a GPU."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.inspect.ablation import compare, parse_heads
from tests.encoder.helpers import DEVICES, padded_batch

HEADS = ((1, 0), (1, 2))
LENGTHS = [6, 3]


@pytest.fixture(scope="module", params=DEVICES)
def device(request) -> str:
    return request.param


@pytest.fixture(scope="module", params=[True, False], ids=["pre-norm", "post-norm"])
def traces(request, device: str):
    cfg = EncoderConfig(
        vocab_size=50, d_model=24, num_heads=3, num_layers=3, d_ff=40, norm_first=request.param
    )
    model = TransformerEncoder(cfg).eval().to(device)
    input_ids, mask = padded_batch(LENGTHS, vocab_size=50)
    real = mask.bool().numpy()
    input_ids, mask = input_ids.to(device), mask.to(device)
    base = model.trace(input_ids, mask, names=[])
    ablated = model.trace(input_ids, mask, names=[], ablate_heads=HEADS)
    zeroed = copy.deepcopy(model)  # the same model with those heads' W_O columns set to zero
    with torch.no_grad():
        for layer, head in HEADS:
            dk = cfg.head_dim
            zeroed.layers[layer].self_attn.out_proj.weight[:, head * dk : (head + 1) * dk] = 0
    # every reference below is computed on the CPU, from the traces moved there
    return base, ablated, zeroed.trace(input_ids, mask, names=[]).to("cpu"), real


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def test_residual_cosine_per_token_and_mean_match_the_zeroed_copy(traces):
    base, ablated, zeroed, real = traces
    effect = compare(base, ablated)
    assert effect.heads == HEADS and effect.first_layer == 1
    for depth, (with_heads, without) in enumerate(
        zip(base.hidden_states, zeroed.hidden_states, strict=True)
    ):
        expected = cosine(with_heads.cpu().numpy(), without.numpy())  # [B, T]
        got = effect.residual_cosine[depth]
        np.testing.assert_allclose(got[real], expected[real], atol=1e-6)
        assert np.isnan(got[~real]).all()
        for s in range(len(LENGTHS)):
            mean = expected[s, : LENGTHS[s]].mean()
            assert effect.mean_residual_cosine[depth, s] == pytest.approx(mean, abs=1e-6)
    # blocks 0 and 1's input are untouched; after block 1 the stream has moved
    np.testing.assert_allclose(effect.mean_residual_cosine[:2], 1.0, atol=1e-12)
    assert (effect.mean_residual_cosine[2:] < 0.9999).all()


def test_output_change_and_sentence_embedding_cosine_match_the_zeroed_copy(traces):
    base, ablated, zeroed, real = traces
    effect = compare(base, ablated)
    out, out_off = base.output.cpu().double().numpy(), zeroed.output.double().numpy()  # [B, T, d]
    change = np.linalg.norm(out_off - out, axis=-1) / np.linalg.norm(out, axis=-1)
    np.testing.assert_allclose(effect.output_change[real], change[real], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(effect.output_cosine[real], cosine(out, out_off)[real], atol=1e-6)
    for s, n in enumerate(LENGTHS):
        pooled, pooled_off = out[s, :n].mean(0), out_off[s, :n].mean(0)
        assert effect.sentence_cosine[s] == pytest.approx(cosine(pooled, pooled_off), abs=1e-6)


def test_attention_difference_is_zero_up_to_the_ablated_layer_and_then_moves(traces):
    base, ablated, zeroed, real = traces
    effect = compare(base, ablated)
    expected = (zeroed.attention - base.attention.cpu()).double().numpy()  # [L, B, H, T, T]
    np.testing.assert_allclose(effect.attention_difference, expected, atol=1e-6)
    assert not effect.attention_difference[:2].any()  # layers 0 and 1 see the same input
    assert np.abs(effect.attention_difference[2]).max() > 1e-4

    changes = effect.head_changes(0, LENGTHS[0])
    assert changes["layer"].tolist() == [2, 2, 2]  # only the layers after layer 1
    top = changes.iloc[0]
    diff = expected[2, 0, int(top["head"]), : LENGTHS[0], : LENGTHS[0]]
    assert top["moved"] == pytest.approx(0.5 * np.abs(diff).sum(-1).mean(), abs=1e-6)
    assert top["largest"] == pytest.approx(np.abs(diff).max(), abs=1e-6)
    assert changes["moved"].is_monotonic_decreasing


def test_compare_refuses_traces_it_cannot_compare(traces):
    base, ablated, _, _ = traces
    with pytest.raises(ValueError, match="switches no head off"):
        compare(base, base)
    with pytest.raises(ValueError, match="already switches heads off"):
        compare(ablated, ablated)
    model = TransformerEncoder(EncoderConfig(vocab_size=50, d_model=24, num_heads=3, num_layers=3))
    other_ids, other_mask = padded_batch([5, 5], vocab_size=50, seed=1)
    other = model.eval().trace(other_ids, other_mask, ablate_heads=HEADS)
    with pytest.raises(ValueError, match="different inputs"):
        compare(base, other)


def test_head_lists_parse_and_bad_items_are_named():
    assert parse_heads("0.2, 1.8,0.2,", 2, 12) == (((0, 2), (1, 8)), [])
    assert parse_heads("", 2, 12) == ((), [])
    heads, problems = parse_heads("1.1,x,9.9,1.2.3,-1.0,0.12", 2, 12)
    assert heads == ((1, 1),)
    assert problems == [
        "'x' is not written layer.head (e.g. 0.2)",
        "'9.9' is not a head of this model (layers 0..1, heads 0..11)",
        "'1.2.3' is not written layer.head (e.g. 0.2)",
        "'-1.0' is not written layer.head (e.g. 0.2)",
        "'0.12' is not a head of this model (layers 0..1, heads 0..11)",
    ]
