"""The hook-name table, trace(names=..., ablate_heads=...), and input validation."""

from __future__ import annotations

import copy
import threading

import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder, hooks
from encoder.core import block
from encoder.core.capture import HookPoint
from tests.encoder.helpers import padded_batch

CONFIGS = {
    "pre": EncoderConfig(vocab_size=60, d_model=24, num_heads=3, num_layers=3, d_ff=40),
    "post": EncoderConfig(
        vocab_size=60, d_model=24, num_heads=3, num_layers=3, d_ff=40, norm_first=False
    ),
    "bert-like": EncoderConfig(
        vocab_size=60,
        d_model=24,
        num_heads=3,
        num_layers=2,
        d_ff=40,
        norm_first=False,
        positional="learned",
        embedding_norm=True,
        type_vocab_size=2,
    ),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_the_name_table_agrees_with_the_module_tree_and_the_real_shapes(name):
    cfg = CONFIGS[name]
    model = TransformerEncoder(cfg).eval()
    in_modules = sorted(m.name for m in model.modules() if isinstance(m, HookPoint))
    assert sorted(model.hook_names()) == in_modules
    input_ids, mask = padded_batch([5, 3], vocab_size=cfg.vocab_size)
    trace = model.trace(input_ids, mask)
    assert list(trace.tensors) == model.hook_names()  # data-flow order, every name captured
    expected = block.shapes(cfg, 2, 5)
    assert {n: tuple(t.shape) for n, t in trace.tensors.items()} == expected


def test_design_names_are_kept():
    names = hooks.block(2)
    assert names.attn.pattern == "blocks.2.attn.hook_pattern"
    assert names.ln1.std == "blocks.2.ln1.hook_std"
    assert names.mlp.post == "blocks.2.mlp.hook_post"
    assert names.resid_mid == "blocks.2.hook_resid_mid"
    assert hooks.embed().out == "embed.hook_out"
    assert hooks.final_norm(4).out == "final_norm.hook_out"
    labels = [(n.layer, n.label) for n in hooks.norms(CONFIGS["bert-like"])]
    assert labels == [(-1, "embed.ln"), (0, "ln1"), (0, "ln2"), (1, "ln1"), (1, "ln2")]


def test_names_keep_only_those_tensors_and_the_results_do_not_change():
    cfg = CONFIGS["pre"]
    model = TransformerEncoder(cfg).eval()
    input_ids, mask = padded_batch([6, 4], vocab_size=cfg.vocab_size)
    full = model.trace(input_ids, mask)
    wanted = [hooks.block(1).attn.q, hooks.block(0).mlp.post]
    some = model.trace(input_ids, mask, names=wanted)
    assert set(some.tensors) == set(wanted)
    assert torch.equal(some[wanted[0]], full[wanted[0]])
    assert torch.equal(some.output, full.output)
    assert torch.equal(some.attention, full.attention)
    assert all(
        torch.equal(a, b) for a, b in zip(some.hidden_states, full.hidden_states, strict=True)
    )
    assert some.nbytes < full.nbytes / 3

    by_predicate = model.trace(input_ids, mask, names=lambda n: n.endswith("hook_pattern"))
    assert list(by_predicate.tensors) == [b.attn.pattern for b in hooks.blocks(3)]
    nothing = model.trace(input_ids, mask, names=[])
    assert nothing.tensors == {}
    assert len(nothing.hidden_states) == 4
    with pytest.raises(KeyError, match="was not kept in this trace"):
        nothing[hooks.block(0).attn.q]


def test_an_unknown_name_is_an_error_naming_it():
    model = TransformerEncoder(CONFIGS["pre"]).eval()
    with pytest.raises(ValueError, match=r"unknown hook name\(s\) 'blocks.9.attn.hook_q'"):
        model.trace(torch.ones(1, 3, dtype=torch.long), names=["blocks.9.attn.hook_q"])


def zero_out_projection_columns(model: TransformerEncoder, pairs) -> TransformerEncoder:
    """A copy whose W_O input columns for each (layer, head) are zero: that head contributes 0."""
    ablated = copy.deepcopy(model)
    dk = model.cfg.head_dim
    with torch.no_grad():
        for layer, head in pairs:
            ablated.layers[layer].self_attn.out_proj.weight[:, head * dk : (head + 1) * dk] = 0
    return ablated


@pytest.mark.parametrize("name", ["pre", "post"])
def test_ablation_equals_zeroed_output_projection_columns(name):
    cfg = CONFIGS[name]
    model = TransformerEncoder(cfg).eval()
    input_ids, mask = padded_batch([7, 5, 2], vocab_size=cfg.vocab_size, seed=4)
    pairs = [(0, 2), (1, 0), (1, 1)]
    ablated = model.trace(input_ids, mask, ablate_heads=pairs)
    reference = zero_out_projection_columns(model, pairs).trace(input_ids, mask)
    torch.testing.assert_close(ablated.output, reference.output, rtol=0, atol=1e-6)
    torch.testing.assert_close(ablated.attention, reference.attention, rtol=0, atol=1e-6)
    for mine, theirs in zip(ablated.hidden_states, reference.hidden_states, strict=True):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-6)
    assert ablated.ablated_heads == ((0, 2), (1, 0), (1, 1))
    z = ablated[hooks.block(1).attn.z]  # [B, H, T, dk]
    assert z[:, :2].abs().max() == 0 and z[:, 2].abs().max() > 0
    # and it did change something: the untouched model differs
    assert (model.trace(input_ids, mask).output - ablated.output).abs().max() > 1e-3


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([(3, 0)], r"cannot switch off head \(3, 0\): this model has layers 0..2 and heads 0..2"),
        ([(0, -1)], r"cannot switch off head \(0, -1\)"),
        ([(0,)], r"ablate_heads takes \(layer, head\) pairs of whole numbers, got \(0,\)"),
        ([(0.5, 1)], r"pairs of whole numbers, got \(0.5, 1\)"),
    ],
)
def test_ablating_a_head_the_model_lacks_is_an_error(pairs, message):
    model = TransformerEncoder(CONFIGS["pre"]).eval()
    with pytest.raises(ValueError, match=message):
        model.trace(torch.ones(1, 3, dtype=torch.long), ablate_heads=pairs)


def test_ablation_in_one_thread_does_not_leak_into_another():
    cfg = CONFIGS["pre"]
    model = TransformerEncoder(cfg).eval()
    input_ids, mask = padded_batch([6], vocab_size=cfg.vocab_size)
    plain = model.trace(input_ids, mask).output
    switched = model.trace(input_ids, mask, ablate_heads=[(0, 0), (2, 1)]).output
    barrier = threading.Barrier(2)
    results: dict[str, list[torch.Tensor]] = {"plain": [], "ablated": []}

    def work(kind: str) -> None:
        barrier.wait()
        for _ in range(20):
            pairs = [(0, 0), (2, 1)] if kind == "ablated" else []
            results[kind].append(model.trace(input_ids, mask, ablate_heads=pairs).output)

    threads = [threading.Thread(target=work, args=(k,)) for k in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(torch.equal(out, plain) for out in results["plain"])
    assert all(torch.equal(out, switched) for out in results["ablated"])


@pytest.mark.parametrize(
    ("input_ids", "mask", "message"),
    [
        (torch.ones(1, 3), None, r"integer token ids, got dtype torch.float32"),
        (torch.ones(1, 3, dtype=torch.bool), None, r"integer token ids, got dtype torch.bool"),
        (
            torch.tensor([[1, 60, 2]]),
            None,
            r"token id 60 at \[0, 1\] is outside the vocabulary: "
            r"ids must be in \[0, 60\)",
        ),
        (torch.tensor([[1, 2], [3, -4]]), None, r"token id -4 at \[1, 1\]"),
        (
            torch.tensor([[1, 2, 3]]),
            torch.tensor([[1, 2, 0]]),
            r"attention_mask value 2 at "
            r"\[0, 1\] is not 0 or 1",
        ),
        (torch.tensor([[1, 2, 3]]), torch.tensor([[1.0, 0.5, 0.0]]), r"value 0.5 at \[0, 1\]"),
    ],
)
def test_bad_inputs_are_refused_before_anything_runs(input_ids, mask, message):
    model = TransformerEncoder(CONFIGS["pre"]).eval()
    calls = []
    model.embed.register_forward_pre_hook(lambda *args: calls.append(1))
    with pytest.raises(ValueError, match=message):
        model.trace(input_ids, mask)
    with pytest.raises(ValueError, match=message):
        model(input_ids, mask)
    assert calls == []
