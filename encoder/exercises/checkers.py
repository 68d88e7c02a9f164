"""One checker per piece of the encoder: the student's function against the live model's tensors.

Every checker takes the student's function, a `Lab` (encoder.exercises.setup) and, for the
pieces inside a block, the block's index. It calls the function (stopped after the lab's
time_limit) with inputs taken from the lab's trace (copies, in the lab's backend: float64 NumPy
arrays or torch tensors), compares what comes back with the tensor the model computed, and
returns a CheckResult. Shapes: B = sentences, T = tokens (padded), H = heads, dk = d_model / H,
d = d_model, F = d_ff.

Every architecture the model builds is checked, with what it changes said in each docstring: a
bias the model lacks (linear_bias or norm_bias off) arrives as zeros; RoPE's q and k arrive
already turned by position; a gated feed-forward's w1 is [2F, d]. Where the student's function
cannot be told the difference (RoPE inside the attention of a function given x, a local window
through a [B, T] mask, block 0 without its attention norm), the check raises a ValueError that
says why and names a layer or a setting where it applies (the padding-mask exercise's scores
arrive with the window's -inf already in place, so it runs in every layer).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch

from encoder.core import hooks
from encoder.core.model import Norm
from encoder.core.options import NORM_TYPE_NAMES
from encoder.exercises import mistakes as wrong
from encoder.exercises.checking import (
    HEAD_AXES,
    SCORE_AXES,
    STREAM_AXES,
    block_hooks,
    global_layer_only,
    query_key,
    raw_scores,
    run_check,
    seen_keys,
    without_rope,
)
from encoder.exercises.lab import Lab
from encoder.exercises.result import CheckResult, Mistake
from encoder.inspect.lesson import block_parameters


def check_softmax(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(scores) -> weights. scores [B, H, T, T]: block `layer`'s scaled scores, padded keys
    (and, in a local layer, keys outside the window) already -inf; weights [B, H, T, T]: the
    softmax over keys (the last axis)."""
    names = block_hooks(lab, layer)
    scores = lab.array(lab.trace[names.attn.scores])
    with np.errstate(over="ignore"):
        mistakes = (
            Mistake("softmax axis", wrong.WRONG_AXIS, wrong.softmax(scores, axis=-2)),
            Mistake("not normalised", wrong.NOT_NORMALISED, np.exp(scores)),
        )
    expected = lab.array(lab.trace[names.attn.pattern])
    return run_check(lab, "softmax", fn, (lab.given(scores),), expected, SCORE_AXES,
                layer=layer, mistakes=mistakes)  # fmt: skip


def check_scores(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(q, k) -> scores. q, k [B, H, T, dk]: block `layer`'s queries and keys (with RoPE,
    already turned by their positions); scores [B, H, T, T] = q k^T / sqrt(dk), unmasked
    (compared where the query sees the key: the model sets padded keys, and keys outside a
    local layer's window, to -inf, the masks' job)."""
    names = block_hooks(lab, layer)
    raw = raw_scores(lab, names)
    dk = lab.cfg.head_dim
    mistakes = (
        Mistake("missing sqrt", wrong.MISSING_SQRT, raw),
        Mistake("divided by d_k", wrong.BY_DK, raw / dk),
        Mistake("keys and queries swapped", wrong.KEYS_QUERIES_SWAPPED,
                raw.swapaxes(-1, -2) / math.sqrt(dk)),
    )  # fmt: skip
    expected = lab.array(lab.trace[names.attn.scores])
    args = tuple(lab.given(lab.trace[name]) for name in query_key(lab, names))
    return run_check(lab, "scaled dot-product scores", fn, args, expected, SCORE_AXES,
                layer=layer, where=seen_keys(lab, names), mistakes=mistakes)  # fmt: skip


def check_head_attention(fn: Callable, lab: Lab, layer: int = 0, head: int = 0) -> CheckResult:
    """fn(q, k, v, mask) -> z for one head. q, k, v [B, T, dk]: head `head` of block `layer`
    (with RoPE, q and k already turned by their positions); mask [B, T] bool, True for a real
    token; z [B, T, dk] = softmax(q k^T / sqrt(dk), padded keys -inf) @ v. A local layer's
    window is not in the mask: such a layer is refused with a ValueError naming a global one."""
    names = block_hooks(lab, layer)
    if not 0 <= head < lab.cfg.num_heads:
        raise ValueError(f"head={head}: this model has heads 0..{lab.cfg.num_heads - 1}")
    global_layer_only(lab, layer, "check_head_attention")
    v = lab.array(lab.trace[names.attn.v])
    raw = raw_scores(lab, names)
    mistakes = tuple(
        Mistake(name, hint, (weights @ v)[:, head])
        for name, hint, weights in wrong.weight_mistakes(raw, lab.cfg.head_dim, lab.key_is_token)
    )
    args = tuple(lab.given(lab.trace[n][:, head]) for n in (*query_key(lab, names), names.attn.v))
    expected = lab.array(lab.trace[names.attn.z][:, head])
    return run_check(lab, f"attention of head {head}", fn, (*args, lab.given(lab.key_is_token)),
                expected, HEAD_AXES, layer=layer, mistakes=mistakes)  # fmt: skip


def _attention_input(lab: Lab, names: hooks.BlockHooks) -> np.ndarray:
    """What block's attention reads: ln1's output (pre-norm) or the block's input (post-norm,
    or a pre-norm block 0 without an attention norm)."""
    if lab.cfg.norm_first and lab.cfg.has_attention_norm(names.index):
        return lab.array(lab.trace[names.ln1.out])
    return lab.array(lab.trace.hidden_states[names.index])


def check_multi_head_attention(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(x, mask, w_qkv, b_qkv, w_out, b_out, num_heads) -> out. x [B, T, d]: what block
    `layer`'s attention reads; mask [B, T] bool, True for a real token; w_qkv [3d, d] and b_qkv
    [3d]: W_q, W_k, W_v stacked by rows (x @ w_qkv.T + b_qkv gives q, k, v side by side); w_out
    [d, d], b_out [d]: the output projection; out [B, T, d] after it. A model without linear
    biases gives zeros for b_qkv and b_out. Refused with a ValueError for a RoPE model and a
    local layer (the function is told of neither)."""
    names = block_hooks(lab, layer)
    without_rope(lab, "check_multi_head_attention")
    global_layer_only(lab, layer, "check_multi_head_attention")
    H, dk = lab.cfg.num_heads, lab.cfg.head_dim
    params = _block_weights(lab, layer)
    w_qkv, b_qkv = params["self_attn.in_proj_weight"], params["self_attn.in_proj_bias"]
    w_out, b_out = params["self_attn.out_proj.weight"], params["self_attn.out_proj.bias"]
    x = _attention_input(lab, names)
    v = lab.array(lab.trace[names.attn.v])

    def project(z: np.ndarray) -> np.ndarray:
        return wrong.merge_heads(z) @ w_out.T + b_out

    mistakes = [
        Mistake(name, hint, project(weights @ v))
        for name, hint, weights in wrong.weight_mistakes(
            raw_scores(lab, names), dk, lab.key_is_token
        )
    ]
    q, k, v_wrong = (wrong.split_heads_wrongly(m, H) for m in np.split(x @ w_qkv.T + b_qkv, 3, -1))
    scores = wrong.masked(q @ k.swapaxes(-1, -2) / math.sqrt(dk), lab.key_is_token)
    mistakes.append(
        Mistake("heads split", wrong.HEADS_RESHAPED, project(wrong.softmax(scores) @ v_wrong))
    )
    z = lab.array(lab.trace[names.attn.z])
    mistakes.append(
        Mistake("no output projection", wrong.NO_OUTPUT_PROJECTION, wrong.merge_heads(z))
    )
    args = (x, lab.key_is_token, w_qkv, b_qkv, w_out, b_out)
    given = (*(lab.given(a) for a in args), H)
    expected = lab.array(lab.trace[names.attn.out])
    return run_check(lab, "multi-head attention", fn, given, expected, STREAM_AXES,
                layer=layer, mistakes=tuple(mistakes))  # fmt: skip


def _first_norm(lab: Lab, layer: int, kind: str) -> tuple[Norm, hooks.NormHooks, str]:
    """Block `layer`'s first norm, its hooks and its name in the exercise: ln1, or ln2 in a
    block without an attention norm (ModernBERT's block 0). A ValueError for another kind."""
    if lab.cfg.norm_type != kind:
        raise ValueError(
            f"this model's norms are {lab.cfg.norm_type}: check {kind} on a model built with "
            f"norm_type={kind!r} (e.g. setup(EncoderConfig(norm_type={kind!r})))"
        )
    names, block = block_hooks(lab, layer), lab.model.layers[layer]
    if block.norm1 is None:
        return block.norm2, names.ln2, f"{NORM_TYPE_NAMES[kind]} (ln2: block {layer} has no ln1)"
    return block.norm1, names.ln1, NORM_TYPE_NAMES[kind]


def check_layer_norm(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(x, gain, bias, eps) -> y. x [B, T, d]: what block `layer`'s first LayerNorm reads (ln1;
    ln2 in a block without ln1, ModernBERT's block 0); gain, bias [d] (bias zeros for a model
    whose norms have none); eps a float; y [B, T, d], each token normalised over its d
    features."""
    norm, names, exercise = _first_norm(lab, layer, "layernorm")
    x = lab.array(lab.trace[names.inp])
    gain = lab.array(norm.weight)
    bias = np.zeros_like(gain) if norm.bias is None else lab.array(norm.bias)
    mistakes = wrong.layer_norm_mistakes(x, gain, bias, norm.eps)
    args = (lab.given(x), lab.given(gain), lab.given(bias), norm.eps)
    expected = lab.array(lab.trace[names.out])
    return run_check(lab, exercise, fn, args, expected, STREAM_AXES, layer=layer, mistakes=mistakes)


def check_rms_norm(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(x, gain, eps) -> y. x [B, T, d]: what block `layer`'s first RMSNorm reads (ln1; ln2 in
    a block without ln1); gain [d]; y [B, T, d] = x / sqrt(mean(x^2) + eps) * gain, over each
    token's d features."""
    norm, names, exercise = _first_norm(lab, layer, "rmsnorm")
    x = lab.array(lab.trace[names.inp])
    gain = lab.array(norm.weight)
    mistakes = wrong.rms_norm_mistakes(x, gain, norm.eps)
    expected = lab.array(lab.trace[names.out])
    args = (lab.given(x), lab.given(gain), norm.eps)
    return run_check(lab, exercise, fn, args, expected, STREAM_AXES, layer=layer, mistakes=mistakes)


def check_feed_forward(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(x, w1, b1, w2, b2, activation) -> y. x [B, T, d]: what block `layer`'s feed-forward
    reads; w2 [d, F], b2 [d]; activation "relu", "gelu" (exact erf form), "gelu_tanh" (GELU's
    tanh approximation), "geglu" or "swiglu". Not gated: w1 [F, d], b1 [F], y [B, T, d] =
    act(x @ w1.T + b1) @ w2.T + b2. Gated (geglu: act GELU, swiglu: act SiLU): w1 [2F, d], b1
    [2F]; h = x @ w1.T + b1, its first F features go through act and the last F are the gate:
    y = (act(h[..., :F]) * h[..., F:]) @ w2.T + b2. A model without linear biases gives zeros
    for b1 and b2."""
    names = block_hooks(lab, layer)
    cfg = lab.cfg
    params = _block_weights(lab, layer)
    # w1 [F, d] ([2F, d] gated), b1 [F] ([2F]), w2 [d, F], b2 [d]
    w1, b1, w2, b2 = (params[f"linear{i}.{p}"] for i in (1, 2) for p in ("weight", "bias"))
    x_hook = names.ln2.out if cfg.norm_first else names.resid_mid
    x = lab.array(lab.trace[x_hook])
    pre = lab.array(lab.trace[names.mlp.pre])
    gate = lab.array(lab.trace[names.mlp.gate]) if cfg.gated else None
    mistakes = wrong.feed_forward_mistakes(pre, gate, w2, b2, cfg.activation)
    args = (*(lab.given(a) for a in (x, w1, b1, w2, b2)), cfg.activation)
    expected = lab.array(lab.trace[names.mlp.out])
    return run_check(lab, f"feed-forward ({lab.cfg.activation})", fn, args, expected, STREAM_AXES,
                layer=layer, mistakes=mistakes)  # fmt: skip


def _block_variant(lab: Lab, layer: int, *, flip_norm: bool, use_mask: bool) -> np.ndarray:
    """Block `layer` run again on its live input with one thing changed, in float64."""
    block = copy.deepcopy(lab.model.layers[layer]).double().cpu()
    block.norm_first = block.norm_first != flip_norm
    x = torch.from_numpy(lab.array(lab.trace.hidden_states[layer]))
    key_padding = torch.from_numpy(~lab.key_is_token) if use_mask else None
    with torch.no_grad():
        return block(x, key_padding).numpy()


def _block_weights(lab: Lab, layer: int) -> dict[str, np.ndarray]:
    """Block `layer`'s weights by their torch names (block_parameters), every bias there: zeros
    where the model has none (linear_bias or norm_bias off)."""
    params = block_parameters(lab.model.state_dict(), layer)
    d = lab.cfg.d_model
    biases = {
        "self_attn.in_proj_bias": 3 * d,
        "self_attn.out_proj.bias": d,
        "linear1.bias": params["linear1.weight"].shape[0],  # F, or 2F gated
        "linear2.bias": d,
    }
    if lab.cfg.norm_type == "layernorm":  # RMSNorm has no bias to miss
        biases |= {f"{norm}.bias": d for norm in ("norm1", "norm2") if f"{norm}.weight" in params}
    return {**{name: np.zeros(width) for name, width in biases.items()}, **params}


def check_block(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(x, mask, params, num_heads, norm_first, activation, norm_type, eps) -> y. x [B, T, d]:
    block `layer`'s input; mask [B, T] bool, True for a real token; params: the block's weights
    by their torch names ("self_attn.in_proj_weight" [3d, d], "self_attn.in_proj_bias" [3d],
    "self_attn.out_proj.weight" [d, d], ".bias" [d], "linear1.weight" [F, d] ([2F, d] gated, as
    in check_feed_forward), "linear1.bias" [F] ([2F]), "linear2.weight" [d, F], "linear2.bias"
    [d], "norm1.weight" [d], "norm1.bias" [d] for LayerNorm, "norm2..." likewise; a bias the
    model lacks is zeros); norm_first True = pre-norm; activation as in check_feed_forward;
    y [B, T, d] the block's output. Refused with a ValueError for a RoPE model, a local layer
    and a block without an attention norm (the function is told of none of them)."""
    names = block_hooks(lab, layer)
    cfg = lab.cfg
    without_rope(lab, "check_block")
    global_layer_only(lab, layer, "check_block")
    if not cfg.has_attention_norm(layer):
        raise ValueError(
            f"block {layer} has no attention norm (its attention reads x itself), which the "
            f"function of check_block is not told: check block 1 or later, e.g. layer=1"
            if cfg.num_layers > 1
            else f"block {layer} has no attention norm (its attention reads x itself), which "
            f"the function of check_block is not told: check a model built with "
            f"first_attention_norm=True"
        )
    params = {name: lab.given(value) for name, value in _block_weights(lab, layer).items()}
    mistakes = (
        Mistake("pre/post swapped", wrong.NORM_SWAPPED,
                _block_variant(lab, layer, flip_norm=True, use_mask=True)),
        Mistake("no mask", wrong.NO_MASK,
                _block_variant(lab, layer, flip_norm=False, use_mask=False)),
    )  # fmt: skip
    x = lab.given(lab.trace.hidden_states[layer])
    mask = lab.given(lab.key_is_token)
    args = (x, mask, params, cfg.num_heads, cfg.norm_first, cfg.activation, cfg.norm_type,
            cfg.layer_norm_eps)  # fmt: skip
    expected = lab.array(lab.trace[names.resid_post])
    placement = "pre-norm" if cfg.norm_first else "post-norm"
    return run_check(lab, f"encoder block ({placement})", fn, args, expected, STREAM_AXES,
                layer=layer, mistakes=mistakes)  # fmt: skip


def check_positions(fn: Callable, lab: Lab) -> CheckResult:
    """fn(T, d) -> table [T, d]: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...),
    for T = the batch's tokens and d = the embeddings' width (d_model, or embedding_size where
    a projection to d_model follows the embeddings)."""
    cfg = lab.cfg
    if cfg.positional != "sinusoidal":
        raise ValueError(
            f"this model's positions are {cfg.positional}: check sinusoidal positions on a "
            f"model built with positional='sinusoidal' (e.g. setup(EncoderConfig()))"
        )
    if cfg.position_offset:
        raise ValueError(
            f"this model's tokens read the position table from row {cfg.position_offset} on "
            f"(position_offset={cfg.position_offset}), which fn(T, d) is not told: check a "
            f"model built with position_offset=0"
        )
    expected = lab.array(lab.trace[hooks.embed().position])
    T, d = expected.shape
    return run_check(lab, "sinusoidal positions", fn, (T, d), expected, ("position", "feature"),
                layer=None, mistakes=wrong.position_mistakes(T, d))  # fmt: skip


def check_padding_mask(fn: Callable, lab: Lab, layer: int = 0) -> CheckResult:
    """fn(scores, attention_mask) -> weights. scores [B, H, T, T]: block `layer`'s scaled scores
    with NO padding mask yet (with RoPE, of the turned q and k; in a local layer the keys
    outside the window are already -inf, as the model sets them); attention_mask [B, T] int,
    1 = token, 0 = padding; weights [B, H, T, T]: the softmax over keys with padded keys getting
    weight 0."""
    names = block_hooks(lab, layer)
    if lab.key_is_token.all():
        raise ValueError(
            "this lab's batch has no padding: give sentences of different lengths, e.g. "
            "setup(model, ['The cat sat on the mat.', 'Dogs bark.'])"
        )
    scores = raw_scores(lab, names) / math.sqrt(lab.cfg.head_dim)  # [B, H, T, T]
    # -inf where the model masks a real key: outside a local layer's window (none elsewhere)
    outside_window = ~seen_keys(lab, names) & lab.key_is_token[:, None, None, :]
    scores = np.where(outside_window, -np.inf, scores)
    args = (lab.given(scores), lab.given(lab.batch.attention_mask))
    expected = lab.array(lab.trace[names.attn.pattern])
    return run_check(lab, "padding mask", fn, args, expected, SCORE_AXES, layer=layer,
                mistakes=wrong.padding_mistakes(scores, lab.key_is_token))  # fmt: skip
