"""One encoder block from scratch, in plain NumPy: what the lesson shows beside the torch model.

No torch here: arrays in, arrays out, in the form of the encoder tutorials. `p` holds one block's
weights under their state_dict names without the `layers.{i}.` prefix (encoder.inspect.lesson's
`block_parameters` makes it); x is [B, T, d], mask [B, T] with True for real tokens.
"""

import math

import numpy as np

erf = np.vectorize(math.erf)  # exact erf, element by element


def layer_norm(x, gain, bias, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gain + bias


def rms_norm(x, gain, eps):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * gain


def gelu(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def silu(x):
    return x / (1 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0)


# each activation's function (GeGLU and SwiGLU: of the first half of linear1's output, times
# the second half)
ACTIVATIONS = {"relu": relu, "gelu": gelu, "gelu_tanh": gelu_tanh, "geglu": gelu, "swiglu": silu}


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def rope(x, base):
    """Turn each pair (x_j, x_{j + dk/2}) of x [B, H, T, dk] by the angle t * base^(-2j/dk)."""
    T, dk = x.shape[-2:]
    angle = np.arange(T)[:, None] * base ** (-np.arange(0, dk, 2) / dk)  # [T, dk/2]
    first, second = x[..., : dk // 2], x[..., dk // 2 :]
    cos, sin = np.cos(angle), np.sin(angle)
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def self_attention(x, mask, w_qkv, b_qkv, w_out, b_out, heads, rope_base=None, window=0):
    B, T, d = x.shape
    q, k, v = np.split(x @ w_qkv.T + b_qkv, 3, axis=-1)  # [B, T, d] each
    q, k, v = (m.reshape(B, T, heads, d // heads).transpose(0, 2, 1, 3) for m in (q, k, v))
    if rope_base is not None:  # rotary positions: q and k turned by where they sit
        q, k = rope(q, rope_base), rope(k, rope_base)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads)  # [B, H, T, T]
    seen = mask[:, None, None, :]  # padding gets no weight
    if window:  # a local layer: a real query sees the keys within window // 2 of it
        near = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :]) <= window // 2  # [T, T]
        seen = seen & (near | ~mask[:, None, :, None])
    scores = np.where(seen, scores, -np.inf)
    z = softmax(scores) @ v  # [B, H, T, dk]
    return z.transpose(0, 2, 1, 3).reshape(B, T, d) @ w_out.T + b_out


def encoder_block(
    x, mask, p, heads, norm_first, act, gated=False, norm_type="layernorm", eps=1e-5,
    rope_base=None, window=0,
):  # fmt: skip
    """`act`: the activation (gated: of one half of linear1's output, times the other half). A
    bias missing from p counts as 0; a missing norm1 (ModernBERT's block 0) as none."""

    def norm(h, i):
        if f"norm{i}.weight" not in p:
            return h
        if norm_type == "rmsnorm":
            return rms_norm(h, p[f"norm{i}.weight"], eps)
        else:
            return layer_norm(h, p[f"norm{i}.weight"], p.get(f"norm{i}.bias", 0), eps)

    def attend(h):
        w_qkv, b_qkv = p["self_attn.in_proj_weight"], p.get("self_attn.in_proj_bias", 0)
        w_out, b_out = p["self_attn.out_proj.weight"], p.get("self_attn.out_proj.bias", 0)
        return self_attention(h, mask, w_qkv, b_qkv, w_out, b_out, heads, rope_base, window)

    def feed_forward(h):
        hidden = h @ p["linear1.weight"].T + p.get("linear1.bias", 0)  # [B, T, d_ff] (gated: 2x)
        if gated:  # GeGLU, SwiGLU: the activation of one half times the other half
            hidden, gate = np.split(hidden, 2, axis=-1)
            hidden = act(hidden) * gate
        else:
            hidden = act(hidden)
        return hidden @ p["linear2.weight"].T + p.get("linear2.bias", 0)

    if norm_first:  # pre-norm: x + f(norm(x))
        x = x + attend(norm(x, 1))
        x = x + feed_forward(norm(x, 2))
    else:  # post-norm: norm(x + f(x))
        x = norm(x + attend(x), 1)
        x = norm(x + feed_forward(x), 2)
    return x
