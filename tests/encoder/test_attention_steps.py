"""One query's attention steps: every number against one the test computes from the weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder, hooks
from encoder.inspect.attention_steps import (
    TABLE_COLUMNS,
    attention_steps,
    head_weights,
    names_for_steps,
    step_table,
)
from tests.encoder.helpers import padded_batch, randomise_norms

TOLERANCE = dict(rtol=1e-5, atol=1e-5)
LAYER, HEAD = 1, 2
LENGTHS = [7, 4]  # sentence 1 is padded with 3 positions


def config(norm_first: bool) -> EncoderConfig:
    return EncoderConfig(
        vocab_size=50, d_model=24, num_heads=3, num_layers=3, d_ff=40, norm_first=norm_first
    )


def model_for(norm_first: bool) -> TransformerEncoder:
    model = TransformerEncoder(config(norm_first)).eval()
    randomise_norms(model)
    with torch.no_grad():  # non-zero biases, so that a forgotten bias changes the numbers
        generator = torch.Generator().manual_seed(5)
        for block in model.layers:
            attention = block.self_attn
            attention.in_proj_bias.copy_(
                0.2 * torch.randn(attention.in_proj_bias.shape, generator=generator)
            )
            attention.out_proj.bias.copy_(
                0.2 * torch.randn(attention.out_proj.bias.shape, generator=generator)
            )
    return model


def layer_norm(x: torch.Tensor, norm: torch.nn.Module, eps: float) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    std = ((x - mean) ** 2).mean(dim=-1, keepdim=True).add(eps).sqrt()
    return (x - mean) / std * norm.weight + norm.bias


def by_hand(model: TransformerEncoder, x: torch.Tensor, real: torch.Tensor, query: int) -> dict:
    """The attention half of block LAYER for one query, from the weights alone.

    x: [T, d] the block's input for one sentence; real: [T] True for real tokens."""
    cfg, block = model.cfg, model.layers[LAYER]
    d, dk, H = cfg.d_model, cfg.head_dim, cfg.num_heads
    W, b = block.self_attn.in_proj_weight, block.self_attn.in_proj_bias  # [3d, d], [3d]
    read = layer_norm(x, block.norm1, cfg.layer_norm_eps) if cfg.norm_first else x  # [T, d]
    zs, found = [], {}
    for h in range(H):
        rows = [slice(p * d + h * dk, p * d + (h + 1) * dk) for p in range(3)]
        q = read[query] @ W[rows[0]].T + b[rows[0]]  # [dk]
        k = read @ W[rows[1]].T + b[rows[1]]  # [T, dk]
        v = read @ W[rows[2]].T + b[rows[2]]  # [T, dk]
        q_dot_k = k @ q  # [T]
        scaled = q_dot_k / math.sqrt(dk)
        masked = scaled.masked_fill(~real, -math.inf)
        weight = torch.softmax(masked, dim=-1)
        z = weight @ v  # [dk]
        zs.append(z)
        if h == HEAD:
            unscaled = torch.softmax(q_dot_k.masked_fill(~real, -math.inf), dim=-1)
            found |= dict(
                normalised=read[query],
                q=q,
                keys=k,
                values=v,
                q_dot_k=q_dot_k,
                scaled=scaled,
                masked=masked,
                weight=weight,
                contribution_norm=(weight[:, None] * v).norm(dim=-1),
                unscaled=unscaled,
                z=z,
                head_share=block.self_attn.out_proj.weight[:, h * dk : (h + 1) * dk] @ z,
            )
    attention_out = (
        torch.cat(zs) @ block.self_attn.out_proj.weight.T + block.self_attn.out_proj.bias
    )
    residual_sum = x[query] + attention_out
    block_mid = (
        residual_sum
        if cfg.norm_first
        else layer_norm(residual_sum, block.norm1, cfg.layer_norm_eps)
    )
    return found | dict(
        all_z=torch.stack(zs),
        attention_out=attention_out,
        residual_sum=residual_sum,
        block_mid=block_mid,
    )


def entropy(p: torch.Tensor) -> float:
    p = p[p > 0].double()
    return float(-(p * p.log()).sum())


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
@pytest.mark.parametrize("query", [0, 2])
def test_every_step_equals_the_computation_by_hand_with_padding(norm_first, query):
    model = model_for(norm_first)
    input_ids, mask = padded_batch(LENGTHS, vocab_size=50)
    trace = model.trace(input_ids, mask, names=names_for_steps(model.cfg, LAYER))
    sentence, T = 1, input_ids.shape[1]
    tokens = [f"t{j}" for j in range(T)]
    steps = attention_steps(
        model.cfg, model.state_dict(), trace, sentence, LAYER, HEAD, query, tokens
    )
    with torch.no_grad():
        x = trace.hidden_states[LAYER][sentence]  # [T, d] the block input
        expected = by_hand(model, x, mask[sentence].bool(), query)

    table = steps.table
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert table["key"].tolist() == tokens
    assert table["padding"].tolist() == [False] * 4 + [True] * 3
    for column in ("q_dot_k", "scaled", "weight", "contribution_norm"):
        np.testing.assert_allclose(table[column], expected[column].numpy(), **TOLERANCE)
    masked = table["masked"].to_numpy()
    assert np.all(np.isneginf(masked[4:]))
    np.testing.assert_allclose(masked[:4], expected["masked"][:4].numpy(), **TOLERANCE)
    assert (table["weight"][4:] == 0).all()

    if norm_first:
        np.testing.assert_allclose(steps.normalised, expected["normalised"], **TOLERANCE)
    else:
        assert steps.normalised is None  # post-norm attention reads the block input itself
    np.testing.assert_array_equal(steps.block_input, x[query].numpy())
    for name in ("q", "keys", "values", "z", "all_z", "head_share", "attention_out"):
        np.testing.assert_allclose(getattr(steps, name), expected[name].numpy(), **TOLERANCE)
    for name in ("residual_sum", "block_mid"):
        np.testing.assert_allclose(getattr(steps, name), expected[name].numpy(), **TOLERANCE)
    np.testing.assert_allclose(steps.unscaled_weight, expected["unscaled"].numpy(), **TOLERANCE)
    assert steps.entropy == pytest.approx(entropy(expected["weight"]), abs=1e-5)
    assert steps.unscaled_entropy == pytest.approx(entropy(expected["unscaled"]), abs=1e-5)
    np.testing.assert_allclose(
        steps.weighted_values.sum(axis=0), expected["z"].numpy(), **TOLERANCE
    )


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-norm", "post-norm"])
def test_scores_and_weights_are_the_models_own_tensors(norm_first):
    model = model_for(norm_first)
    input_ids, mask = padded_batch(LENGTHS, vocab_size=50)
    trace = model.trace(input_ids, mask)
    table = step_table(trace, 1, LAYER, HEAD, 3, ["w"] * input_ids.shape[1])
    a = hooks.block(LAYER).attn
    scores = trace[a.scores][1, HEAD, 3].double().numpy()
    np.testing.assert_array_equal(table["masked"], scores)  # -inf where padded
    np.testing.assert_array_equal(table["scaled"][:4], scores[:4])
    # the weight column is exactly the head's attention row for this query
    np.testing.assert_array_equal(table["weight"], trace.attention[LAYER, 1, HEAD, 3].double())
    steps = attention_steps(model.cfg, model.state_dict(), trace, 1, LAYER, HEAD, 3, ["w"] * 7)
    np.testing.assert_array_equal(steps.z, trace[a.z][1, HEAD, 3].numpy())
    np.testing.assert_array_equal(steps.attention_out, trace[a.out][1, 3].numpy())


def test_the_view_keeps_only_its_layers_hooks_and_they_suffice():
    model = model_for(True)
    input_ids, mask = padded_batch(LENGTHS, vocab_size=50)
    names = names_for_steps(model.cfg, LAYER)
    block = hooks.block(LAYER)
    assert set(names) == {
        *block.ln1.names,
        block.attn.q,
        block.attn.k,
        block.attn.v,
        block.attn.scores,
        block.attn.pattern,
        block.attn.z,
        block.attn.out,
        block.resid_mid,
    }
    kept = model.trace(input_ids, mask, names=names)
    full = model.trace(input_ids, mask)
    assert set(kept.tensors) == set(names)
    tokens = ["w"] * 7
    a = attention_steps(model.cfg, model.state_dict(), kept, 0, LAYER, HEAD, 5, tokens)
    b = attention_steps(model.cfg, model.state_dict(), full, 0, LAYER, HEAD, 5, tokens)
    np.testing.assert_array_equal(a.attention_out, b.attention_out)
    assert a.table.equals(b.table)
    other_layer = model.trace(input_ids, mask, names=names_for_steps(model.cfg, 0))
    with pytest.raises(KeyError, match="was not kept"):
        attention_steps(model.cfg, model.state_dict(), other_layer, 0, LAYER, HEAD, 5, tokens)


def test_head_weights_are_the_heads_slices():
    model = model_for(False)
    cfg = model.cfg
    weights = head_weights(model.cfg, model.state_dict(), 2, 1)
    attention = model.layers[2].self_attn
    d, dk = cfg.d_model, cfg.head_dim
    x = torch.randn(d)
    full_q = attention.in_proj_weight[:d] @ x + attention.in_proj_bias[:d]  # every head's q
    with torch.no_grad():
        np.testing.assert_allclose(weights.w_q @ x + weights.b_q, full_q[dk : 2 * dk], **TOLERANCE)
    assert torch.equal(weights.w_o_head, attention.out_proj.weight[:, dk : 2 * dk])


@pytest.mark.parametrize(
    ("where", "message"),
    [
        (dict(layer=3), "layer 3 does not exist"),
        (dict(head=3), "head 3 does not exist"),
        (dict(query=7), "query position 7 does not exist"),
        (dict(sentence=2), "sentence 2 does not exist"),
    ],
)
def test_positions_outside_the_run_are_a_clear_error(where, message):
    model = model_for(True)
    input_ids, mask = padded_batch(LENGTHS, vocab_size=50)
    trace = model.trace(input_ids, mask)
    args = dict(sentence=0, layer=1, head=0, query=0) | where
    with pytest.raises(ValueError, match=message):
        attention_steps(model.cfg, model.state_dict(), trace, tokens=["w"] * 7, **args)


def test_rope_turns_and_the_windows_masked_keys_are_read_from_the_run() -> None:
    cfg = EncoderConfig(vocab_size=50, d_model=24, num_heads=3, num_layers=3, d_ff=40,
                        positional="rope", attention_window=4, global_every=2)  # fmt: skip
    model = TransformerEncoder(cfg).eval()
    input_ids, mask = padded_batch(LENGTHS, vocab_size=50)
    layer, query, T = 1, 5, input_ids.shape[1]  # layer 1 is local (global_every=2)
    trace = model.trace(input_ids, mask, names=names_for_steps(cfg, layer))
    steps = attention_steps(cfg, model.state_dict(), trace, 0, layer, HEAD, query, ["w"] * T)
    # RoPE as a complex rotation, written here: pair (j, j + dk/2) times e^(i * query * theta_j)
    dk = cfg.head_dim
    q = torch.from_numpy(steps.q).double()  # [dk]
    q = torch.complex(q[: dk // 2], q[dk // 2 :])  # [dk / 2]
    theta = 10000.0 ** (-2 * torch.arange(dk // 2, dtype=torch.float64) / dk)
    turned = q * torch.polar(torch.ones_like(theta), query * theta)
    np.testing.assert_allclose(steps.rotated_q[: dk // 2], turned.real, atol=1e-5)
    np.testing.assert_allclose(steps.rotated_q[dk // 2 :], turned.imag, atol=1e-5)
    np.testing.assert_allclose(steps.rope_angles, query * theta.numpy())
    wrapped = np.angle(np.exp(1j * query * theta.numpy()))
    np.testing.assert_allclose(np.angle(np.exp(1j * (steps.q_turned - wrapped))), 0, atol=1e-4)
    # the window: an explicit mask over the 7 real tokens of sentence 0
    n = LENGTHS[0]
    distance = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :])
    expected = (distance > 2) & (np.arange(T) < n)[:, None] & (np.arange(T) < n)[None, :]
    np.testing.assert_array_equal(steps.outside_window, expected)
    np.testing.assert_array_equal(steps.table["outside_window"], expected[query])
    assert (steps.window, steps.local_layers) == (4, (1,))
    assert steps.unscaled_weight[expected[query]].sum() == 0  # the window masks it too
    global_steps = attention_steps(cfg, model.state_dict(), model.trace(input_ids, mask), 0, 0,
                                   HEAD, query, ["w"] * T)  # fmt: skip
    assert global_steps.window == 0 and not global_steps.outside_window.any()
