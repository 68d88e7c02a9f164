"""TransformerEncoder: parity with torch's layers, captured shapes, determinism, errors; on a GPU
too, and the same numbers there as on the CPU."""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from torch import nn

from encoder import hooks
from encoder.core.config import EncoderConfig
from encoder.core.model import Norm, TransformerEncoder
from tests.encoder.helpers import (
    DEVICES,
    needs_cuda,
    padded_batch,
    randomise_norms,
    torch_layer,
    torch_reference,
)

TOLERANCE = 1e-5


def small_cfg(**overrides: object) -> EncoderConfig:
    values = dict(vocab_size=100, d_model=24, num_heads=4, num_layers=2, d_ff=40, max_len=32)
    return EncoderConfig(**{**values, **overrides})


ARCHITECTURES = [
    pytest.param(
        norm_first, activation, heads, id=f"{'pre' if norm_first else 'post'}-{activation}-h{heads}"
    )
    for norm_first in (True, False)
    for activation in ("relu", "gelu")
    for heads in (3, 4)
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("norm_first", "activation", "heads"), ARCHITECTURES)
def test_each_block_matches_torch_encoder_layer(
    norm_first: bool, activation: str, heads: int, device: str
) -> None:
    cfg = small_cfg(norm_first=norm_first, activation=activation, num_heads=heads)
    model = TransformerEncoder(cfg).eval().to(device)
    randomise_norms(model)
    x = torch.randn(3, 7, cfg.d_model, generator=torch.Generator().manual_seed(1)).to(device)
    _, mask = padded_batch([7, 4, 1])
    key_padding = (mask == 0).to(device)
    for block in model.layers:
        # train mode with dropout 0 keeps torch off its fused (hook-free) fast path
        reference = torch_layer(cfg).train().to(device)
        reference.load_state_dict(block.state_dict())
        with torch.no_grad():
            expected = reference(x, src_key_padding_mask=key_padding)
            actual = block(x, key_padding)
        torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=TOLERANCE)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("norm_first", "activation", "heads"), ARCHITECTURES)
def test_whole_stack_matches_torch_transformer_encoder(
    norm_first: bool, activation: str, heads: int, device: str
) -> None:
    cfg = small_cfg(norm_first=norm_first, activation=activation, num_heads=heads, num_layers=3)
    model = TransformerEncoder(cfg).eval().to(device)
    randomise_norms(model)
    reference = torch_reference(model).train().to(device)  # loads our layers.* and norm.* strictly
    input_ids, mask = (t.to(device) for t in padded_batch([6, 3]))
    with torch.no_grad():
        embedded = model.embed(input_ids, None)
        expected = reference(embedded, src_key_padding_mask=mask == 0)
        actual = model(input_ids, mask)
    torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=TOLERANCE)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_block_state_dict_has_torch_layer_keys_and_shapes(
    norm_first: bool, activation: str
) -> None:
    cfg = small_cfg(norm_first=norm_first, activation=activation)
    ours = TransformerEncoder(cfg).layers[0].state_dict()
    theirs = torch_layer(cfg).state_dict()
    assert {k: v.shape for k, v in ours.items()} == {k: v.shape for k, v in theirs.items()}


def test_rmsnorm_matches_torch_rmsnorm() -> None:
    cfg = small_cfg(norm_type="rmsnorm", layer_norm_eps=1e-6)
    ours = Norm(cfg, hooks.final_norm(cfg.num_layers))
    with torch.no_grad():
        ours.weight.copy_(torch.linspace(0.5, 2.0, cfg.d_model))
    reference = nn.RMSNorm(cfg.d_model, eps=cfg.layer_norm_eps)
    reference.load_state_dict(ours.state_dict())
    x = 3 * torch.randn(2, 5, cfg.d_model) + 1
    torch.testing.assert_close(ours(x), reference(x), atol=TOLERANCE, rtol=TOLERANCE)


def test_layernorm_matches_torch_layernorm() -> None:
    cfg = small_cfg()
    ours = Norm(cfg, hooks.final_norm(cfg.num_layers))
    with torch.no_grad():
        ours.weight.copy_(torch.linspace(0.5, 2.0, cfg.d_model))
        ours.bias.copy_(torch.linspace(-1.0, 1.0, cfg.d_model))
    reference = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
    reference.load_state_dict(ours.state_dict())
    x = 3 * torch.randn(2, 5, cfg.d_model) + 1
    torch.testing.assert_close(ours(x), reference(x), atol=TOLERANCE, rtol=TOLERANCE)


def expected_shapes(cfg: EncoderConfig, B: int, T: int) -> dict[str, tuple[int, ...]]:
    d, H, dk, ff = cfg.d_model, cfg.num_heads, cfg.head_dim, cfg.d_ff
    E = cfg.embedding_size or d  # the embeddings' width before any projection to d

    def norm(prefix: str, width: int = d) -> dict[str, tuple[int, ...]]:
        return {
            f"{prefix}.hook_in": (B, T, width),
            f"{prefix}.hook_mean": (B, T),
            f"{prefix}.hook_std": (B, T),
            f"{prefix}.hook_out": (B, T, width),
        }

    shapes = {"embed.hook_token": (B, T, E), "embed.hook_out": (B, T, d)}
    if cfg.positional != "rope":  # RoPE adds no position vectors
        shapes["embed.hook_position"] = (T, E)
    if cfg.embedding_norm:
        shapes |= norm("embed.ln", E)
    for i in range(cfg.num_layers):
        p = f"blocks.{i}"
        if i or not cfg.norm_first or cfg.first_attention_norm:
            shapes |= norm(f"{p}.ln1")
        shapes |= norm(f"{p}.ln2")
        shapes |= {f"{p}.attn.hook_{name}": (B, H, T, dk) for name in ("q", "k", "v", "z")}
        if cfg.positional == "rope":
            shapes |= {f"{p}.attn.hook_rot_{name}": (B, H, T, dk) for name in ("q", "k")}
        shapes |= {f"{p}.attn.hook_scores": (B, H, T, T), f"{p}.attn.hook_pattern": (B, H, T, T)}
        shapes |= {f"{p}.attn.hook_out": (B, T, d), f"{p}.hook_resid_mid": (B, T, d)}
        shapes |= {f"{p}.mlp.hook_pre": (B, T, ff), f"{p}.mlp.hook_post": (B, T, ff)}
        if cfg.activation in ("geglu", "swiglu"):
            shapes[f"{p}.mlp.hook_gate"] = (B, T, ff)
        shapes |= {f"{p}.mlp.hook_out": (B, T, d), f"{p}.hook_resid_post": (B, T, d)}
    if cfg.norm_first:
        shapes |= norm("final_norm")
    return shapes


TRACED_CONFIGS = {
    "pre-norm": small_cfg(),
    "post-norm": small_cfg(norm_first=False, num_heads=3),
    "rmsnorm": small_cfg(norm_type="rmsnorm"),
    "learned-bert-like": small_cfg(
        positional="learned",
        norm_first=False,
        type_vocab_size=2,
        embedding_norm=True,
        scale_embeddings=False,
    ),
    "modernbert-like": small_cfg(
        num_layers=3,
        positional="rope",
        rope_base=160000.0,
        rope_local_base=10000.0,
        attention_window=4,
        global_every=2,
        activation="geglu",
        linear_bias=False,
        norm_bias=False,
        first_attention_norm=False,
        embedding_norm=True,
        scale_embeddings=False,
    ),
    "albert-like": small_cfg(
        norm_first=False,
        positional="learned",
        position_offset=2,
        type_vocab_size=2,
        embedding_norm=True,
        embedding_size=8,
        shared_layers=True,
        activation="gelu_tanh",
        scale_embeddings=False,
    ),
}


TRACED = [
    pytest.param((name, device), marks=needs_cuda, id=f"{name}-cuda")
    if device != "cpu"
    else pytest.param((name, device), id=name)
    for name in TRACED_CONFIGS
    for device in ("cpu", "cuda:0")
]


@pytest.fixture(params=TRACED)
def traced(request: pytest.FixtureRequest):
    name, device = request.param
    cfg = TRACED_CONFIGS[name]
    model = TransformerEncoder(cfg).eval().to(device)
    input_ids, mask = (t.to(device) for t in padded_batch([8, 5, 2]))
    return cfg, model, input_ids, mask, model.trace(input_ids, mask)


def test_every_named_tensor_has_its_shape(traced) -> None:
    cfg, model, input_ids, _, trace = traced
    shapes = {name: tuple(t.shape) for name, t in trace.tensors.items()}
    assert shapes == expected_shapes(cfg, *input_ids.shape)
    assert sorted(trace.tensors) == sorted(model.hook_names())


def test_trace_attention_and_hidden_states(traced) -> None:
    cfg, _, input_ids, mask, trace = traced
    B, T = input_ids.shape
    assert trace.attention.shape == (cfg.num_layers, B, cfg.num_heads, T, T)
    assert all(t.device == input_ids.device for t in (trace.attention, trace.output))
    torch.testing.assert_close(
        trace.attention.sum(dim=-1),
        torch.ones(cfg.num_layers, B, cfg.num_heads, T, device=input_ids.device),
    )
    padded_keys = (mask == 0)[None, :, None, None, :].expand_as(trace.attention)
    assert (trace.attention[padded_keys] == 0).all()
    assert len(trace.hidden_states) == cfg.num_layers + 1
    assert torch.equal(trace.hidden_states[0], trace.tensors["embed.hook_out"])
    last = trace.hidden_states[-1]
    if cfg.norm_first:
        assert torch.equal(trace.tensors["final_norm.hook_in"], last)
        assert torch.equal(trace.output, trace.tensors["final_norm.hook_out"])
    else:
        assert torch.equal(trace.output, last)


def test_trace_output_equals_forward_exactly(traced) -> None:
    _, model, input_ids, mask, trace = traced
    with torch.no_grad():
        plain = model(input_ids, mask)
    assert torch.equal(trace.output, plain)
    assert torch.equal(trace.input_ids, input_ids)
    assert torch.equal(trace.attention_mask, mask)


@needs_cuda
@pytest.mark.parametrize("name", list(TRACED_CONFIGS))
def test_a_trace_on_cuda_has_the_numbers_of_the_same_model_on_the_cpu(name: str) -> None:
    """Every captured tensor (scores, attention weights, each norm's mean and std, ...), the
    output and the hidden states, within float32 rounding; padded keys get exactly 0 there too."""
    model = TransformerEncoder(TRACED_CONFIGS[name]).eval()
    randomise_norms(model)
    input_ids, mask = padded_batch([8, 5, 2])
    on_cpu = model.trace(input_ids, mask)
    on_cuda = copy.deepcopy(model).to("cuda:0").trace(input_ids.cuda(), mask.cuda())
    assert on_cuda.output.is_cuda and on_cuda.tensors.keys() == on_cpu.tensors.keys()
    moved = on_cuda.to("cpu")
    for got, want in [
        (moved.output, on_cpu.output),
        (moved.attention, on_cpu.attention),
        *zip(moved.hidden_states, on_cpu.hidden_states, strict=True),
    ]:
        torch.testing.assert_close(got, want, atol=TOLERANCE, rtol=TOLERANCE)
    for hook, want in on_cpu.tensors.items():  # the scores' -inf at padded keys must match too
        torch.testing.assert_close(
            moved.tensors[hook],
            want,
            atol=TOLERANCE,
            rtol=TOLERANCE,
            msg=lambda message, hook=hook: f"{hook}: {message}",
        )
    padded_keys = (mask == 0)[None, :, None, None, :].expand_as(moved.attention)
    assert (moved.attention[padded_keys] == 0).all()


def test_capturing_leaves_numbers_and_model_unchanged() -> None:
    model = TransformerEncoder(small_cfg()).eval()
    input_ids, mask = padded_batch([6, 4])
    with torch.no_grad():
        before = model(input_ids, mask)
    first, second = model.trace(input_ids, mask), model.trace(input_ids, mask)
    with torch.no_grad():
        after = model(input_ids, mask)
    assert torch.equal(before, after)
    assert all(torch.equal(first.tensors[n], second.tensors[n]) for n in first.tensors)
    assert not any(t.requires_grad for t in first.tensors.values())


def test_trace_without_mask_treats_every_token_as_real() -> None:
    model = TransformerEncoder(small_cfg()).eval()
    input_ids, _ = padded_batch([5, 5])
    trace = model.trace(input_ids)
    assert torch.equal(trace.attention_mask, torch.ones_like(input_ids))
    assert (trace.attention > 0).all()


def test_same_seed_same_weights_other_seed_other_weights() -> None:
    first = TransformerEncoder(small_cfg(seed=7)).state_dict()
    again = TransformerEncoder(small_cfg(seed=7)).state_dict()
    other = TransformerEncoder(small_cfg(seed=8)).state_dict()
    assert first.keys() == again.keys() == other.keys()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(
        first["layers.0.self_attn.in_proj_weight"], other["layers.0.self_attn.in_proj_weight"]
    )
    assert not torch.equal(first["embed.token.weight"], other["embed.token.weight"])


def test_models_built_at_once_in_two_threads_have_their_seeds_weights() -> None:
    """A cost measurement builds models in the background while a page builds its own: torch's
    default generator is the process's, so each build must have it to itself (`seeded`)."""
    cfg, other = small_cfg(seed=7), small_cfg(seed=8, num_layers=4)
    expected = TransformerEncoder(cfg).state_dict()
    stop = threading.Event()

    def build_others() -> None:
        while not stop.is_set():
            TransformerEncoder(other)

    thread = threading.Thread(target=build_others)
    thread.start()
    try:
        built = [TransformerEncoder(cfg).state_dict() for _ in range(20)]
    finally:
        stop.set()
        thread.join()
    assert all(torch.equal(b[k], expected[k]) for b in built for k in expected)


def test_building_a_model_leaves_the_global_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    TransformerEncoder(small_cfg())
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    ("input_ids", "mask", "message"),
    [
        (torch.zeros(2, 0, dtype=torch.long), None, "no tokens"),
        (torch.zeros(1, 33, dtype=torch.long), None, "33 tokens is more than max_len=32"),
        (
            torch.zeros(2, 3, dtype=torch.long),
            torch.tensor([[1, 1, 0], [0, 0, 0]]),
            "attention_mask is all 0",
        ),
        (torch.zeros(2, 3, dtype=torch.long), torch.ones(2, 4), "differs from input_ids shape"),
        (torch.zeros(3, dtype=torch.long), None, "must be \\[batch, tokens\\]"),
    ],
    ids=["empty", "too-long", "all-padding", "mask-shape", "one-dimensional"],
)
def test_bad_input_raises_value_error(input_ids, mask, message: str) -> None:
    model = TransformerEncoder(small_cfg()).eval()
    with pytest.raises(ValueError, match=message):
        model.trace(input_ids, mask)
    with pytest.raises(ValueError, match=message):
        model(input_ids, mask)


def test_threads_tracing_one_model_get_their_own_tensors() -> None:
    model = TransformerEncoder(small_cfg()).eval()
    batches = [padded_batch([6, 3], seed=1), padded_batch([9], seed=2)]
    expected = [model.trace(*batch) for batch in batches]
    # Both threads wait for each other inside block 0, so the two captures are surely open at once.
    both_inside = threading.Barrier(2, timeout=10)

    def wait_for_the_other_thread(*_: object) -> None:
        both_inside.wait()

    handle = model.layers[0].register_forward_hook(wait_for_the_other_thread)
    results: list = [None, None]

    def run(i: int) -> None:
        results[i] = model.trace(*batches[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        handle.remove()
    for got, want in zip(results, expected, strict=True):
        assert got is not None
        assert got.tensors.keys() == want.tensors.keys()
        assert all(torch.equal(got.tensors[n], want.tensors[n]) for n in want.tensors)
