"""The one description of the encoder: every operation, in the order the data flows.

Each operation (`Op`) says what it computes, which hooks it fills and with which shapes, its
parameters and its FLOPs, for a config and a [batch, tokens] input. Everything that describes
the block reads this table: the hook shapes and names (`shapes`, `hook_names`), the memory
estimate (encoder.inspect.limits), the shape ledger and parameter counts
(encoder.inspect.ledger), the training-time estimate (encoder.train.duration) and the block
diagram (app.charts.diagram). The model (encoder.core.model) is the code it describes; tests check
that the two agree, hook by hook and parameter by parameter.

FLOP convention, counted over the whole padded batch [B, T]:
- matmuls and linear layers: 2 FLOPs per multiply-accumulate (`matmul_flops`); bias adds are
  not counted, as `torch.utils.flop_counter.FlopCounterMode` does;
- elementwise steps (`flops`): 1 per arithmetic operation per element: add, scale, ReLU/GELU: 1;
  softmax: 3 per score (exp, sum, divide); LayerNorm: 7 per element (mean, centre, square,
  variance, divide, gain, bias); RMSNorm: 4 (square, mean, divide, gain);
- embedding lookups: 0. Dropout is the identity at inference and has no row.

Shapes: B = batch, T = tokens, d = d_model, H = heads, dk = d / H, F = d_ff.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from encoder.core import hooks
from encoder.core.config import EncoderConfig
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES

Shape = tuple[int, ...]

NORM_FLOPS_PER_ELEMENT = {"layernorm": 7, "rmsnorm": 4}
SOFTMAX_FLOPS_PER_SCORE = 3
MATMUL_KINDS = ("projection", "attention", "feed-forward")  # kinds whose FLOPs are matmuls


def shape_text(shape: Shape) -> str:
    """'[1, 36, 512]'."""
    return "[" + ", ".join(str(n) for n in shape) + "]"


@dataclass(frozen=True)
class Op:
    """One operation of the encoder.

    layer: "embed", "0".."L-1" or "final". kind: lookup | norm | projection | attention | softmax
    | feed-forward | activation | residual. stage: in a block, the step of the block diagram it
    belongs to (consecutive operations of one stage are drawn as one box: "norm1", "qkv",
    "weights", "mix", "add1", "norm2", "linear1", "activation", "linear2", "add2"); outside the
    blocks, the part of the model it is ("token embedding", ..., "final norm"). output: the hook
    that captures the operation's output ("" when none does). hooks: every hook the operation
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
    B: int, T: int, *, skip_input: bool = False, also: tuple[str, ...] = (),
) -> Op:  # fmt: skip
    """A norm over [B, T, d]. skip_input: its input hook is filled by the operation before it
    (post-norm's residual add); also: further hooks that capture its output."""
    stream, per_token = (B, T, cfg.d_model), (B, T)
    filled = {} if skip_input else {names.inp: stream}
    filled |= {names.mean: per_token, names.std: per_token, names.out: stream}
    filled |= {name: stream for name in also}
    return Op(
        layer=layer,
        operation=f"{label} ({NORM_TYPE_NAMES[cfg.norm_type]})",
        kind="norm",
        stage=stage,
        output=names.out,
        inputs=(stream,),
        output_shape=stream,
        hooks=filled,
        params=2 * cfg.d_model if cfg.norm_type == "layernorm" else cfg.d_model,
        flops=NORM_FLOPS_PER_ELEMENT[cfg.norm_type] * B * T * cfg.d_model,
    )


def _linear(
    layer: str, operation: str, kind: str, stage: str, hook: str, inputs: Shape, output: Shape,
    rows: int, n_in: int, n_out: int,
) -> Op:  # fmt: skip
    """A linear layer applied to `rows` vectors: n_in x n_out weights plus n_out biases."""
    return Op(
        layer=layer,
        operation=operation,
        kind=kind,
        stage=stage,
        output=hook,
        inputs=(inputs,),
        output_shape=output,
        hooks={hook: output},
        params=n_in * n_out + n_out,
        matmul_flops=2 * rows * n_in * n_out,
    )


def _residual(layer: str, stage: str, hook: str, B: int, T: int, d: int) -> Op:
    stream = (B, T, d)
    return Op(
        layer=layer,
        operation="residual add",
        kind="residual",
        stage=stage,
        output=hook,
        inputs=(stream, stream),
        output_shape=stream,
        hooks={hook: stream},
        flops=B * T * d,
    )


def embedding_ops(cfg: EncoderConfig, B: int, T: int) -> list[Op]:
    """Token embedding, positions, token types, the embedding norm: what block 0 reads."""
    d = cfg.d_model
    ids, stream, table = (B, T), (B, T, d), (T, d)
    names = hooks.embed()
    scaled = cfg.scale_embeddings
    ops = [
        Op(
            layer="embed",
            operation="token embedding x sqrt(d)" if scaled else "token embedding lookup",
            kind="lookup",
            stage="token embedding",
            output=names.token,
            inputs=(ids,),
            output_shape=stream,
            hooks={names.token: stream},
            params=cfg.vocab_size * d,
            flops=B * T * d if scaled else 0,
        ),
        Op(
            layer="embed",
            operation=f"position embedding ({cfg.positional})",
            kind="lookup",
            stage="position embedding",
            output=names.position,
            inputs=((T,),),
            output_shape=table,
            hooks={names.position: table},
            params=cfg.max_len * d if cfg.positional == "learned" else 0,
        ),
    ]
    last_add = not cfg.type_vocab_size and not cfg.embedding_norm  # it gives embed.hook_out
    ops.append(
        Op(
            layer="embed",
            operation="add token + position",
            kind="residual",
            stage="add",
            output=names.out if last_add else "",
            inputs=(stream, table),
            output_shape=stream,
            hooks={names.out: stream} if last_add else {},
            flops=B * T * d,
        )
    )
    if cfg.type_vocab_size:
        gives_out = not cfg.embedding_norm
        ops.append(
            Op(
                layer="embed",
                operation="add token-type embedding",
                kind="lookup",
                stage="token-type embedding",
                output=names.out if gives_out else "",
                inputs=(ids,),
                output_shape=stream,
                hooks={names.out: stream} if gives_out else {},
                params=cfg.type_vocab_size * d,
                flops=B * T * d,
            )
        )
    if cfg.embedding_norm:
        ops.append(
            _norm(
                cfg,
                "embed",
                "embedding norm",
                "embedding norm",
                names.norm,
                B,
                T,
                also=(names.out,),
            )
        )
    return ops


def block_ops(cfg: EncoderConfig, index: int, B: int, T: int) -> list[Op]:
    """Block `index`, pre- or post-norm, in the order the data flows."""
    d, H, dk, ff = cfg.d_model, cfg.num_heads, cfg.head_dim, cfg.d_ff
    layer, names = str(index), hooks.block(index)
    a, m = names.attn, names.mlp
    stream, heads, square, hidden = (B, T, d), (B, H, T, dk), (B, H, T, T), (B, T, ff)
    attention_matmul = 2 * B * H * T * T * dk
    attention = [
        _linear(layer, f"{name} projection, split into heads", "projection", "qkv", hook,
                stream, heads, B * T, d, d)
        for name, hook in (("Q", a.q), ("K", a.k), ("V", a.v))
    ] + [
        Op(layer, "scores QK^T / sqrt(dk)", "attention", "weights", a.scores,
           (heads, (B, H, dk, T)), square, {a.scores: square},
           flops=B * H * T * T, matmul_flops=attention_matmul),
        Op(layer, "softmax", "softmax", "weights", a.pattern, (square,), square,
           {a.pattern: square}, flops=SOFTMAX_FLOPS_PER_SCORE * B * H * T * T),
        Op(layer, "weights x V", "attention", "mix", a.z, (square, heads), heads, {a.z: heads},
           matmul_flops=attention_matmul),
        _linear(layer, "concat heads + out projection", "projection", "mix", a.out, heads,
                stream, B * T, d, d),
    ]  # fmt: skip
    feed_forward = [
        _linear(layer, "linear1", "feed-forward", "linear1", m.pre, stream, hidden, B * T, d, ff),
        Op(layer, ACTIVATION_NAMES[cfg.activation], "activation", "activation", m.post,
           (hidden,), hidden, {m.post: hidden}, flops=B * T * ff),
        _linear(layer, "linear2", "feed-forward", "linear2", m.out, hidden, stream, B * T, ff, d),
    ]  # fmt: skip
    if cfg.norm_first:  # pre-norm: x + f(norm(x))
        return [
            _norm(cfg, layer, "ln1", "norm1", names.ln1, B, T),
            *attention,
            _residual(layer, "add1", names.resid_mid, B, T, d),
            _norm(cfg, layer, "ln2", "norm2", names.ln2, B, T),
            *feed_forward,
            _residual(layer, "add2", names.resid_post, B, T, d),
        ]
    # post-norm: norm(x + f(x)); each add fills the input hook of the norm after it
    return [
        *attention,
        _residual(layer, "add1", names.ln1.inp, B, T, d),
        _norm(cfg, layer, "ln1", "norm1", names.ln1, B, T, skip_input=True,
              also=(names.resid_mid,)),
        *feed_forward,
        _residual(layer, "add2", names.ln2.inp, B, T, d),
        _norm(cfg, layer, "ln2", "norm2", names.ln2, B, T, skip_input=True,
              also=(names.resid_post,)),
    ]  # fmt: skip


def final_ops(cfg: EncoderConfig, B: int, T: int) -> list[Op]:
    """Pre-norm closes the stream with a final norm; post-norm has none."""
    if not cfg.norm_first:
        return []
    return [_norm(cfg, "final", "final norm", "final norm", hooks.final_norm(cfg.num_layers), B, T)]


def model_ops(cfg: EncoderConfig, B: int, T: int) -> list[Op]:
    """Every operation of the model, in data-flow order."""
    ops = embedding_ops(cfg, B, T)
    for index in range(cfg.num_layers):
        ops += block_ops(cfg, index, B, T)
    return ops + final_ops(cfg, B, T)


def shapes(cfg: EncoderConfig, batch: int, tokens: int) -> dict[str, Shape]:
    """The shape of every hook's tensor for a [batch, tokens] input, in data-flow order."""
    return {name: shape for op in model_ops(cfg, batch, tokens) for name, shape in op.hooks.items()}


def hook_names(cfg: EncoderConfig) -> list[str]:
    """Every hook name of a model with this config, in data-flow order."""
    return list(shapes(cfg, 1, 1))


def parameters(cfg: EncoderConfig) -> int:
    """Parameters of TransformerEncoder(cfg), counted from the config alone."""
    return sum(op.params for op in model_ops(cfg, 1, 1))
