"""Reference solutions of the exercises (NumPy), and the common mistakes written as a student
would write them. They live here, in the tests, never in the package: the notebook's test fills
its stubs with these, and the checker tests check that each one passes or gets the right hint.
"""

from __future__ import annotations

import math

import numpy as np


def softmax(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scores(q, k):
    return q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])


def head_attention(q, k, v, mask):
    s = np.where(mask[:, None, :], scores(q, k), -np.inf)  # [B, T, T]
    return softmax(s) @ v


def multi_head_attention(x, mask, w_qkv, b_qkv, w_out, b_out, num_heads):
    scale = 1 / math.sqrt(x.shape[-1] // num_heads)
    return attention_scaled(x, mask, w_qkv, b_qkv, w_out, b_out, num_heads, scale)


def attention_scaled(x, mask, w_qkv, b_qkv, w_out, b_out, num_heads, scale):
    B, T, d = x.shape
    q, k, v = np.split(x @ w_qkv.T + b_qkv, 3, axis=-1)
    q, k, v = (m.reshape(B, T, num_heads, d // num_heads).transpose(0, 2, 1, 3) for m in (q, k, v))
    s = np.where(mask[:, None, None, :], q @ k.swapaxes(-1, -2) * scale, -np.inf)
    z = (softmax(s) @ v).transpose(0, 2, 1, 3).reshape(B, T, d)
    return z @ w_out.T + b_out


def layer_norm(x, gain, bias, eps):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps) * gain + bias


def rms_norm(x, gain, eps):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + eps) * gain


def gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def silu(x):
    return x / (1 + np.exp(-x))


def relu(x):
    return np.maximum(x, 0)


ACTIVATIONS = {"relu": relu, "gelu": gelu, "gelu_tanh": gelu_tanh, "geglu": gelu, "swiglu": silu}


def feed_forward(x, w1, b1, w2, b2, activation):
    hidden = x @ w1.T + b1
    if activation in ("geglu", "swiglu"):  # the first F features through act, times the last F
        hidden, gate = np.split(hidden, 2, axis=-1)
        return (ACTIVATIONS[activation](hidden) * gate) @ w2.T + b2
    return ACTIVATIONS[activation](hidden) @ w2.T + b2


def block(x, mask, params, num_heads, norm_first, activation, norm_type, eps):
    def norm(h, i):
        if norm_type == "rmsnorm":
            return rms_norm(h, params[f"norm{i}.weight"], eps)
        return layer_norm(h, params[f"norm{i}.weight"], params[f"norm{i}.bias"], eps)

    def attend(h):
        return multi_head_attention(
            h, mask, params["self_attn.in_proj_weight"], params["self_attn.in_proj_bias"],
            params["self_attn.out_proj.weight"], params["self_attn.out_proj.bias"], num_heads,
        )  # fmt: skip

    def ff(h):
        p = params
        return feed_forward(h, p["linear1.weight"], p["linear1.bias"], p["linear2.weight"],
                            p["linear2.bias"], activation)  # fmt: skip

    if norm_first:
        x = x + attend(norm(x, 1))
        return x + ff(norm(x, 2))
    x = norm(x + attend(x), 1)
    return norm(x + ff(x), 2)


def positions(T, d):
    pos = np.arange(T)[:, None]
    angle = pos / 10000 ** (np.arange(0, d, 2)[None, :] / d)
    table = np.zeros((T, d))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


def padding_mask(scores, attention_mask):
    return softmax(np.where(attention_mask[:, None, None, :] == 1, scores, -np.inf))


# The same in torch, for the torch backend.
def torch_layer_norm(x, gain, bias, eps):
    import torch

    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gain + bias


# Mistakes, as a student makes them.
def softmax_wrong_axis(s):
    with np.errstate(invalid="ignore"):  # a padded key's column is all -inf
        e = np.exp(s - s.max(axis=-2, keepdims=True))
        return e / e.sum(axis=-2, keepdims=True)


def scores_no_sqrt(q, k):
    return q @ k.swapaxes(-1, -2)


def head_attention_no_sqrt(q, k, v, mask):
    return softmax(np.where(mask[:, None, :], q @ k.swapaxes(-1, -2), -np.inf)) @ v


def head_attention_mask_after_softmax(q, k, v, mask):
    return softmax(scores(q, k)) * mask[:, None, :] @ v


def head_attention_wrong_axis(q, k, v, mask):
    return softmax_wrong_axis(np.where(mask[:, None, :], scores(q, k), -np.inf)) @ v


def layer_norm_bessel(x, gain, bias, eps):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, ddof=1, keepdims=True) + eps) * gain + bias


def rms_norm_centred(x, gain, eps):
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c**2).mean(-1, keepdims=True) + eps) * gain


def feed_forward_other_activation(x, w1, b1, w2, b2, activation):
    return feed_forward(x, w1, b1, w2, b2, "relu" if activation == "gelu" else "gelu")


def block_swapped(x, mask, params, num_heads, norm_first, activation, norm_type, eps):
    return block(x, mask, params, num_heads, not norm_first, activation, norm_type, eps)


def positions_swapped(T, d):
    table = positions(T, d)
    return np.stack([table[:, 1::2], table[:, 0::2]], axis=-1).reshape(T, d)


def padding_mask_after_softmax(scores, attention_mask):
    return softmax(scores) * attention_mask[:, None, None, :]


def multi_head_attention_no_sqrt(x, mask, w_qkv, b_qkv, w_out, b_out, num_heads):
    return attention_scaled(x, mask, w_qkv, b_qkv, w_out, b_out, num_heads, scale=1.0)
