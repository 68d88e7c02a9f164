"""The common mistakes, computed: what each would produce from the live model's own tensors.

Each function changes ONE step of the computation and takes the rest from the trace, so a
student's numbers that match it name the step that went wrong. Arrays are float64 NumPy;
shapes as in encoder.core.hooks (B, H, T, dk, d, F).
"""

from __future__ import annotations

import math

import numpy as np

from encoder.core.options import ACTIVATION_NAMES
from encoder.core.said import Said
from encoder.exercises.result import Mistake
from encoder.inspect.numpy_block import ACTIVATIONS, gelu, gelu_tanh

# The activation a student might use instead of the model's: the other of ReLU and GELU (ReLU
# for GELU's tanh form, whose exact form is a mistake of its own), the other gated one.
OTHER_ACTIVATIONS = {
    "relu": ("gelu",),
    "gelu": ("relu",),
    "gelu_tanh": ("relu",),
    "geglu": ("swiglu",),
    "swiglu": ("geglu",),
}

MISSING_SQRT = Said("missing sqrt(d_k): divide q·k by sqrt(d_k), the square root of the head size")
BY_DK = Said("divided by d_k: the scale is sqrt(d_k), not d_k")
WRONG_AXIS = Said(
    "softmax over the wrong axis: each query's row (the last axis, over keys) must sum to 1; "
    "yours normalises over the queries"
)
NOT_NORMALISED = Said("exp without the division: divide each row by its sum so it sums to 1")
KEYS_QUERIES_SWAPPED = Said("rows are queries and columns keys: compute q @ k.T, not k @ q.T")
MASK_AFTER_SOFTMAX = Said(
    "the mask added after the softmax: set padded keys' scores to -inf BEFORE the softmax, so "
    "the real tokens' weights still sum to 1"
)
NO_MASK = Said(
    "the padding mask is missing: padded keys must get weight 0 (score -inf before softmax)"
)
MASK_ON_QUERIES = Said("the mask is on the queries (rows); it belongs on the keys (the last axis)")
MASK_INVERTED = Said("the mask is inverted: attention_mask is 1 for a real token and 0 for padding")
HEADS_RESHAPED = Said(
    "heads split by reshaping [B, T, d] straight to [B, H, T, dk]: reshape to [B, T, H, dk] "
    "first, then swap the T and H axes"
)
NO_OUTPUT_PROJECTION = Said(
    "the output projection is missing: concatenate the heads, then apply W_O"
)
BESSEL = Said(
    "variance with Bessel's correction (dividing by d - 1): LayerNorm divides by d "
    "(np.var's default ddof=0; torch.var needs unbiased=False)"
)
NO_GAIN_BIAS = Said("the learned gain and bias are missing: multiply by gain, then add bias")
NO_GAIN = Said("the learned gain is missing: multiply the normalised vector by gain")
NORM_WRONG_AXIS = Said(
    "normalised over the tokens: LayerNorm normalises each token over its features"
)
RMS_MEAN_SUBTRACTED = Said(
    "the mean subtracted: RMSNorm divides by the root mean square, no centring"
)
RMS_NO_SQRT = Said("no square root: divide by sqrt(mean(x^2) + eps), not by mean(x^2) + eps")
TANH_GELU = Said("the tanh approximation of GELU: this model uses the exact erf form")
ERF_GELU = Said(
    "the exact erf form of GELU: this model uses its tanh approximation, "
    "0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))"
)
NO_GATE = Said(
    "the gate is missing: w1's first F rows go through the activation, and the result is "
    "multiplied by the last F rows' output (the gate)"
)
HALVES_SWAPPED = Said(
    "the halves swapped: the activation takes w1's FIRST F rows' output, the gate is the last F"
)
NO_ACTIVATION = Said("the activation is missing between the two linear layers")
NORM_SWAPPED = Said(
    "pre- vs post-norm swapped: pre-norm is x + f(norm(x)); post-norm is norm(x + f(x))"
)
SIN_COS_SWAPPED = Said("sine and cosine swapped: even features take sin, odd features cos")
HALVES = Said(
    "sines and cosines side by side: they interleave (feature 2i is sin, 2i + 1 is cos of the "
    "same angle)"
)
EXPONENT_I = Said(
    "the exponent: the angle is pos / 10000^(2i / d) for the pair i, not pos / 10000^(i / d)"
)


def other_activation(name: str) -> Said:
    """The hint for the other activation than the model's `name` ("GELU")."""
    return Said(
        "the other activation: this model's feed-forward uses {activation}", activation=name
    )


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable softmax; a slice that is all -inf gives NaN, as the mistaken code would."""
    with np.errstate(invalid="ignore"):
        shifted = x - x.max(axis=axis, keepdims=True)
        e = np.exp(shifted)
        return e / e.sum(axis=axis, keepdims=True)


def masked(scores: np.ndarray, key_is_token: np.ndarray) -> np.ndarray:
    """[B, H, T, T] scores with padded keys set to -inf; key_is_token [B, T]."""
    return np.where(key_is_token[:, None, None, :], scores, -np.inf)


def weight_mistakes(
    raw: np.ndarray, dk: int, key_is_token: np.ndarray
) -> list[tuple[str, str, np.ndarray]]:
    """(name, hint, weights [B, H, T, T]) for each mistake between q·k and the weights.
    raw: q @ k^T, unscaled, unmasked."""
    scaled = raw / math.sqrt(dk)
    keep = key_is_token[:, None, None, :]
    return [
        ("missing sqrt", MISSING_SQRT, softmax(masked(raw, key_is_token))),
        ("divided by d_k", BY_DK, softmax(masked(raw / dk, key_is_token))),
        ("softmax axis", WRONG_AXIS, softmax(masked(scaled, key_is_token), axis=-2)),
        ("mask after softmax", MASK_AFTER_SOFTMAX, softmax(scaled) * keep),
        ("no mask", NO_MASK, softmax(scaled)),
    ]


def split_heads_wrongly(x: np.ndarray, heads: int) -> np.ndarray:
    """[B, T, d] reshaped straight to [B, H, T, dk]: the classic split-heads mistake."""
    B, T, d = x.shape
    return x.reshape(B, heads, T, d // heads)


def merge_heads(z: np.ndarray) -> np.ndarray:
    """[B, H, T, dk] -> [B, T, d], heads side by side."""
    B, H, T, dk = z.shape
    return z.transpose(0, 2, 1, 3).reshape(B, T, H * dk)


def layer_norm_mistakes(
    x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float
) -> tuple[Mistake, ...]:
    """x [B, T, d]: Bessel's correction, no gain and bias, normalised over the tokens."""

    def norm(values: np.ndarray, axis: int = -1, ddof: int = 0) -> np.ndarray:
        mean = values.mean(axis=axis, keepdims=True)
        return (values - mean) / np.sqrt(values.var(axis=axis, ddof=ddof, keepdims=True) + eps)

    return (
        Mistake("Bessel's correction", BESSEL, norm(x, ddof=1) * gain + bias),
        Mistake("no gain or bias", NO_GAIN_BIAS, norm(x)),
        Mistake("wrong axis", NORM_WRONG_AXIS, norm(x, axis=-2) * gain + bias),
    )


def rms_norm_mistakes(x: np.ndarray, gain: np.ndarray, eps: float) -> tuple[Mistake, ...]:
    """x [B, T, d]: the mean subtracted, no square root, no gain."""
    mean_square = (x**2).mean(-1, keepdims=True)
    centred = x - x.mean(-1, keepdims=True)
    return (
        Mistake(
            "mean subtracted",
            RMS_MEAN_SUBTRACTED,
            centred / np.sqrt((centred**2).mean(-1, keepdims=True) + eps) * gain,
        ),
        Mistake("no square root", RMS_NO_SQRT, x / (mean_square + eps) * gain),
        Mistake("no gain", NO_GAIN, x / np.sqrt(mean_square + eps)),
    )


def feed_forward_mistakes(
    pre: np.ndarray, gate: np.ndarray | None, w2: np.ndarray, b2: np.ndarray, activation: str
) -> tuple[Mistake, ...]:
    """pre: the live [B, T, F] that goes through the activation; gate: the live [B, T, F] that
    multiplies it in a gated feed-forward (None otherwise). Each mistake changes one step."""
    act = ACTIVATIONS[activation]
    name = ACTIVATION_NAMES[activation]

    def out(hidden: np.ndarray) -> np.ndarray:  # [B, T, F] -> [B, T, d]
        return hidden @ w2.T + b2

    times = 1 if gate is None else gate
    found = [
        Mistake("other activation", other_activation(name),
                out(ACTIVATIONS[other](pre) * times))
        for other in OTHER_ACTIVATIONS[activation]
    ]  # fmt: skip
    if activation == "gelu":
        found.append(Mistake("tanh GELU", TANH_GELU, out(gelu_tanh(pre))))
    if activation == "gelu_tanh":
        found.append(Mistake("exact GELU", ERF_GELU, out(gelu(pre))))
    if gate is not None:
        found += [
            Mistake("no gate", NO_GATE, out(act(pre))),
            Mistake("halves swapped", HALVES_SWAPPED, out(act(gate) * pre)),
        ]
    return (*found, Mistake("no activation", NO_ACTIVATION, out(pre * times)))


def position_mistakes(T: int, d: int) -> tuple[Mistake, ...]:
    """[T, d] tables with one step wrong."""
    pos = np.arange(T, dtype=np.float64)[:, None]  # [T, 1]
    pair = np.arange(d // 2, dtype=np.float64)[None, :]  # [1, d/2]
    angle = pos / 10000 ** (2 * pair / d)  # [T, d/2]
    small_angle = pos / 10000 ** (pair / d)

    def interleave(even: np.ndarray, odd: np.ndarray) -> np.ndarray:
        table = np.empty((T, d))
        table[:, 0::2], table[:, 1::2] = even, odd
        return table

    return (
        Mistake("sin and cos swapped", SIN_COS_SWAPPED, interleave(np.cos(angle), np.sin(angle))),
        Mistake("halves", HALVES, np.concatenate([np.sin(angle), np.cos(angle)], axis=-1)),
        Mistake("exponent i/d", EXPONENT_I, interleave(np.sin(small_angle), np.cos(small_angle))),
    )


def padding_mistakes(scores: np.ndarray, mask: np.ndarray) -> tuple[Mistake, ...]:
    """scores [B, H, T, T] scaled and unmasked; mask [B, T] True = token."""
    with np.errstate(invalid="ignore"):
        on_queries = np.where(mask[:, None, :, None], scores, -np.inf)
    return (
        Mistake("mask after softmax", MASK_AFTER_SOFTMAX, softmax(scores) * mask[:, None, None, :]),
        Mistake("no mask", NO_MASK, softmax(scores)),
        Mistake("mask on queries", MASK_ON_QUERIES, softmax(on_queries)),
        Mistake("mask inverted", MASK_INVERTED, softmax(masked(scores, ~mask))),
    )
