"""The one description of the encoder: every operation, in the order the data flows.

Each operation (`Op`) says what it computes, which hooks it fills and with which shapes, its
parameters and its FLOPs, for a config and a [batch, tokens] input. Everything that describes
the block reads this table: the hook shapes and names (`shapes`, `hook_names`), the memory
estimate (encoder.inspect.limits), the shape ledger and parameter counts
(encoder.inspect.ledger), the training-time estimate (encoder.train.duration) and the block
diagram (encoder.web.block_diagram). The model (encoder.core.model) is the code it describes;
tests check that the two agree, hook by hook and parameter by parameter.

FLOP convention, counted over the whole padded batch [B, T]:
- matmuls and linear layers: 2 FLOPs per multiply-accumulate (`matmul_flops`); bias adds are
  not counted, as `torch.utils.flop_counter.FlopCounterMode` does;
- elementwise steps (`flops`): 1 per arithmetic operation per element: add, scale, ReLU/GELU/
  SiLU: 1, a gated activation 2 (the activation, the gate multiply); softmax: 3 per score (exp,
  sum, divide); LayerNorm: 7 per element (mean, centre, square, variance, divide, gain, bias; 6
  without a bias); RMSNorm: 4 (square, mean, divide, gain); RoPE's rotation: 3 per element (two
  multiplies and an add per rotated coordinate);
- embedding lookups: 0. Dropout is the identity at inference and has no row.

Shared layers (ALBERT): each parameter is counted at the first block that has it; the other
blocks' operations show 0 parameters, so that every sum of `params` is the model's count.

Shapes: B = batch, T = tokens, d = d_model, H = heads, dk = d / H, F = d_ff, E = the
embeddings' width (cfg.embedding_width).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

from encoder.core import hooks
from encoder.core.config import EncoderConfig
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES
from encoder.core.said import N_, Said

Shape = tuple[int, ...]

NORM_FLOPS_PER_ELEMENT = {"layernorm": 7, "rmsnorm": 4}  # LayerNorm with its bias
SOFTMAX_FLOPS_PER_SCORE = 3
ROTATION_FLOPS_PER_ELEMENT = 3
# An operation's kinds (N_: the page names them in its language)
KINDS = (
    N_("lookup"),
    N_("norm"),
    N_("projection"),
    N_("rotation"),
    N_("attention"),
    N_("softmax"),
    N_("feed-forward"),
    N_("activation"),
    N_("residual"),
)
MATMUL_KINDS = ("projection", "attention", "feed-forward")  # kinds whose FLOPs are matmuls


def shape_text(shape: Shape) -> str:
    """'[1, 36, 512]'."""
    return "[" + ", ".join(str(n) for n in shape) + "]"


@dataclass(frozen=True)
class Op:
    """One operation of the encoder.

    layer: "embed", "0".."L-1" or "final". kind: one of KINDS. stage: in a block, the step of
    the block diagram it belongs to (consecutive operations of one stage are drawn as one box:
    "norm1", "qkv", "weights", "mix", "add1", "norm2", "linear1", "activation", "linear2",
    "add2"); outside the blocks, the part of the model it is ("token embedding", ...,
    "embedding projection", "final norm"). output: the hook that captures the operation's output
    ("" when none does). hooks: every hook the operation
    fills, in order, with its shape.
    """

    layer: str
    operation: str
    kind: str
    stage: str
    output: str
    inputs: tuple[Shape, ...]
    output_shape: Shape
    hooks: dict[str, Shape] = field(default_factory=dict)
    params: int = 0
    flops: int = 0  # elementwise
    matmul_flops: int = 0

    @property
    def input_text(self) -> str:
        """'[1, 8, 36, 64] x [1, 8, 64, 36]': the operands, joined as the operation joins them."""
        joiner = " + " if self.kind in ("residual", "lookup") else " x "
        return joiner.join(shape_text(shape) for shape in self.inputs)

    @property
    def total_flops(self) -> int:
        return self.flops + self.matmul_flops

    @property
    def values(self) -> int:
        """How many numbers the operation's hooks hold."""
        return sum(math.prod(shape) for shape in self.hooks.values())


def _norm(
    cfg: EncoderConfig, layer: str, label: str, stage: str, names: hooks.NormHooks,
    B: int, T: int, *, skip_input: bool = False, also: tuple[str, ...] = (), width: int = 0,
) -> Op:  # fmt: skip
    """A norm over [B, T, width] (width 0: d). skip_input: its input hook is filled by the
    operation before it (post-norm's residual add); also: further hooks that capture its output."""
    width = width or cfg.d_model
    stream, per_token = (B, T, width), (B, T)
    filled = {} if skip_input else {names.inp: stream}
    filled |= {names.mean: per_token, names.std: per_token, names.out: stream}
    filled |= {name: stream for name in also}
    bias = cfg.norm_type == "layernorm" and cfg.norm_bias
    per_element = NORM_FLOPS_PER_ELEMENT[cfg.norm_type] - (
        cfg.norm_type == "layernorm" and not bias
    )
    return Op(
        layer=layer,
        operation=Said("{norm} ({kind})", norm=label, kind=NORM_TYPE_NAMES[cfg.norm_type]),
        kind="norm",
        stage=stage,
        output=names.out,
        inputs=(stream,),
        output_shape=stream,
        hooks=filled,
        params=2 * width if bias else width,
        flops=per_element * B * T * width,
    )


def _linear(
    layer: str, operation: str, kind: str, stage: str, hook: str, inputs: Shape, output: Shape,
    rows: int, n_in: int, n_out: int, *, bias: bool = True,
) -> Op:  # fmt: skip
    """A linear layer applied to `rows` vectors: n_in x n_out weights plus n_out biases (bias)."""
    return Op(
        layer=layer,
        operation=operation,
        kind=kind,
        stage=stage,
        output=hook,
        inputs=(inputs,),
        output_shape=output,
        hooks={hook: output},
        params=n_in * n_out + (n_out if bias else 0),
        matmul_flops=2 * rows * n_in * n_out,
    )


def _residual(layer: str, stage: str, hook: str, B: int, T: int, d: int) -> Op:
    stream = (B, T, d)
    return Op(
        layer=layer,
        operation=Said("residual add"),
        kind="residual",
        stage=stage,
        output=hook,
        inputs=(stream, stream),
        output_shape=stream,
        hooks={hook: stream},
        flops=B * T * d,
    )


def _position_ops(cfg: EncoderConfig, B: int, T: int) -> list[Op]:
    """The position embedding and its add to the tokens' (none with RoPE: the blocks turn q and
    k)."""
    if cfg.positional == "rope":
        return []
    E = cfg.embedding_width
    wide, table = (B, T, E), (T, E)
    names = hooks.embed()
    rows = cfg.max_len + cfg.position_offset
    position = Op(
        layer="embed",
        operation=Said(
            "position embedding ({kind}, from row {row})",
            kind=cfg.positional,
            row=cfg.position_offset,
        )
        if cfg.position_offset
        else Said("position embedding ({kind})", kind=cfg.positional),
        kind="lookup",
        stage="position embedding",
        output=names.position,
        inputs=((T,),),
        output_shape=table,
        hooks={names.position: table},
        params=rows * E if cfg.positional == "learned" else 0,
    )
    add = Op("embed", Said("add token + position"), "residual", "add", "", (wide, table), wide,
             flops=B * T * E)  # fmt: skip
    return [position, add]


def embedding_ops(cfg: EncoderConfig, B: int, T: int) -> list[Op]:
    """Token embedding, positions, token types, the embedding norm, the projection to d: what
    block 0 reads. The last of them also fills embed.hook_out."""
    d, E = cfg.d_model, cfg.embedding_width
    ids, wide = (B, T), (B, T, E)
    names = hooks.embed()
    scaled, width = cfg.scale_embeddings, "E" if cfg.embedding_size else "d"
    ops = [
        Op(
            layer="embed",
            operation=Said("token embedding x sqrt({width})", width=width)
            if scaled
            else Said("token embedding lookup"),
            kind="lookup",
            stage="token embedding",
            output=names.token,
            inputs=(ids,),
            output_shape=wide,
            hooks={names.token: wide},
            params=cfg.vocab_size * E,
            flops=B * T * E if scaled else 0,
        )
    ]
    ops += _position_ops(cfg, B, T)
    if cfg.type_vocab_size:
        ops.append(
            Op("embed", Said("add token-type embedding"), "lookup", "token-type embedding", "",
               (ids,), wide, params=cfg.type_vocab_size * E, flops=B * T * E)
        )  # fmt: skip
    if cfg.embedding_norm:
        ops.append(
            _norm(cfg, "embed", Said("embedding norm"), "embedding norm", names.norm, B, T, width=E)
        )
    if cfg.embedding_size:
        ops.append(
            _linear("embed", Said("embedding projection E -> d"), "projection",
                    "embedding projection", names.out, wide, (B, T, d), B * T, E, d,
                    bias=cfg.linear_bias)
        )  # fmt: skip
    last = ops[-1]  # its output is block 0's input
    ops[-1] = replace(
        last, output=last.output or names.out, hooks={**last.hooks, names.out: last.output_shape}
    )
    return ops


def _holds_parameters(cfg: EncoderConfig, index: int, stage: str) -> bool:
    """With shared layers, only the first block that has a step holds its parameters."""
    if not cfg.shared_layers:
        return True
    first = 1 if stage == "norm1" and not cfg.has_attention_norm(0) else 0
    return index == first


def _attention_ops(cfg: EncoderConfig, index: int, B: int, T: int) -> list[Op]:
    """Block `index`'s attention: Q, K, V (rotated with RoPE), the scores, the softmax, the mix
    of V and the out projection."""
    d, H, dk = cfg.d_model, cfg.num_heads, cfg.head_dim
    layer, a = str(index), hooks.block(index).attn
    stream, heads, square = (B, T, d), (B, H, T, dk), (B, H, T, T)
    bias = cfg.linear_bias
    attention_matmul = 2 * B * H * T * T * dk
    projections = [
        _linear(layer, Said("{name} projection, split into heads", name=name), "projection",
                "qkv", hook, stream, heads, B * T, d, d, bias=bias)
        for name, hook in (("Q", a.q), ("K", a.k), ("V", a.v))
    ]  # fmt: skip
    rotations = [
        Op(layer, Said("rotate {name} by position (RoPE, base {base})", name=name,
                       base=f"{cfg.rope_base_of(index):g}"),
           "rotation", "qkv", hook, (heads,), heads, {hook: heads},
           flops=ROTATION_FLOPS_PER_ELEMENT * B * H * T * dk)
        for name, hook in (("Q", a.rot_q), ("K", a.rot_k))
    ] if cfg.positional == "rope" else []  # fmt: skip
    scores = (
        Said("scores QK^T / sqrt(dk), keys within {reach}", reach=cfg.attention_window // 2)
        if cfg.is_local(index)
        else Said("scores QK^T / sqrt(dk)")
    )
    return [
        *projections,
        *rotations,
        Op(layer, scores, "attention", "weights", a.scores,
           (heads, (B, H, dk, T)), square, {a.scores: square},
           flops=B * H * T * T, matmul_flops=attention_matmul),
        Op(layer, "softmax", "softmax", "weights", a.pattern, (square,), square,
           {a.pattern: square}, flops=SOFTMAX_FLOPS_PER_SCORE * B * H * T * T),
        Op(layer, Said("weights x V"), "attention", "mix", a.z, (square, heads), heads,
           {a.z: heads}, matmul_flops=attention_matmul),
        _linear(layer, Said("concat heads + out projection"), "projection", "mix", a.out, heads,
                stream, B * T, d, d, bias=bias),
    ]  # fmt: skip


def _feed_forward_ops(cfg: EncoderConfig, index: int, B: int, T: int) -> list[Op]:
    """Block `index`'s feed-forward: linear1 (with the gate, gated), the activation, linear2."""
    d, ff = cfg.d_model, cfg.d_ff
    layer, m = str(index), hooks.block(index).mlp
    stream, hidden = (B, T, d), (B, T, ff)
    bias = cfg.linear_bias
    activation = ACTIVATION_NAMES[cfg.activation]
    if cfg.gated:  # linear1 gives the activation's input and the gate: [B, T, 2F]
        linear1 = _linear(layer, Said("linear1 (input and gate)"), "feed-forward", "linear1", m.pre,
                          stream, (B, T, 2 * ff), B * T, d, 2 * ff, bias=bias)  # fmt: skip
        linear1 = replace(linear1, hooks={m.pre: hidden, m.gate: hidden})
        activate = Op(layer, Said("{activation}: activation(input) x gate", activation=activation),
                      "activation",
                      "activation", m.post, (hidden, hidden), hidden, {m.post: hidden},
                      flops=2 * B * T * ff)  # fmt: skip
    else:
        linear1 = _linear(layer, "linear1", "feed-forward", "linear1", m.pre, stream, hidden,
                          B * T, d, ff, bias=bias)  # fmt: skip
        activate = Op(layer, activation, "activation", "activation", m.post, (hidden,), hidden,
                      {m.post: hidden}, flops=B * T * ff)  # fmt: skip
    return [
        linear1,
        activate,
        _linear(layer, "linear2", "feed-forward", "linear2", m.out, hidden, stream, B * T, ff, d,
                bias=bias),
    ]  # fmt: skip


def block_ops(cfg: EncoderConfig, index: int, B: int, T: int) -> list[Op]:
    """Block `index`, pre- or post-norm, in the order the data flows."""
    d = cfg.d_model
    layer, names = str(index), hooks.block(index)
    attention = _attention_ops(cfg, index, B, T)
    feed_forward = _feed_forward_ops(cfg, index, B, T)
    if cfg.norm_first:  # pre-norm: x + f(norm(x))
        norm1 = (
            [_norm(cfg, layer, "ln1", "norm1", names.ln1, B, T)]
            if cfg.has_attention_norm(index)
            else []
        )
        ops = [
            *norm1,
            *attention,
            _residual(layer, "add1", names.resid_mid, B, T, d),
            _norm(cfg, layer, "ln2", "norm2", names.ln2, B, T),
            *feed_forward,
            _residual(layer, "add2", names.resid_post, B, T, d),
        ]
    else:  # post-norm: norm(x + f(x)); each add fills the input hook of the norm after it
        ops = [
            *attention,
            _residual(layer, "add1", names.ln1.inp, B, T, d),
            _norm(cfg, layer, "ln1", "norm1", names.ln1, B, T, skip_input=True,
                  also=(names.resid_mid,)),
            *feed_forward,
            _residual(layer, "add2", names.ln2.inp, B, T, d),
            _norm(cfg, layer, "ln2", "norm2", names.ln2, B, T, skip_input=True,
                  also=(names.resid_post,)),
        ]  # fmt: skip
    return [op if _holds_parameters(cfg, index, op.stage) else replace(op, params=0) for op in ops]


def final_ops(cfg: EncoderConfig, B: int, T: int) -> list[Op]:
    """Pre-norm closes the stream with a final norm; post-norm has none."""
    if not cfg.norm_first:
        return []
    return [
        _norm(
            cfg, "final", Said("final norm"), "final norm", hooks.final_norm(cfg.num_layers), B, T
        )
    ]


def model_ops(cfg: EncoderConfig, B: int, T: int) -> list[Op]:
    """Every operation of the model, in data-flow order."""
    return list(_model_ops(cfg, B, T))


@functools.lru_cache(maxsize=64)  # a page asks for them several times a run (about 1 ms each)
def _model_ops(cfg: EncoderConfig, B: int, T: int) -> tuple[Op, ...]:
    ops = embedding_ops(cfg, B, T)
    for index in range(cfg.num_layers):
        ops += block_ops(cfg, index, B, T)
    return tuple(ops + final_ops(cfg, B, T))


def shapes(cfg: EncoderConfig, batch: int, tokens: int) -> dict[str, Shape]:
    """The shape of every hook's tensor for a [batch, tokens] input, in data-flow order."""
    return {name: shape for op in model_ops(cfg, batch, tokens) for name, shape in op.hooks.items()}


def hook_names(cfg: EncoderConfig) -> list[str]:
    """Every hook name of a model with this config, in data-flow order."""
    return list(shapes(cfg, 1, 1))


def parameters(cfg: EncoderConfig) -> int:
    """Parameters of TransformerEncoder(cfg), counted from the config alone (shared layers'
    once)."""
    return sum(op.params for op in model_ops(cfg, 1, 1))
