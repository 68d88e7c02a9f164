"""A Transformer encoder written out in full, with a hook point on every intermediate tensor.

Shapes: B = batch (sentences), T = tokens, d = d_model, H = heads, dk = d / H, F = d_ff,
E = the embeddings' width (cfg.embedding_width: d unless an embedding projection follows them).

Module paths follow `torch.nn.TransformerEncoder` (`layers.{i}.self_attn.in_proj_weight`,
`layers.{i}.linear1`, `layers.{i}.norm1`, final `norm`), so each block's state_dict loads into
`nn.TransformerEncoderLayer` unchanged. Hook names follow the shared design
(`blocks.{i}.attn.hook_pattern`, `blocks.{i}.ln1.hook_std`, ...).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from encoder.core import hooks
from encoder.core.attention import SelfAttention
from encoder.core.block import hook_names
from encoder.core.capture import HookPoint, Trace, capturing
from encoder.core.config import EncoderConfig
from encoder.core.embeddings import Embeddings
from encoder.core.norm import Norm

# The feed-forward activation of each `EncoderConfig.activation` (GELU in its exact erf form but
# for gelu_tanh); the gated ones (GeGLU, SwiGLU) multiply it by the gate half of linear1.
ACTIVATION_FUNCTIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": partial(F.gelu, approximate="tanh"),
    "geglu": F.gelu,
    "swiglu": F.silu,
}
# Where each norm's parameters sit in the state_dict, by its hook label.
NORM_MODULES = {"embed.ln": "embed.norm", "ln1": "norm1", "ln2": "norm2", "final_norm": "norm"}


def block_path(layer: int) -> str:
    """The module path of block `layer` in the state_dict ("layers.2")."""
    return f"layers.{layer}"


def norm_path(norm: hooks.NormHooks) -> str:
    """The module path of a norm in the state_dict ("layers.2.norm1", "norm", "embed.norm")."""
    module = NORM_MODULES[norm.label]
    return f"{block_path(norm.layer)}.{module}" if norm.label in ("ln1", "ln2") else module


def attention_path(layer: int) -> str:
    """The module path of block `layer`'s attention in the state_dict."""
    return f"{block_path(layer)}.self_attn"


class EncoderBlock(nn.Module):
    """One encoder layer; state_dict keys and shapes equal nn.TransformerEncoderLayer's (with the
    default options: ReLU/GELU, biases, a norm before every sublayer)."""

    def __init__(self, cfg: EncoderConfig, index: int) -> None:
        super().__init__()
        names = hooks.block(index)
        self.norm_first = cfg.norm_first
        self.gated = cfg.gated
        self.activation = ACTIVATION_FUNCTIONS[cfg.activation]
        self.self_attn = SelfAttention(cfg, index, names.attn)
        rates = cfg.dropout_rates()
        # gated: rows [0, F) the activation's input, rows [F, 2F) the gate
        hidden = 2 * cfg.d_ff if cfg.gated else cfg.d_ff
        self.linear1 = nn.Linear(cfg.d_model, hidden, bias=cfg.linear_bias)
        self.dropout = nn.Dropout(rates["ffn"])  # on the feed-forward's hidden layer
        self.linear2 = nn.Linear(cfg.d_ff, cfg.d_model, bias=cfg.linear_bias)
        # ModernBERT's block 0 reads the embedding norm's output without a norm of its own
        self.norm1 = Norm(cfg, names.ln1) if cfg.has_attention_norm(index) else None
        self.norm2 = Norm(cfg, names.ln2)
        self.dropout1 = nn.Dropout(rates["residual"])  # attention's output, before its add
        self.dropout2 = nn.Dropout(rates["residual"])  # the feed-forward's, before its add
        self.hook_mlp_pre = HookPoint(names.mlp.pre)  # [B, T, F] before activation
        if cfg.gated:
            self.hook_mlp_gate = HookPoint(names.mlp.gate)  # [B, T, F] the gate
        self.hook_mlp_post = HookPoint(names.mlp.post)  # [B, T, F] after activation (x gate)
        self.hook_mlp_out = HookPoint(names.mlp.out)  # [B, T, d]
        self.hook_resid_mid = HookPoint(names.resid_mid)  # [B, T, d]
        self.hook_resid_post = HookPoint(names.resid_post)  # [B, T, d]

    def _attention(
        self, x: torch.Tensor, key_padding: torch.Tensor | None, causal: bool
    ) -> torch.Tensor:
        return self.dropout1(self.self_attn(x, key_padding, causal))

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:  # act(x W_in) * (x W_gate)
            pre, gate = self.linear1(x).chunk(2, dim=-1)  # [B, T, F] each
            hidden = self.activation(self.hook_mlp_pre(pre)) * self.hook_mlp_gate(gate)
        else:
            hidden = self.activation(self.hook_mlp_pre(self.linear1(x)))  # [B, T, F]
        hidden = self.hook_mlp_post(hidden)
        return self.dropout2(self.hook_mlp_out(self.linear2(self.dropout(hidden))))

    def forward(
        self, x: torch.Tensor, key_padding: torch.Tensor | None, causal: bool = False
    ) -> torch.Tensor:
        if self.norm_first:  # pre-norm: x + f(norm(x))
            attention_input = x if self.norm1 is None else self.norm1(x)
            x = self.hook_resid_mid(x + self._attention(attention_input, key_padding, causal))
            return self.hook_resid_post(x + self._feed_forward(self.norm2(x)))
        # post-norm: norm(x + f(x))
        x = self.hook_resid_mid(self.norm1(x + self._attention(x, key_padding, causal)))
        return self.hook_resid_post(self.norm2(x + self._feed_forward(x)))


def share_parameters(layers: nn.ModuleList) -> None:
    """Make every block use the Parameters of the first block that has each one (ALBERT): the
    blocks keep their own modules (hooks, index), state_dict lists every block's keys, and
    model.parameters() yields each shared Parameter once."""
    first: dict[str, nn.Parameter] = {}
    for layer in layers:
        for path, module in layer.named_modules():
            for name, parameter in list(module.named_parameters(recurse=False)):
                key = f"{path}.{name}"
                setattr(module, name, first.setdefault(key, parameter))


_SEEDING = threading.RLock()  # torch's default generator is one for all of the process's threads


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Draws from torch's default generator inside the block start at `seed` (the same weights
    for the same config and seed) and leave it as it was; one thread at a time, so that a model
    built in one thread (a cost measurement's, in the background) changes no other's weights."""
    with _SEEDING, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


class TransformerEncoder(nn.Module):
    """Embeddings, a stack of EncoderBlocks and, for pre-norm, a final norm."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        with seeded(cfg.seed):
            self.embed = Embeddings(cfg)
            self.layers = nn.ModuleList(EncoderBlock(cfg, i) for i in range(cfg.num_layers))
            if cfg.shared_layers:
                share_parameters(self.layers)
            # Pre-norm leaves the residual stream un-normalised; a final norm closes it off.
            self.norm = Norm(cfg, hooks.final_norm(cfg.num_layers)) if cfg.norm_first else None

    @property
    def device(self) -> torch.device:
        return self.embed.token.weight.device

    def _check_inputs(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> torch.Tensor | None:
        """Validate the batch before anything runs; return the key padding mask ([B, T],
        True = padding) or None. An id outside the vocabulary would otherwise fail deep inside
        the embedding (on CUDA it breaks the device context for every user of the process)."""
        if input_ids.dim() != 2:
            shape = tuple(input_ids.shape)
            raise ValueError(f"input_ids must be [batch, tokens], got shape {shape}")
        if input_ids.dtype == torch.bool or input_ids.is_floating_point() or input_ids.is_complex():
            raise ValueError(
                f"input_ids must hold integer token ids, got dtype {input_ids.dtype} "
                f"(use torch.long)"
            )
        B, T = input_ids.shape
        if T == 0:
            raise ValueError("input_ids has no tokens: there is nothing to encode")
        if T > self.cfg.max_len:
            raise ValueError(f"{T} tokens is more than max_len={self.cfg.max_len}")
        vocab = self.cfg.vocab_size
        outside = (input_ids < 0) | (input_ids >= vocab)
        if outside.any():
            sentence, position = (int(i) for i in outside.nonzero()[0])
            raise ValueError(
                f"token id {int(input_ids[sentence, position])} at [{sentence}, {position}] is "
                f"outside the vocabulary: ids must be in [0, {vocab}) (vocab_size={vocab})"
            )
        if attention_mask is None:
            return None
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask shape {tuple(attention_mask.shape)} differs from "
                f"input_ids shape {tuple(input_ids.shape)}"
            )
        not_binary = (attention_mask != 0) & (attention_mask != 1)
        if not_binary.any():
            sentence, position = (int(i) for i in not_binary.nonzero()[0])
            raise ValueError(
                f"attention_mask value {attention_mask[sentence, position].item()} at "
                f"[{sentence}, {position}] is not 0 or 1: 1 marks a token, 0 padding"
            )
        key_padding = attention_mask == 0
        if key_padding.all(dim=-1).any():
            raise ValueError("a sentence in the batch has no tokens (its attention_mask is all 0)")
        return key_padding

    def forward(
        self,
        input_ids: torch.Tensor,  # [B, T] long
        attention_mask: torch.Tensor | None = None,  # [B, T] 1 = token, 0 = padding
        token_type_ids: torch.Tensor | None = None,  # [B, T]
        *,
        checkpoint_blocks: bool = False,
        causal: bool = False,
    ) -> torch.Tensor:  # [B, T, d]
        """The encoder's output. causal: each query sees only the keys at or before it, as in a
        decoder (default off: the encoder's attention sees every key). checkpoint_blocks: when
        gradients are on, keep only each block's input for backward and run the block again
        during backward (gradient checkpointing, `torch.utils.checkpoint`, non-reentrant, RNG
        state preserved so dropout repeats itself): less memory for about one more forward pass
        of time. Without gradients (model.trace) it changes nothing."""
        key_padding = self._check_inputs(input_ids, attention_mask)
        x = self.embed(input_ids, token_type_ids)  # [B, T, d]
        return self.blocks_from(0, x, key_padding, causal, checkpoint_blocks)

    def blocks_from(
        self,
        start: int,
        x: torch.Tensor,  # [B, T, d] the stream entering block `start`
        key_padding: torch.Tensor | None = None,  # [B, T] True = padding
        causal: bool = False,
        checkpoint_blocks: bool = False,
    ) -> torch.Tensor:  # [B, T, d]
        """Blocks start.. and the final norm: the rest of forward from the stream entering block
        `start` (start = num_layers: the final norm alone). See forward for the flags."""
        recompute = checkpoint_blocks and torch.is_grad_enabled()
        for block in self.layers[start:]:
            if recompute:
                # dropout's masks replayed only when training: in eval mode torch's (process-
                # wide) generator is left alone, as `seeded` needs of every other thread
                x = checkpoint(
                    block, x, key_padding, causal,
                    use_reentrant=False, preserve_rng_state=self.training,
                )  # fmt: skip
            else:
                x = block(x, key_padding, causal)
        return self.norm(x) if self.norm is not None else x

    def hook_names(self) -> list[str]:
        """Every hook name of this model, in the order the data flows."""
        return hook_names(self.cfg)

    def _check_ablation(self, ablate_heads: Iterable[tuple[int, int]]) -> dict[int, tuple]:
        """{layer: heads} from (layer, head) pairs; ValueError for a pair the model lacks."""
        L, H = self.cfg.num_layers, self.cfg.num_heads
        by_layer: dict[int, set[int]] = {}
        for pair in ablate_heads:
            try:
                layer, head = (operator.index(n) for n in pair)
            except (TypeError, ValueError):
                raise ValueError(
                    f"ablate_heads takes (layer, head) pairs of whole numbers, got {pair!r}"
                ) from None
            if not (0 <= layer < L and 0 <= head < H):
                raise ValueError(
                    f"cannot switch off head ({layer}, {head}): this model has layers "
                    f"0..{L - 1} and heads 0..{H - 1}"
                )
            by_layer.setdefault(layer, set()).add(head)
        return {layer: tuple(sorted(heads)) for layer, heads in by_layer.items()}

    def _name_filter(self, names: Iterable[str] | hooks.NameFilter | None) -> hooks.NameFilter:
        """The filter for `names`; ValueError naming any name this model does not have."""
        if names is not None and not callable(names):
            names = (names,) if isinstance(names, str) else tuple(names)
            unknown = sorted(set(names) - set(self.hook_names()))
            if unknown:
                raise ValueError(
                    f"unknown hook name(s) {', '.join(map(repr, unknown[:5]))}: "
                    f"model.hook_names() lists this model's {len(self.hook_names())} names"
                )
        return hooks.name_filter(names)

    @torch.no_grad()
    def trace(
        self,
        input_ids: torch.Tensor,  # [B, T] long
        attention_mask: torch.Tensor | None = None,  # [B, T] 1 = token, 0 = padding
        token_type_ids: torch.Tensor | None = None,
        *,
        names: Iterable[str] | hooks.NameFilter | None = None,
        ablate_heads: Iterable[tuple[int, int]] = (),
        causal: bool = False,
    ) -> Trace:
        """Run forward once (no gradients) and return what it computed.

        names: keep only these hooks in `trace.tensors` (an iterable of names or a predicate on
        a name; default all); the others are never stored. `output`, `hidden_states` and
        `attention` are always returned.
        ablate_heads: (layer, head) pairs whose weighted values are zeroed before the output
        projection, exactly as if W_O's columns for that head were zero.
        causal: a decoder's mask, each query sees only keys at or before it (default off).
        """
        wanted = self._name_filter(names)
        ablated = self._check_ablation(ablate_heads)
        blocks = hooks.blocks(self.cfg.num_layers)
        required = {hooks.embed().out}
        for block in blocks:
            required |= {block.resid_post, block.attn.pattern}
        with capturing(lambda name: name in required or wanted(name), ablated) as store:
            output = self.forward(input_ids, attention_mask, token_type_ids, causal=causal)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        hidden_states = (store[hooks.embed().out],) + tuple(store[b.resid_post] for b in blocks)
        attention = torch.stack([store[b.attn.pattern] for b in blocks])  # [L, B, H, T, T]
        return Trace(
            output=output,
            hidden_states=hidden_states,
            attention=attention,
            tensors={name: t for name, t in store.items() if wanted(name)},
            input_ids=input_ids,
            attention_mask=attention_mask,
            ablated_heads=tuple(
                (layer, head) for layer, heads in sorted(ablated.items()) for head in heads
            ),
        )


def available_devices() -> list[str]:
    """The torch devices this machine really has: 'cpu', then each CUDA device, then 'mps'."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices
