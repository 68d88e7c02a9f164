"""The architecture options (RoPE, GELU tanh, GeGLU, SwiGLU, biases off, a local window, an
embedding projection, shared layers, block 0 without its attention norm, a position offset), each
against an implementation written here from its formula, and the block's table (hook shapes,
parameter counts) against the model for a grid of their combinations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from encoder import hooks
from encoder.core import block
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect import lesson
from encoder.inspect.attention_steps import attention_steps, names_for_steps
from encoder.inspect.ledger import parameter_counts
from encoder.inspect.moves import value_norms
from encoder.measure.op_times import profile_ops, timed_groups
from tests.encoder.helpers import DEVICES, padded_batch, randomise_norms

TOLERANCE = 1e-5
LENGTHS = [12, 7, 3]  # three sentences, right-padded to 12 tokens


def small_cfg(**overrides: object) -> EncoderConfig:
    values = dict(vocab_size=100, d_model=24, num_heads=4, num_layers=3, d_ff=40, max_len=32)
    return EncoderConfig(**{**values, **overrides})


def traced(cfg: EncoderConfig, device: str = "cpu"):
    model = TransformerEncoder(cfg).eval().to(device)
    randomise_norms(model)
    input_ids, mask = (t.to(device) for t in padded_batch(LENGTHS))
    return model, mask, model.trace(input_ids, mask)


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, T, d] -> [B, H, T, dk]."""
    B, T, d = x.shape
    return x.view(B, T, heads, d // heads).transpose(1, 2)


def complex_rotation(x: torch.Tensor, base: float) -> torch.Tensor:
    """RoPE as a complex product: pair j (x_j, x_{j + dk/2}) is the number x_j + i x_{j + dk/2},
    multiplied by e^(i pos base^(-2j/dk)). x: [B, H, T, dk]."""
    T, dk = x.shape[-2], x.shape[-1]
    as_complex = torch.complex(x[..., : dk // 2].double(), x[..., dk // 2 :].double())
    j = torch.arange(dk // 2, dtype=torch.float64)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * base ** (-2 * j / dk)  # [T, dk/2]
    turned = as_complex * torch.polar(torch.ones_like(angle), angle)
    return torch.cat([turned.real, turned.imag], dim=-1).to(x.dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_rope_turns_q_and_k_by_the_complex_rotation_with_each_layers_base(device: str) -> None:
    cfg = small_cfg(
        positional="rope", rope_base=500.0, rope_local_base=50.0, attention_window=6,
        global_every=2,
    )  # fmt: skip
    model, mask, trace = traced(cfg, device)
    assert "embed.hook_position" not in model.hook_names()
    assert not any("position" in name for name in model.state_dict())
    dk = cfg.head_dim
    for layer, base in enumerate((500.0, 50.0, 500.0)):  # layer 1 is local: its own base
        a = hooks.block(layer).attn
        rot_q, rot_k = trace[a.rot_q].cpu(), trace[a.rot_k].cpu()
        torch.testing.assert_close(rot_q, complex_rotation(trace[a.q].cpu(), base))
        torch.testing.assert_close(rot_k, complex_rotation(trace[a.k].cpu(), base))
        scores = trace[a.scores].cpu()  # [B, H, T, T]
        seen = torch.isfinite(scores)
        expected = rot_q @ rot_k.transpose(-2, -1) / math.sqrt(dk)
        torch.testing.assert_close(scores[seen], expected[seen], atol=TOLERANCE, rtol=TOLERANCE)
    # the unrotated q.k would give other scores: the rotation is what the scores read
    a = hooks.block(0).attn
    plain = trace[a.q] @ trace[a.k].transpose(-2, -1) / math.sqrt(dk)
    seen = torch.isfinite(trace[a.scores])
    assert not torch.allclose(plain[seen], trace[a.scores][seen], atol=1e-3)


def test_rope_scores_depend_on_the_distance_between_tokens_only() -> None:
    """One token repeated: with RoPE its score against itself at distance n is the same wherever
    the pair sits (no position vector is added to the embeddings)."""
    cfg = small_cfg(positional="rope", num_layers=1)
    model = TransformerEncoder(cfg).eval()
    scores = model.trace(torch.full((1, 10), 7), names=[hooks.block(0).attn.scores])
    scores = scores[hooks.block(0).attn.scores][0]  # [H, T, T]
    for distance in (0, 1, 3):
        diagonal = torch.diagonal(scores, offset=distance, dim1=-2, dim2=-1)  # [H, T - n]
        torch.testing.assert_close(diagonal, diagonal[:, :1].expand_as(diagonal))


def exact_gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def tanh_gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def silu(x: torch.Tensor) -> torch.Tensor:
    return x / (1 + torch.exp(-x))


@pytest.mark.parametrize(("activation", "function"), [("geglu", exact_gelu), ("swiglu", silu)])
@pytest.mark.parametrize("norm_first", [True, False])
def test_gated_feed_forward_follows_its_formula_from_the_layers_weights(
    activation: str, function, norm_first: bool
) -> None:
    cfg = small_cfg(activation=activation, norm_first=norm_first)
    model, _, trace = traced(cfg)
    F = cfg.d_ff
    for layer, weights in enumerate(model.layers):
        names = hooks.block(layer)
        w1, b1 = weights.linear1.weight, weights.linear1.bias  # [2F, d], [2F]
        assert w1.shape == (2 * F, cfg.d_model)
        x = trace[names.ln2.out] if norm_first else trace[names.resid_mid]  # [B, T, d]
        pre = x @ w1[:F].T + b1[:F]  # rows [0, F): the activation's input
        gate = x @ w1[F:].T + b1[F:]  # rows [F, 2F): the gate
        post = function(pre) * gate
        out = post @ weights.linear2.weight.T + weights.linear2.bias
        for hook, expected in ((names.mlp.pre, pre), (names.mlp.gate, gate),
                               (names.mlp.post, post), (names.mlp.out, out)):  # fmt: skip
            torch.testing.assert_close(trace[hook], expected, atol=TOLERANCE, rtol=TOLERANCE)


def test_gelu_tanh_is_the_tanh_formula_not_the_exact_gelu() -> None:
    model, _, trace = traced(small_cfg(activation="gelu_tanh"))
    for names in hooks.blocks(3):
        pre, post = trace[names.mlp.pre], trace[names.mlp.post]
        torch.testing.assert_close(post, tanh_gelu(pre), atol=1e-6, rtol=1e-6)
        assert (post - exact_gelu(pre)).abs().max() > 1e-5  # the two differ somewhere
    assert names.mlp.gate not in model.hook_names()


def test_local_window_sees_only_near_keys_in_local_layers() -> None:
    window = 4  # a query sees keys within 2 positions of it
    cfg = small_cfg(num_layers=4, attention_window=window, global_every=3)
    _, mask, trace = traced(cfg)
    T = mask.shape[1]
    position = torch.arange(T)
    far = (position[:, None] - position[None, :]).abs() > window // 2  # [query, key]
    padded_key = (mask == 0)[:, None, None, :]  # [B, 1, 1, key]
    real_query = (mask == 1)[:, None, :, None]  # [B, 1, query, 1]
    for layer in range(4):
        a = hooks.block(layer).attn
        local = layer in (1, 2)  # layers 0 and 3 are global (multiples of global_every)
        scores = trace[a.q] @ trace[a.k].transpose(-2, -1) / math.sqrt(cfg.head_dim)
        hidden = padded_key | (far & real_query) if local else padded_key.expand_as(scores)
        expected = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1)
        pattern = trace[a.pattern]
        torch.testing.assert_close(pattern, expected, atol=TOLERANCE, rtol=TOLERANCE)
        assert (pattern.masked_select(padded_key.expand_as(pattern)) == 0).all()
        outside = pattern.masked_select((far & real_query & ~padded_key).expand_as(pattern))
        assert (outside == 0).all() if local else (outside > 0).all()


def test_block_table_agrees_with_the_model_for_a_grid_of_options() -> None:
    """Every hook with its shape in data-flow order, and the parameter count (shared ones once)."""
    grid = itertools.product(
        (True, False),  # linear_bias
        (True, False),  # norm_bias
        ("relu", "swiglu"),
        (True, False),  # shared_layers
        ((True, True), (True, False), (False, True)),  # norm_first, first_attention_norm
        (0, 8),  # embedding_size
        (("learned", 2), ("rope", 0), ("sinusoidal", 0)),  # positional, position_offset
    )
    for linear_bias, norm_bias, activation, shared, (pre, first_norm), width, (where, P) in grid:
        cfg = small_cfg(
            d_model=16, d_ff=24, num_layers=2, max_len=12, linear_bias=linear_bias,
            norm_bias=norm_bias, activation=activation, shared_layers=shared, norm_first=pre,
            first_attention_norm=first_norm, embedding_size=width, positional=where,
            position_offset=P, embedding_norm=True, type_vocab_size=2, attention_window=4,
            global_every=2,
        )  # fmt: skip
        model = TransformerEncoder(cfg).eval()
        unique = {id(p): p.numel() for p in model.parameters()}
        assert block.parameters(cfg) == sum(unique.values()), cfg
        biases = [name for name, _ in model.named_parameters() if name.endswith("bias")]
        if not linear_bias and not norm_bias:
            assert biases == [], cfg
        input_ids, mask = padded_batch([9, 4])
        trace = model.trace(input_ids, mask)
        got = [(name, tuple(t.shape)) for name, t in trace.tensors.items()]
        assert got == list(block.shapes(cfg, 2, 9).items()), cfg


def test_biases_off_leaves_the_bias_parameters_out() -> None:
    cfg = small_cfg(linear_bias=False, norm_bias=False, embedding_size=8, embedding_norm=True)
    model = TransformerEncoder(cfg)
    layer = model.layers[0]
    assert layer.self_attn.in_proj_bias is None and layer.self_attn.out_proj.bias is None
    assert layer.linear1.bias is None and layer.linear2.bias is None
    assert model.embed.project.bias is None and model.embed.norm.bias is None
    assert layer.norm1.bias is None and model.norm.bias is None
    with_biases = small_cfg(embedding_size=8, embedding_norm=True)
    L, d, F, E = 3, cfg.d_model, cfg.d_ff, 8
    # per block: q, k, v, out (4d), linear1 (F), linear2 (d), two norms (2d); the embedding
    # norm (E), the projection (d), the final norm (d)
    missing = L * (4 * d + F + d + 2 * d) + E + d + d
    assert block.parameters(with_biases) - block.parameters(cfg) == missing


def test_shared_layers_are_one_set_of_weights_applied_num_layers_times() -> None:
    cfg = small_cfg(shared_layers=True, num_layers=4)
    model, mask, trace = traced(cfg)
    first = dict(model.layers[0].named_parameters())
    for layer in model.layers[1:]:
        for name, parameter in layer.named_parameters():
            assert parameter.data_ptr() == first[name].data_ptr(), name
    assert {f"layers.3.{name}" for name in first} <= set(model.state_dict())
    one_block = sum(p.numel() for p in first.values())
    unshared = block.parameters(small_cfg(num_layers=4))
    assert block.parameters(cfg) == unshared - 3 * one_block
    assert sum(p.numel() for p in model.parameters()) == block.parameters(cfg)
    x, key_padding = trace.hidden_states[0], mask == 0
    with torch.no_grad():
        for layer in range(cfg.num_layers):  # block 0's weights, four times
            x = model.layers[0](x, key_padding)
            torch.testing.assert_close(trace.hidden_states[layer + 1], x)
    # each block keeps its own hooks and index: switching off a head in block 2 only
    ablated = model.trace(trace.input_ids, mask, ablate_heads=[(2, 1)])
    torch.testing.assert_close(ablated.hidden_states[2], trace.hidden_states[2])
    assert not torch.allclose(ablated.hidden_states[3], trace.hidden_states[3])


def test_embedding_projection_maps_the_narrow_embeddings_to_d_model() -> None:
    cfg = small_cfg(embedding_size=8, embedding_norm=True, positional="learned", type_vocab_size=2)
    model, _, trace = traced(cfg)
    weights = model.state_dict()
    assert weights["embed.token.weight"].shape == (100, 8)
    assert weights["embed.position.weight"].shape == (32, 8)
    assert weights["embed.token_type.weight"].shape == (2, 8)
    assert weights["embed.norm.weight"].shape == (8,)
    assert weights["embed.project.weight"].shape == (24, 8)
    normalised = trace["embed.ln.hook_out"]  # [B, T, 8]
    assert trace["embed.hook_token"].shape == (3, 12, 8) and normalised.shape == (3, 12, 8)
    projected = normalised @ weights["embed.project.weight"].T + weights["embed.project.bias"]
    torch.testing.assert_close(trace.hidden_states[0], projected)
    assert trace.hidden_states[0].shape == (3, 12, 24)


def test_position_offset_reads_the_table_from_row_p() -> None:
    cfg = small_cfg(positional="learned", position_offset=2)
    model, _, trace = traced(cfg)
    table = model.state_dict()["embed.position.weight"]
    assert table.shape == (32 + 2, 24)
    torch.testing.assert_close(trace["embed.hook_position"], table[2:14])
    assert block.parameters(cfg) - block.parameters(small_cfg(positional="learned")) == 2 * 24


def test_block_0_without_attention_norm_reads_the_embedding_output() -> None:
    cfg = small_cfg(first_attention_norm=False)
    model, _, trace = traced(cfg)
    assert model.layers[0].norm1 is None and model.layers[1].norm1 is not None
    assert not any(name.startswith("layers.0.norm1") for name in model.state_dict())
    assert not any(name.startswith("blocks.0.ln1") for name in model.hook_names())
    attention = model.layers[0].self_attn
    qkv = trace.hidden_states[0] @ attention.in_proj_weight.T + attention.in_proj_bias
    q = split_heads(qkv[..., : cfg.d_model], cfg.num_heads)  # [B, H, T, dk]
    torch.testing.assert_close(trace[hooks.block(0).attn.q], q)
    normalised = model.layers[1].norm1(trace.hidden_states[1])  # block 1 keeps its norm
    torch.testing.assert_close(trace[hooks.block(1).ln1.out], normalised)


def test_a_sidebar_setup_builds_and_traces() -> None:
    """RoPE, window 8 with every third layer global, GeGLU, no biases, embedding size 64,
    shared layers: the model builds, traces without NaN, and its table agrees with it."""
    cfg = EncoderConfig(
        vocab_size=100, d_model=128, num_heads=4, num_layers=4, d_ff=256, max_len=64,
        positional="rope", attention_window=8, global_every=3, activation="geglu",
        linear_bias=False, norm_bias=False, embedding_size=64, shared_layers=True,
    )  # fmt: skip
    model = TransformerEncoder(cfg).eval()
    input_ids, mask = padded_batch([20, 11])
    trace = model.trace(input_ids, mask)
    assert torch.isfinite(trace.output).all()
    assert {name: tuple(t.shape) for name, t in trace.tensors.items()} == block.shapes(cfg, 2, 20)
    assert sum(p.numel() for p in model.parameters()) == block.parameters(cfg)


MODERNBERT_LIKE = dict(
    positional="rope", rope_base=160000.0, rope_local_base=10000.0, attention_window=4,
    global_every=3, activation="geglu", linear_bias=False, norm_bias=False,
    first_attention_norm=False, embedding_norm=True,
)  # fmt: skip
ALBERT_LIKE = dict(
    norm_first=False, activation="gelu_tanh", embedding_size=8, shared_layers=True,
    positional="learned", position_offset=2, type_vocab_size=2, embedding_norm=True,
)  # fmt: skip


@pytest.mark.parametrize(
    "overrides", [MODERNBERT_LIKE, ALBERT_LIKE, dict(activation="swiglu", norm_type="rmsnorm")],
    ids=["modernbert-like", "albert-like", "swiglu-rmsnorm"],
)  # fmt: skip
def test_the_inspect_helpers_read_models_with_the_options(overrides: dict) -> None:
    cfg = small_cfg(**overrides)
    model, mask, trace = traced(cfg)
    weights = model.state_dict()
    check = lesson.numpy_block_check(cfg, weights, trace)  # NumPy's block, option by option
    assert len(check) == 3 and (check["max_abs_diff"] <= 1e-4).all(), check
    counts = parameter_counts(cfg).set_index("component")
    assert counts.loc["total", "params"] == sum(p.numel() for p in model.parameters())
    assert counts["params"].drop("total").sum() == counts.loc["total", "params"]
    assert value_norms(trace, model).shape == (3, 3, 4, 12)
    parts = lesson.embedding_parts(trace, 0, 5)
    if cfg.positional == "rope":  # nothing is added for positions
        assert not parts.position.any()
    tokens = [f"t{j}" for j in range(12)]
    for layer in range(3):  # block 0 (no ln1 in the ModernBERT-like model), local layers 1, 2
        kept = model.trace(trace.input_ids, mask, names=names_for_steps(cfg, layer))
        steps = attention_steps(cfg, weights, kept, 1, layer, 2, 3, tokens)
        a = hooks.block(layer).attn
        model_scores = trace[a.scores][1, 2, 3].double()  # [T]
        seen = model_scores.isfinite().numpy()
        np.testing.assert_allclose(steps.table["scaled"][seen], model_scores[seen], rtol=1e-6)
        np.testing.assert_allclose(steps.table["weight"], trace[a.pattern][1, 2, 3], rtol=1e-6)
        assert np.isnan(steps.ln1_std) == (layer == 0 and "first_attention_norm" in overrides)


@pytest.mark.parametrize(
    "overrides",
    [{}, dict(norm_first=False, activation="relu"), MODERNBERT_LIKE, ALBERT_LIKE,
     dict(activation="swiglu", norm_type="rmsnorm", positional="rope", attention_window=4)],
    ids=["pre-gelu", "post-relu", "modernbert-like", "albert-like", "swiglu-rmsnorm-local"],
)  # fmt: skip
def test_the_numpy_code_the_lesson_shows_is_what_the_model_runs(overrides: dict) -> None:
    """Only this model's code (step 10, issue 50): run as shown, it gives every block's output."""
    cfg = small_cfg(**overrides)
    model, mask, trace = traced(cfg)
    code = lesson.numpy_block_source(cfg)
    shown: dict = {}
    exec(compile(code, "the lesson's code", "exec"), shown)  # the code as the page shows it
    act = lesson.ACTIVATIONS[cfg.activation].__name__
    for layer in range(cfg.num_layers):
        ours = shown["encoder_block"](
            trace.hidden_states[layer].double().numpy(),
            mask.numpy().astype(bool),
            lesson.block_parameters(model.state_dict(), layer),
            heads=cfg.num_heads,
            norm_first=cfg.norm_first,
            act=shown[act],
            gated=cfg.gated,
            norm_type=cfg.norm_type,
            eps=cfg.layer_norm_eps,
            rope_base=cfg.rope_base_of(layer) if cfg.positional == "rope" else None,
            window=cfg.attention_window if cfg.is_local(layer) else 0,
        )
        expected = trace.hidden_states[layer + 1].double().numpy()
        np.testing.assert_allclose(ours, expected, atol=1e-4)
    assert ("def rms_norm" in code) == (cfg.norm_type == "rmsnorm") != ("def layer_norm" in code)
    assert ("def rope" in code) == (cfg.positional == "rope")
    assert {name for name in ("relu", "gelu", "gelu_tanh", "silu") if f"def {name}(" in code} == {
        act
    }
    assert "if norm_first" not in code and "if gated" not in code and "ACTIVATIONS" not in code
    local = {cfg.is_local(layer) for layer in range(cfg.num_layers)}
    assert ("if window" in code) == (local == {True, False})  # kept where blocks differ


@pytest.mark.parametrize("overrides", [MODERNBERT_LIKE, ALBERT_LIKE], ids=["modernbert", "albert"])
def test_the_tables_matmul_flops_agree_with_torch_and_rotations_are_timed_alone(
    overrides: dict,
) -> None:
    cfg = small_cfg(**overrides)
    model = TransformerEncoder(cfg).eval()
    ids, mask = padded_batch([6, 4])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids, mask)
    ops = block.model_ops(cfg, *ids.shape)
    assert counter.get_total_flops() == sum(op.matmul_flops for op in ops)
    groups = timed_groups(ops)
    rotations = [group for group in groups if group[-1].kind == "rotation"]
    assert len(rotations) == (6 if cfg.positional == "rope" else 0)
    assert all(len(group) == 1 for group in rotations)
    profile = profile_ops(model, ids, mask, repeats=1, warmup=0)
    assert [op.flops for op in profile.ops] == [op.total_flops for op in ops]
