"""Every hook name, in one place.

The model's modules take their names from here, and everything that reads a Trace asks here for
a name instead of formatting or parsing strings. Which operation fills each hook, with which
shape, is encoder.core.block's table (`block.shapes`, `block.hook_names`). Names follow
TransformerLens' style: the module path, then `hook_<what>` (`blocks.0.attn.hook_pattern`).

Shapes: B = batch, T = tokens, d = d_model, H = heads, dk = d / H, F = d_ff.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from encoder.core.config import EncoderConfig

EMBEDDING_NORM_LAYER = -1  # the `layer` of the norm right after the embeddings


@dataclass(frozen=True)
class NormHooks:
    """The four hook points of one norm, with where it sits.

    layer: -1 for the embedding norm, the block index for ln1/ln2, num_layers for the final norm.
    label: "embed.ln", "ln1", "ln2" or "final_norm".
    """

    layer: int
    label: str
    inp: str  # [B, T, d] the norm's input
    mean: str  # [B, T] mean over d of the input
    std: str  # [B, T] what the input is divided by (LayerNorm: sqrt(var + eps); RMSNorm: rms)
    out: str  # [B, T, d]

    @classmethod
    def at(cls, prefix: str, layer: int, label: str) -> NormHooks:
        return cls(
            layer=layer,
            label=label,
            inp=f"{prefix}.hook_in",
            mean=f"{prefix}.hook_mean",
            std=f"{prefix}.hook_std",
            out=f"{prefix}.hook_out",
        )

    @property
    def names(self) -> tuple[str, ...]:
        return (self.inp, self.mean, self.std, self.out)


@dataclass(frozen=True)
class EmbedHooks:
    token: str  # [B, T, E] token embeddings (scaled by sqrt(E) where the config says so)
    position: str  # [T, E] the positions added to them (a RoPE model has none)
    out: str  # [B, T, d] the input of block 0
    norm: NormHooks  # used only by models with an embedding norm (BERT)


@dataclass(frozen=True)
class AttentionHooks:
    q: str  # [B, H, T, dk]
    k: str  # [B, H, T, dk]
    v: str  # [B, H, T, dk]
    rot_q: str  # [B, H, T, dk] q rotated by position (RoPE models only)
    rot_k: str  # [B, H, T, dk] k rotated by position (RoPE models only)
    # [B, H, T, T] q k^T / sqrt(dk) (rotated q and k with RoPE), padded keys and keys outside a
    # local window set to -inf, before the softmax
    scores: str
    pattern: str  # [B, H, query, key] the softmax
    z: str  # [B, H, T, dk] weights @ values, per head (zero for an ablated head)
    out: str  # [B, T, d] after the output projection W_O


@dataclass(frozen=True)
class MlpHooks:
    pre: str  # [B, T, F] before the activation (gated: the half that goes through it)
    gate: str  # [B, T, F] gated feed-forwards only: the other half, which multiplies it
    post: str  # [B, T, F] after the activation (gated: act(pre) * gate)
    out: str  # [B, T, d]


@dataclass(frozen=True)
class BlockHooks:
    """One block's hook names."""

    index: int
    ln1: NormHooks
    attn: AttentionHooks
    resid_mid: str  # [B, T, d] the stream after attention's residual add (and ln1, post-norm)
    ln2: NormHooks
    mlp: MlpHooks
    resid_post: str  # [B, T, d] the block's output


def embed() -> EmbedHooks:
    return EmbedHooks(
        token="embed.hook_token",
        position="embed.hook_position",
        out="embed.hook_out",
        norm=NormHooks.at("embed.ln", EMBEDDING_NORM_LAYER, "embed.ln"),
    )


def _named(hooks: type, module: str):
    """`hooks` (AttentionHooks, MlpHooks) for the module at path `module`: each field f names the
    hook point `{module}.hook_{f}` (`blocks.0.attn.hook_pattern`)."""
    return hooks(**{field.name: f"{module}.hook_{field.name}" for field in fields(hooks)})


def block(index: int) -> BlockHooks:
    prefix = f"blocks.{index}"
    return BlockHooks(
        index=index,
        ln1=NormHooks.at(f"{prefix}.ln1", index, "ln1"),
        attn=_named(AttentionHooks, f"{prefix}.attn"),
        resid_mid=f"{prefix}.hook_resid_mid",
        ln2=NormHooks.at(f"{prefix}.ln2", index, "ln2"),
        mlp=_named(MlpHooks, f"{prefix}.mlp"),
        resid_post=f"{prefix}.hook_resid_post",
    )


def final_norm(num_layers: int) -> NormHooks:
    return NormHooks.at("final_norm", num_layers, "final_norm")


def stream(layer: int) -> str:
    """The hook holding the residual stream entering block `layer` ([B, T, d]): the embeddings'
    output for 0, else block layer - 1's output (`layer` = num_layers: the last block's, before
    any final norm): what trace.hidden_states[layer] is."""
    return embed().out if layer == 0 else block(layer - 1).resid_post


def blocks(num_layers: int) -> list[BlockHooks]:
    return [block(i) for i in range(num_layers)]


def norms(cfg: EncoderConfig) -> list[NormHooks]:
    """Every norm of a model with this config, in the order the data meets them."""
    found = [embed().norm] if cfg.embedding_norm else []
    for hooks in blocks(cfg.num_layers):
        found += [hooks.ln1, hooks.ln2] if cfg.has_attention_norm(hooks.index) else [hooks.ln2]
    return found + ([final_norm(cfg.num_layers)] if cfg.norm_first else [])


NameFilter = Callable[[str], bool]


def name_filter(names: Iterable[str] | NameFilter | None) -> NameFilter:
    """A predicate from None (keep all), a predicate, or an iterable of names."""
    if names is None:
        return lambda name: True
    if callable(names):
        return names
    if isinstance(names, str):
        names = (names,)
    wanted = frozenset(names)
    return wanted.__contains__
