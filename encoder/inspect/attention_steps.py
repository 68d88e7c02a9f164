"""One query's attention computation, step by step, with the numbers a forward pass produced.

For one (sentence, layer, head, query) this gathers, in the order the data flows: the block's
input row x_i (and, pre-norm, the normalised row the attention reads), the head's slice of W_Q
giving q_i, every key k_j and value v_j, with RoPE q_i and every k_j turned by their positions
(and the angle each pair of dimensions turned, read from the vectors), the score table (q.k,
scaled by sqrt(d_k), masked for padding and, in a local layer, outside the window, the softmax
weight, the size of weight_j v_j), z_i = sum_j weight_j v_j, every head's z_i side by side, the
projection by W_O, the residual add and, post-norm, the norm after it.

Every number is read from the Trace's hooks (`names_for_steps` lists the ones needed) or from the
model's weights (`head_weights`); only q.k, which the model never stores unscaled, and the softmax
of the unscaled scores (the "why sqrt(d_k)" comparison) are computed here. Values keep the
trace's full precision; rounding is for whoever displays them.

Shapes: T = tokens (with padding), d = d_model, H = heads, dk = d / H.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import attention_path
from encoder.inspect.measures import entropy

TABLE_COLUMNS = (
    "position",
    "key",
    "padding",
    "outside_window",
    "q_dot_k",
    "scaled",
    "masked",
    "weight",
    "contribution_norm",
)


def names_for_steps(cfg: EncoderConfig, layer: int) -> list[str]:
    """The hooks of `layer` that `attention_steps` reads (the block input is always traced)."""
    _check_index("layer", layer, cfg.num_layers)
    block = hooks.block(layer)
    a = block.attn
    ln1 = block.ln1.names if cfg.has_attention_norm(layer) else ()  # ModernBERT's block 0: none
    rotated = (a.rot_q, a.rot_k) if cfg.positional == "rope" else ()
    return [*ln1, a.q, a.k, a.v, *rotated, a.scores, a.pattern, a.z, a.out, block.resid_mid]


def rope_angles(cfg: EncoderConfig, layer: int, position: int) -> np.ndarray:
    """[dk / 2] the angle (radians) RoPE turns each pair of dimensions (j, j + dk/2) at
    `position` in block `layer`: position * base^(-2j / dk)."""
    dk = cfg.head_dim
    pairs = np.arange(dk // 2, dtype=np.float64)
    return position * cfg.rope_base_of(layer) ** (-2 * pairs / dk)


def pair_angles(vector: np.ndarray) -> np.ndarray:
    """[dk / 2] the angle of each pair (x_j, x_{j + dk/2}) of a [dk] vector in its plane (the
    half-split pairing RoPE uses)."""
    half = vector.shape[-1] // 2
    return np.arctan2(vector[..., half:], vector[..., :half])


def turned_by(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """[dk / 2] the angle each pair turned from `before` to `after`, in (-pi, pi]."""
    turn = pair_angles(np.asarray(after, np.float64)) - pair_angles(np.asarray(before, np.float64))
    return np.angle(np.exp(1j * turn))


@dataclass(frozen=True)
class HeadWeights:
    """One head's slices of the layer's projections (x @ W.T + b, as nn.Linear computes) that the
    steps show: W_Q (its k and v are read from the trace's hooks) and W_O."""

    w_q: torch.Tensor  # [dk, d]
    b_q: torch.Tensor  # [dk]
    b_o: torch.Tensor  # [d] the whole output projection's bias, added once after every head
    w_o_head: torch.Tensor  # [d, dk] the columns of W_O that read this head's z


def head_weights(
    cfg: EncoderConfig, weights: Mapping[str, torch.Tensor], layer: int, head: int
) -> HeadWeights:
    """The head's W_Q rows and bias, and W_O's bias and this head's columns, on the CPU, from a
    model's state_dict."""
    _check_index("layer", layer, cfg.num_layers)
    _check_index("head", head, cfg.num_heads)
    path = attention_path(layer)

    def weight(name: str) -> torch.Tensor:
        return weights[f"{path}.{name}"].detach().cpu()

    def bias(name: str, size: int) -> torch.Tensor:  # zeros in a model without biases
        found = weights.get(f"{path}.{name}")
        return torch.zeros(size) if found is None else found.detach().cpu()

    d, dk = cfg.d_model, cfg.head_dim
    # in_proj rows are [W_q; W_k; W_v], each [d, d]: head h owns W_q's rows h*dk:(h+1)*dk, and
    # the same columns of W_O
    rows = slice(head * dk, (head + 1) * dk)
    in_proj, in_bias = weight("in_proj_weight"), bias("in_proj_bias", 3 * d)  # [3d, d], [3d]
    return HeadWeights(
        w_q=in_proj[rows],
        b_q=in_bias[rows],
        b_o=bias("out_proj.bias", d),
        w_o_head=weight("out_proj.weight")[:, rows],
    )


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax of a score row in float64 (-inf entries get weight 0)."""
    scores = np.asarray(scores, dtype=np.float64)
    shifted = np.exp(scores - scores[np.isfinite(scores)].max())
    return shifted / shifted.sum()


def scored_qk(trace: Trace, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[B, H, T, dk] q and k of `layer` as its scores are made of them: with RoPE the turned ones
    (hook_rot_q, hook_rot_k), else hook_q and hook_k."""
    a = hooks.block(layer).attn
    rotated = a.rot_q in trace.tensors
    return trace[a.rot_q if rotated else a.q], trace[a.rot_k if rotated else a.k]


def step_table(
    trace: Trace, sentence: int, layer: int, head: int, query: int, tokens: list[str]
) -> pd.DataFrame:
    """One row per key position j for query i: position, key (token), padding, outside_window
    (a real key the model's local window masked: its score is -inf), q_dot_k = q_i.k_j (with
    RoPE, of the rotated q_i and k_j: what the model's scores are made of), scaled
    (q_dot_k / sqrt(dk); the model's score for the keys it does not mask), masked (the model's
    score: -inf for padding and outside the window), weight (the model's softmax: the head's
    attention row for this query) and contribution_norm = ||weight_j v_j||. Floats are float64
    copies of the trace's values."""
    _check_position(trace, sentence, layer, query)
    a = hooks.block(layer).attn
    _check_index("head", head, trace[a.q].shape[1])
    T = trace.input_ids.shape[1]
    if len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens given for a sentence of {T} positions")
    q_all, k_all = scored_qk(trace, layer)  # RoPE: the scores are made of the rotated q and k
    q = q_all[sentence, head, query].double()  # [dk]
    keys = k_all[sentence, head].double()  # [T, dk]
    values = trace[a.v][sentence, head].double()  # [T, dk]
    masked = trace[a.scores][sentence, head, query].double()  # [T] the model's scores
    weight = trace[a.pattern][sentence, head, query].double()  # [T] the model's softmax
    padding = trace.attention_mask[sentence] == 0  # [T]
    outside = ~padding & torch.isneginf(masked)  # [T] real keys the window masked
    q_dot_k = keys @ q  # [T]
    scaled = torch.where(masked.isfinite(), masked, q_dot_k / math.sqrt(q.shape[0]))
    contribution = weight * values.norm(dim=-1)  # [T] ||weight_j v_j||
    return pd.DataFrame(
        {
            "position": np.arange(T),
            "key": list(tokens),
            "padding": padding.numpy(),
            "outside_window": outside.numpy(),
            "q_dot_k": q_dot_k.numpy(),
            "scaled": scaled.numpy(),
            "masked": masked.numpy(),
            "weight": weight.numpy(),
            "contribution_norm": contribution.numpy(),
        },
        columns=list(TABLE_COLUMNS),
    )


@dataclass(frozen=True)
class AttentionSteps:
    """Everything one query's attention computation shows, in data-flow order (numpy arrays)."""

    sentence: int
    layer: int
    head: int
    query: int
    n_valid: int  # real tokens of the sentence; positions n_valid.. are padding
    norm_first: bool
    norm_type: str  # "layernorm" | "rmsnorm": what ln1 does (RMSNorm: no mean, no bias)
    norm_bias: bool  # whether a LayerNorm adds a bias after its gain
    head_dim: int
    block_input: np.ndarray  # [d] x_i, the residual stream entering the block
    normalised: np.ndarray | None  # [d] ln1(x_i), what attention reads (pre-norm only; x_i in
    # a block without ln1)
    # ln1's mean and std of its input row (pre: x_i; post: x_i + attn_out); nan without ln1
    ln1_mean: float
    ln1_std: float
    w_q: np.ndarray  # [dk, d] the head's rows of W_Q
    b_q: np.ndarray  # [dk]
    q: np.ndarray  # [dk] q_i = W_Q x + b_Q (x = what attention reads)
    keys: np.ndarray  # [T, dk] k_j
    values: np.ndarray  # [T, dk] v_j
    # RoPE (None without): q_i and every k_j turned by their positions (the model's hook_rot_q,
    # hook_rot_k), the base of this layer, the angle each pair (j, j + dk/2) of q_i turned, read
    # from the two vectors, in (-pi, pi], and the angle RoPE's formula gives it
    # (query * base^(-2j/dk), not brought into (-pi, pi])
    rotated_q: np.ndarray | None  # [dk]
    rotated_keys: np.ndarray | None  # [T, dk]
    rope_base: float | None
    q_turned: np.ndarray | None  # [dk / 2]
    rope_angles: np.ndarray | None  # [dk / 2]
    # The local window: the model's width (0: none), the layers it acts in, its width in this
    # layer (0: this layer is global), and the query-key pairs of the sentence's real tokens
    # whose score the model set to -inf (read from the head's scores; every head of a layer masks
    # the same pairs)
    model_window: int
    num_layers: int
    local_layers: tuple[int, ...]
    window: int
    outside_window: np.ndarray  # [T, T] bool
    pattern: np.ndarray  # [T, T] the head's attention weights (query rows, key columns)
    table: pd.DataFrame  # step_table's rows
    # [T] softmax(q.k) without the 1/sqrt(dk), padding (and keys outside the window) masked
    unscaled_weight: np.ndarray
    entropy: float  # of `table.weight` (nats)
    unscaled_entropy: float  # of `unscaled_weight` (nats)
    weighted_values: np.ndarray  # [T, dk] weight_j v_j
    z: np.ndarray  # [dk] z_i = sum_j weight_j v_j (the model's hook_z row)
    all_z: np.ndarray  # [H, dk] every head's z_i at this query
    b_o: np.ndarray  # [d] the output projection's bias
    head_share: np.ndarray  # [d] W_O[:, this head's columns] z_i: this head's part of attn_out
    attention_out: np.ndarray  # [d] concat(all z_i) W_O^T + b_O (the model's hook_out row)
    residual_sum: np.ndarray  # [d] x_i + attn_out
    block_mid: np.ndarray  # [d] the stream after attention: the sum (pre) or ln1(sum) (post)

    @property
    def d_model(self) -> int:
        return self.block_input.shape[0]

    @property
    def num_heads(self) -> int:
        return self.all_z.shape[0]


def _rope_fields(
    cfg: EncoderConfig,
    trace: Trace,
    sentence: int,
    layer: int,
    head: int,
    query: int,
    q: np.ndarray,
) -> dict:
    """AttentionSteps' RoPE fields: q_i and every k_j turned, the base, the angles (None
    without RoPE)."""
    if cfg.positional != "rope":
        return dict.fromkeys(("rotated_q", "rotated_keys", "rope_base", "q_turned", "rope_angles"))
    a = hooks.block(layer).attn
    rotated_q = trace[a.rot_q][sentence, head, query].numpy()  # [dk]
    return {
        "rotated_q": rotated_q,
        "rotated_keys": trace[a.rot_k][sentence, head].numpy(),  # [T, dk]
        "rope_base": cfg.rope_base_of(layer),
        "q_turned": turned_by(q, rotated_q),
        "rope_angles": rope_angles(cfg, layer, query),
    }


def _window_fields(cfg: EncoderConfig, trace: Trace, sentence: int, layer: int, head: int) -> dict:
    """AttentionSteps' local window fields: the model's width, its layers, this layer's width,
    and the real tokens' query-key pairs whose score the model set to -inf."""
    real = trace.attention_mask[sentence].bool()  # [T]
    scores = trace[hooks.block(layer).attn.scores][sentence, head]  # [T, T]
    outside = torch.isneginf(scores) & real[:, None] & real[None, :]  # [T, T]
    return {
        "model_window": cfg.attention_window,
        "num_layers": cfg.num_layers,
        "local_layers": tuple(i for i in range(cfg.num_layers) if cfg.is_local(i)),
        "window": cfg.attention_window if cfg.is_local(layer) else 0,
        "outside_window": outside.numpy(),
    }


def _unscaled_fields(table: pd.DataFrame) -> dict:
    """AttentionSteps' softmax of the unscaled scores (the keys the model masks left out), and
    both softmaxes' entropy."""
    hidden = (table["padding"] | table["outside_window"]).to_numpy()  # keys the model masks
    unscaled = softmax(np.where(hidden, -np.inf, table["q_dot_k"].to_numpy()))
    return {
        "unscaled_weight": unscaled,
        "entropy": float(entropy(torch.tensor(table["weight"].to_numpy()))),
        "unscaled_entropy": float(entropy(torch.tensor(unscaled))),
    }


def attention_steps(
    cfg: EncoderConfig,
    weights: Mapping[str, torch.Tensor],
    trace: Trace,
    sentence: int,
    layer: int,
    head: int,
    query: int,
    tokens: list[str],
) -> AttentionSteps:
    """The steps for one query, from the trace and the model's state_dict (`weights`); `trace`
    must keep `names_for_steps(cfg, layer)`."""
    head_w = head_weights(cfg, weights, layer, head)
    table = step_table(trace, sentence, layer, head, query, tokens)
    block = hooks.block(layer)
    a = block.attn

    def row(name: str) -> np.ndarray:  # the query's row of a [B, T, ...] hook
        return trace[name][sentence, query].numpy()

    block_input = trace.hidden_states[layer][sentence, query].numpy()  # [d]
    has_ln1 = cfg.has_attention_norm(layer)  # ModernBERT's block 0 reads x itself
    attention_out = row(a.out)  # [d]
    z = trace[a.z][sentence, head, query]  # [dk]
    values = trace[a.v][sentence, head].numpy()  # [T, dk]
    q = trace[a.q][sentence, head, query].numpy()  # [dk]
    return AttentionSteps(
        sentence=sentence,
        layer=layer,
        head=head,
        query=query,
        n_valid=int(trace.attention_mask[sentence].sum()),
        norm_first=cfg.norm_first,
        norm_type=cfg.norm_type,
        norm_bias=cfg.norm_bias,
        head_dim=cfg.head_dim,
        block_input=block_input,
        normalised=(row(block.ln1.out) if has_ln1 else block_input) if cfg.norm_first else None,
        ln1_mean=float(row(block.ln1.mean)) if has_ln1 else math.nan,
        ln1_std=float(row(block.ln1.std)) if has_ln1 else math.nan,
        w_q=head_w.w_q.numpy(),
        b_q=head_w.b_q.numpy(),
        q=q,
        keys=trace[a.k][sentence, head].numpy(),
        values=values,
        **_rope_fields(cfg, trace, sentence, layer, head, query, q),
        **_window_fields(cfg, trace, sentence, layer, head),
        pattern=trace[a.pattern][sentence, head].numpy(),
        table=table,
        **_unscaled_fields(table),
        weighted_values=table["weight"].to_numpy()[:, None] * values,
        z=z.numpy(),
        all_z=trace[a.z][sentence, :, query].numpy(),
        b_o=head_w.b_o.numpy(),
        head_share=(head_w.w_o_head @ z).numpy(),
        attention_out=attention_out,
        residual_sum=row(block.resid_mid) if cfg.norm_first else row(block.ln1.inp),
        block_mid=row(block.resid_mid),
    )


def _check_index(what: str, index: int, count: int) -> None:
    if not 0 <= index < count:
        raise ValueError(f"{what} {index} does not exist: this model has {what}s 0..{count - 1}")


def _check_position(trace: Trace, sentence: int, layer: int, query: int) -> None:
    B, T = trace.input_ids.shape
    _check_index("sentence", sentence, B)
    _check_index("layer", layer, trace.num_layers)
    if not 0 <= query < T:
        raise ValueError(f"query position {query} does not exist: positions are 0..{T - 1}")
