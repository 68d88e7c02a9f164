"""The neuron view's cell: q and k computed here from the weights, their product's sum, the
scale and the score against the trace's hook_scores, the weight against hook_pattern and the
explorer's payload; with RoPE, q and k turned here by their positions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.inspect.neuron import names_for_neuron, neuron_cell, qk_vectors
from encoder.web.payload import build_setup, encode, full_weights
from tests.encoder.helpers import padded_batch

TEXT = "The cat sat on the mat because it was tired."


def projected(model, x: torch.Tensor, layer: int, head: int) -> tuple[torch.Tensor, ...]:
    """[T, dk] q and k of `head` from what attention reads (x: [T, d]), by the weights alone."""
    attention = model.layers[layer].self_attn
    d, dk = model.cfg.d_model, model.cfg.head_dim
    rows = slice(head * dk, (head + 1) * dk)
    W, b = attention.in_proj_weight.detach().double(), attention.in_proj_bias.detach().double()
    q = x @ W[:d][rows].T + b[:d][rows]
    k = x @ W[d : 2 * d][rows].T + b[d : 2 * d][rows]
    return q, k


def turned(x: torch.Tensor, base: float) -> torch.Tensor:
    """[T, dk] RoPE written here: pair (j, j + dk/2) of position t times e^(i t base^(-2j/dk))."""
    T, dk = x.shape
    theta = base ** (-2 * torch.arange(dk // 2, dtype=torch.float64) / dk)
    z = torch.complex(x[:, : dk // 2], x[:, dk // 2 :]) * torch.polar(
        torch.ones(T, dk // 2, dtype=torch.float64), torch.arange(T)[:, None] * theta
    )
    return torch.cat([z.real, z.imag], dim=-1)


def test_minilm_cell_is_the_scores_and_the_explorers_weight(minilm) -> None:
    trace = minilm.trace_of(TEXT)
    tokens = minilm.batch(TEXT).tokens[0]
    n, layer, head = len(tokens), 3, 5
    x = trace.hidden_states[layer][0].double()  # post-norm: attention reads the stream itself
    q, k = projected(minilm.model, x, layer, head)
    explorer = full_weights(encode([build_setup(trace.attention[:, 0], tokens)]))[layer, head]
    scores = trace.tensors[f"blocks.{layer}.attn.hook_scores"][0, head].double()
    for query, key in ((0, 0), (8, 2), (n - 1, 4)):
        cell = neuron_cell(trace, 0, layer, head, query, key)
        np.testing.assert_allclose(cell.q, q[query], atol=1e-4)
        np.testing.assert_allclose(cell.k, k[key], atol=1e-4)
        np.testing.assert_allclose(cell.product, (q[query] * k[key]).numpy(), atol=1e-4)
        assert cell.dot == pytest.approx(float(q[query] @ k[key]), abs=1e-4)
        assert cell.scale == 1 / math.sqrt(32) and not cell.rotated and cell.keys == n
        assert cell.dot * cell.scale == pytest.approx(float(scores[query, key]), abs=1e-5)
        assert cell.score == pytest.approx(float(scores[query, key]), abs=1e-6)
        softmax = torch.softmax(scores[query], -1)[key].item()
        assert cell.weight == pytest.approx(softmax, abs=1e-6)
        assert cell.weight == pytest.approx(explorer[query, key], abs=1e-5)
    said = neuron_cell(trace, 0, layer, head, 8, 2).said(tokens)
    assert said.startswith(f"“{tokens[8]}” → “{tokens[2]}”: q·k = ")
    assert f"× 1/√32 = {cell.score:.3g}" not in said  # the last cell's, not this one's
    assert said.endswith(
        f"softmax over {n} keys: {neuron_cell(trace, 0, layer, head, 8, 2).weight:.3g}."
    )


def test_rope_cells_use_the_turned_q_and_k_and_masked_keys_say_so() -> None:
    cfg = EncoderConfig(vocab_size=50, d_model=24, num_heads=3, num_layers=2, d_ff=40,
                        positional="rope", rope_base=100.0, attention_window=4,
                        global_every=2)  # fmt: skip
    model = TransformerEncoder(cfg).eval()
    input_ids, mask = padded_batch([7, 5], vocab_size=50)
    layer, head = 1, 2  # layer 1 is local: |q - k| > 2 is masked
    trace = model.trace(input_ids, mask, names=names_for_neuron(cfg, layer) + [
        f"blocks.{layer}.ln1.hook_out"])  # fmt: skip
    x = trace.tensors[f"blocks.{layer}.ln1.hook_out"][1].double()  # pre-norm: ln1 of the stream
    q, k = (turned(v, cfg.rope_base_of(layer)) for v in projected(model, x, layer, head))
    plain_q, _ = projected(model, x, layer, head)
    scores = trace.tensors[f"blocks.{layer}.attn.hook_scores"][1, head].double()
    for query, key in ((3, 1), (4, 4), (2, 0)):
        cell = neuron_cell(trace, 1, layer, head, query, key)
        assert cell.rotated and not cell.masked
        np.testing.assert_allclose(cell.q, q[query], atol=1e-5)
        np.testing.assert_allclose(cell.k, k[key], atol=1e-5)
        assert cell.dot == pytest.approx(float(q[query] @ k[key]), abs=1e-5)
        assert cell.dot * cell.scale == pytest.approx(float(scores[query, key]), abs=1e-5)
        assert cell.weight == pytest.approx(torch.softmax(scores[query], -1)[key].item(), abs=1e-6)
    assert not np.allclose(neuron_cell(trace, 1, layer, head, 3, 1).q, plain_q[3], atol=1e-3)
    masked = neuron_cell(trace, 1, layer, head, 4, 0)  # outside the window
    padding = neuron_cell(trace, 1, layer, head, 1, 6)  # a padding key of sentence 1
    assert masked.masked and masked.weight == 0 and masked.keys == 3  # keys 2, 3 and 4
    assert padding.masked and padding.weight == 0 and padding.keys == 4  # keys 0 to 3
    assert str(masked.said(["w"] * 7)).endswith("but the key is masked: weight 0.")
    vectors = qk_vectors(model.trace(input_ids, mask), 1, 5)  # [L, H, 2, n, dk]
    np.testing.assert_allclose(vectors[layer, head, 0], q[:5].numpy(), atol=1e-5)
    np.testing.assert_allclose(vectors[layer, head, 1], k[:5].numpy(), atol=1e-5)


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"layer": 9}, "layer 9 does not exist"),
        ({"head": 3}, "head 3 does not exist"),
        ({"key": 7}, "position 7 does not exist"),
    ],  # fmt: skip
)
def test_a_cell_outside_the_model_is_refused(where, message) -> None:
    cfg = EncoderConfig(vocab_size=50, d_model=24, num_heads=3, num_layers=2, d_ff=40)
    input_ids, mask = padded_batch([7], vocab_size=50)
    trace = TransformerEncoder(cfg).eval().trace(input_ids, mask)
    with pytest.raises(ValueError, match=message):
        neuron_cell(trace, **({"sentence": 0, "layer": 1, "head": 0, "query": 0, "key": 0} | where))
