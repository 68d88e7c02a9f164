"""Each prediction's true value is the run's own number, computed here from the trace's tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder, hooks
from encoder.inspect import ablation, activations, predictions
from tests.encoder.helpers import padded_batch

LENGTHS = [9, 6]  # sentence 1 is padded: its last 3 positions must never count
TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "it", "[SEP]"]


def run(activation: str = "relu", norm_first: bool = True):
    cfg = EncoderConfig(
        vocab_size=100, d_model=32, num_heads=4, num_layers=3, d_ff=64,
        activation=activation, norm_first=norm_first, max_len=16,
    )  # fmt: skip
    model = TransformerEncoder(cfg).eval()
    ids, mask = padded_batch(LENGTHS)
    return model, ids, mask, model.trace(ids, mask, names=activations.hook_names(cfg))


@pytest.mark.parametrize("layer, head, query", [(0, 0, 7), (2, 3, 1)])
def test_top_key_is_the_heads_largest_weight_from_the_query(layer, head, query):
    _, _, _, trace = run()
    attention = trace.attention[:, 0, :, :9, :9].numpy()  # [L, H, n, n]
    row = trace.attention[layer, 0, head, query, :9]
    best = int(row.argmax())
    asked = predictions.top_key(attention, TOKENS, query, layer, head)
    assert asked.truth == f"{best}: {TOKENS[best]}" == asked.options[best]
    assert asked.value == pytest.approx(float(row[best]))
    wrong = next(i for i in range(9) if i != best)
    assert asked.explain(asked.truth).startswith("Right:")
    said = asked.explain(asked.options[wrong])
    assert f"{float(row[best]):.2f}" in said and f"{float(row[wrong]):.2f}" in said
    assert asked.explain(None).startswith("You skipped:")


def test_strongest_head_is_the_one_whose_ablation_moves_the_output_most():
    model, ids, mask, trace = run()
    n = LENGTHS[1]
    changes = {}
    for layer in range(3):
        for head in range(4):
            out = model.trace(ids, mask, ablate_heads=[(layer, head)]).output[1, :n].double()
            base = trace.output[1, :n].double()
            change = (out - base).norm(dim=-1) / base.norm(dim=-1)  # [n]
            changes[f"layer {layer}, head {head}"] = change.mean().item()
    effects = ablation.head_effects(
        trace, lambda head: model.trace(ids, mask, names=(), ablate_heads=[head]), sentence=1
    )
    assert len(effects) == 12
    for row in effects.itertuples():
        assert row.change == pytest.approx(changes[f"layer {row.layer}, head {row.head}"], rel=1e-6)
    asked = predictions.strongest_head(effects)
    assert asked.truth == max(changes, key=changes.get)
    assert asked.options[:5] == tuple(
        f"layer {layer}, head {head}" for layer, head in ((0, 0), (0, 1), (0, 2), (0, 3), (1, 0))
    )
    weakest = min(changes, key=changes.get)
    assert f"{changes[weakest]:.1%}" in asked.explain(weakest)
    assert asked.explain("9.9").startswith("You skipped:")


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_zero_share_counts_the_exact_zeros_after_the_activation(activation):
    _, _, _, trace = run(activation)
    post = trace[hooks.block(1).mlp.post][1, :6]  # [n, F] block 1: the model's own values
    share = (post == 0).double().mean().item()
    asked = predictions.zero_share(trace, 1, 1, activation)
    assert asked.value == pytest.approx(share)
    assert asked.truth == format(share, predictions.share_spec(share)).rstrip("%")
    if activation == "relu":
        assert 0.2 < share < 0.8  # about half: every negative input
    else:
        assert share == 0.0
    said = asked.explain("90")
    assert f"{share:.1%}" in said and f"{post.numel():,}" in said and "in block 1" in said
    assert "points too high" in said
    assert not asked.explain("lots").startswith("You")  # a part's numbers alone


@pytest.mark.parametrize("norm_first", [True, False])
def test_norm_growth_reads_the_streams_mean_norm_at_the_first_and_last_depth(norm_first):
    _, _, _, trace = run(norm_first=norm_first)
    norms = [h[0, :9].double().norm(dim=-1).mean().item() for h in trace.hidden_states]
    ratio = norms[-1] / norms[0]
    asked = predictions.norm_growth(trace, 0, norm_first)
    assert asked.value == pytest.approx(ratio, rel=1e-5)
    expected = "grows" if ratio > 1.25 else "shrinks" if ratio < 0.8 else "stays about the same"
    assert asked.truth == expected
    assert f"{norms[0]:.2f}" in asked.explain(asked.truth) and f"x{ratio:.2f}" in asked.explain("")
    assert f"{norms[-1]:.2f} after block 2 " in asked.explain("")  # 3 blocks, from 0
    other = next(c for c in asked.options if c != asked.truth)
    assert asked.explain(other).startswith(f"Not quite: you said it {other}")


def test_post_norm_streams_stay_at_the_norms_size_and_pre_norm_ones_grow():
    """The lesson's point, on this model: post-norm keeps the stream at LayerNorm's size."""
    post_trace = run(norm_first=False)[3]
    post = predictions.norm_growth(post_trace, 0, False)
    last = post_trace.hidden_states[-1][0, :9].double().norm(dim=-1)
    assert last.numpy() == pytest.approx(np.full(9, 32**0.5), rel=1e-3)  # unit gain, zero bias
    pre = predictions.norm_growth(run(norm_first=True)[3], 0, True)
    assert pre.value > post.value


def test_gelu_is_zero_in_float32_only_at_0_and_from_the_input_the_sentence_names():
    start = predictions.gelu_zero_from()
    assert -6 < start < -5  # about -5.52 for the exact erf form
    x = torch.arange(start + 1e-4, 0, 1e-4, dtype=torch.float64).float()  # [n] every input above
    assert (torch.nn.functional.gelu(x) != 0).all()
    assert torch.nn.functional.gelu(torch.tensor([start, 0.0, -20.0])).tolist() == [0, 0, 0]
    assert 0.5 * start * (1 + math.erf(start / math.sqrt(2))) != 0  # float64 keeps it
    said = predictions.zero_share(run("gelu")[3], 1, 0, "gelu").explain("1")
    assert f"at inputs of {start:.2f} or below, where float32 rounds" in said


def test_zero_shares_asks_relu_and_gelu_at_once_of_the_same_values():
    trace = run("gelu")[3]
    pre = trace[hooks.block(2).mlp.pre][1, :6]  # [n, F] block 2, the real tokens
    shares = {
        "relu": (torch.relu(pre) == 0).double().mean().item(),
        "gelu": (torch.nn.functional.gelu(pre) == 0).double().mean().item(),
    }
    assert shares["gelu"] == (trace[hooks.block(2).mlp.post][1, :6] == 0).double().mean().item()
    asked = predictions.zero_shares(trace, 1, 2)
    assert asked.parts == ("after ReLU", "after GELU") and asked.kind == "number"
    spec = predictions.share_spec
    assert asked.truth == " / ".join(
        format(shares[name], spec(shares[name])).rstrip("%") for name in ("relu", "gelu")
    )
    said = asked.explain("50 / 30")
    assert f"{shares['relu']:.1%}" in said and "30 points too high" in said
    assert predictions.split_guess("50 / 30", 2) == ["50", "30"]
    assert predictions.split_guess("50", 2) == ["50", ""]
    assert asked.explain("50").count("You skipped") == 1  # the GELU part was left blank
    assert asked.explain("").count("You skipped") == 1  # both: said once
