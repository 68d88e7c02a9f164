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


def relu(x):
    return np.maximum(x, 0)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def self_attention(x, mask, w_qkv, b_qkv, w_out, b_out, heads):
    B, T, d = x.shape
    q, k, v = np.split(x @ w_qkv.T + b_qkv, 3, axis=-1)  # [B, T, d] each
    q, k, v = (m.reshape(B, T, heads, d // heads).transpose(0, 2, 1, 3) for m in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d // heads)  # [B, H, T, T]
    scores = np.where(mask[:, None, None, :], scores, -np.inf)  # padding gets no weight
    z = softmax(scores) @ v  # [B, H, T, dk]
    return z.transpose(0, 2, 1, 3).reshape(B, T, d) @ w_out.T + b_out


def encoder_block(
    x, mask, p, heads, norm_first, activation="gelu", norm_type="layernorm", eps=1e-5
):
    def norm(h, i):
        if norm_type == "rmsnorm":
            return rms_norm(h, p[f"norm{i}.weight"], eps)
        return layer_norm(h, p[f"norm{i}.weight"], p[f"norm{i}.bias"], eps)

    def attend(h):
        w_qkv, b_qkv = p["self_attn.in_proj_weight"], p["self_attn.in_proj_bias"]
        w_out, b_out = p["self_attn.out_proj.weight"], p["self_attn.out_proj.bias"]
        return self_attention(h, mask, w_qkv, b_qkv, w_out, b_out, heads)

    def feed_forward(h):
        act = gelu if activation == "gelu" else relu
        hidden = act(h @ p["linear1.weight"].T + p["linear1.bias"])  # [B, T, d_ff]
        return hidden @ p["linear2.weight"].T + p["linear2.bias"]

    if norm_first:  # pre-norm: x + f(norm(x))
        x = x + attend(norm(x, 1))
        return x + feed_forward(norm(x, 2))
    x = norm(x + attend(x), 1)  # post-norm: norm(x + f(x))
    return norm(x + feed_forward(x), 2)
