"""The neuron view's numbers: how one attention score is made, dimension by dimension.

For one (sentence, layer, head, query, key): q_i and k_j as the scores use them (with RoPE, the
rotated ones: attention_steps.scored_qk), their elementwise product, its sum q.k, the scale
1/sqrt(dk), the model's score (its hook_scores cell: -inf where a padding key or a local window
masks it) and the softmax weight (its hook_pattern cell). `qk_vectors` gives every head's q and k
for a payload, so that a browser recomputes any cell without Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.said import Quoted, Said, formatted
from encoder.inspect.attention_steps import _check_index, _check_position, scored_qk


def qk_names(cfg: EncoderConfig, layers: range | None = None) -> list[str]:
    """The hooks of q and k as the scores use them (RoPE's turned ones) in `layers` (all)."""
    names = []
    for layer in range(cfg.num_layers) if layers is None else layers:
        a = hooks.block(layer).attn
        names += [a.rot_q, a.rot_k] if cfg.positional == "rope" else [a.q, a.k]
    return names


def names_for_neuron(cfg: EncoderConfig, layer: int) -> list[str]:
    """The hooks of `layer` that `neuron_cell` reads."""
    _check_index("layer", layer, cfg.num_layers)
    a = hooks.block(layer).attn
    return [*qk_names(cfg, range(layer, layer + 1)), a.scores, a.pattern]


@dataclass(frozen=True)
class NeuronCell:
    """One attention cell, made: q, k (float64, [dk]), q * k and what follows from it."""

    layer: int
    head: int
    query: int
    key: int
    rotated: bool  # q and k are RoPE's turned ones
    q: np.ndarray  # [dk]
    k: np.ndarray  # [dk]
    product: np.ndarray  # [dk] q * k
    dot: float  # sum of the product: q.k
    scale: float  # 1 / sqrt(dk)
    score: float  # the model's score (-inf: masked)
    masked: bool  # padding or outside the local window: weight 0
    weight: float  # the model's softmax weight
    keys: int  # the keys the softmax is over (those not masked)

    @property
    def head_dim(self) -> int:
        return self.q.shape[0]

    def said(self, tokens: list[str]) -> Said:
        """The cell in one sentence: 'q·k = 3.21, × 1/√32 = 0.568; after the softmax over 9
        keys: 0.31'."""
        values = {
            "query": Quoted(tokens[self.query]),
            "key": Quoted(tokens[self.key]),
            "dot": formatted(self.dot, ".3g"),
            "dk": self.head_dim,
        }
        if self.masked:
            return Said("{query} → {key}: q·k = {dot}, but the key is masked: weight 0.", **values)
        return Said.plural(
            "{query} → {key}: q·k = {dot}, × 1/√{dk} = {score}; after the softmax over "
            "{count} key: {weight}.",
            "{query} → {key}: q·k = {dot}, × 1/√{dk} = {score}; after the softmax over "
            "{count} keys: {weight}.",
            self.keys,
            score=formatted(self.score, ".3g"),
            weight=formatted(self.weight, ".3g"),
            **values,
        )


def neuron_cell(
    trace: Trace, sentence: int, layer: int, head: int, query: int, key: int
) -> NeuronCell:
    """The cell (query, key) of `head` in `layer`; `trace` must keep `names_for_neuron`."""
    _check_position(trace, sentence, layer, query)
    _check_position(trace, sentence, layer, key)
    a = hooks.block(layer).attn
    _check_index("head", head, trace[a.scores].shape[1])
    q_all, k_all = scored_qk(trace, layer)  # [B, H, T, dk]
    q = q_all[sentence, head, query].double().numpy()
    k = k_all[sentence, head, key].double().numpy()
    scores = trace[a.scores][sentence, head, query].double().numpy()  # [T]
    product = q * k
    return NeuronCell(
        layer=layer,
        head=head,
        query=query,
        key=key,
        rotated=a.rot_q in trace.tensors,
        q=q,
        k=k,
        product=product,
        dot=float(product.sum()),
        scale=1 / math.sqrt(q.shape[0]),
        score=float(scores[key]),
        masked=bool(np.isneginf(scores[key])),
        weight=float(trace[a.pattern][sentence, head, query, key]),
        keys=int(np.isfinite(scores).sum()),
    )


def qk_vectors(trace: Trace, sentence: int, n: int) -> np.ndarray:
    """[layers, heads, 2, n, dk] float32: every head's q (index 0) and k (1) of the sentence's
    first n tokens, as its scores use them (RoPE's turned ones); `trace` keeps them all."""
    stacked = []
    for layer in range(trace.num_layers):
        q, k = scored_qk(trace, layer)  # [B, H, T, dk]
        stacked.append(np.stack([q[sentence, :, :n].numpy(), k[sentence, :, :n].numpy()], 1))
    return np.stack(stacked).astype(np.float32)
