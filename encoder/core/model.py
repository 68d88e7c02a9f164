"""A Transformer encoder written out in full, with a hook point on every intermediate tensor.

Shapes: B = batch (sentences), T = tokens, d = d_model, H = heads, dk = d / H, F = d_ff,
E = the embeddings' width (cfg.embedding_width: d unless an embedding projection follows them).

Module paths follow `torch.nn.TransformerEncoder` (`layers.{i}.self_attn.in_proj_weight`,
`layers.{i}.linear1`, `layers.{i}.norm1`, final `norm`), so each block's state_dict loads into
`nn.TransformerEncoderLayer` unchanged. Hook names follow the shared design
(`blocks.{i}.attn.hook_pattern`, `blocks.{i}.ln1.hook_std`, ...).
"""

from __future__ import annotations

import math
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
from encoder.core.block import hook_names
from encoder.core.capture import HookPoint, Trace, ablated_heads, capturing
from encoder.core.config import EncoderConfig

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


class Norm(nn.Module):
    """LayerNorm or RMSNorm, computed explicitly so its statistics can be captured."""

    def __init__(self, cfg: EncoderConfig, names: hooks.NormHooks, width: int = 0) -> None:
        """width: the size of the normalised vectors (0: d_model)."""
        super().__init__()
        width = width or cfg.d_model
        self.names = names
        self.norm_type = cfg.norm_type
        self.eps = cfg.layer_norm_eps
        self.weight = nn.Parameter(torch.ones(width))
        if cfg.norm_type == "layernorm" and cfg.norm_bias:
            self.bias = nn.Parameter(torch.zeros(width))
        else:  # RMSNorm has no bias; LayerNorm without one (ModernBERT)
            self.register_parameter("bias", None)
        self.hook_in = HookPoint(names.inp)  # [B, T, d] (E wide for the embedding norm)
        self.hook_mean = HookPoint(names.mean)  # [B, T] mean over d of the input
        # [B, T] what the input is divided by: sqrt(var + eps) for LayerNorm,
        # sqrt(mean(x^2) + eps) for RMSNorm (which does not subtract the mean)
        self.hook_std = HookPoint(names.std)
        self.hook_out = HookPoint(names.out)  # [B, T, d]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hook_in(x)
        mean = self.hook_mean(x.mean(dim=-1))  # [B, T]
        if self.norm_type == "layernorm":
            centered = x - mean.unsqueeze(-1)
            std = self.hook_std(torch.sqrt(centered.pow(2).mean(dim=-1) + self.eps))  # [B, T]
            out = centered / std.unsqueeze(-1) * self.weight
            if self.bias is not None:
                out = out + self.bias
        else:
            rms = self.hook_std(torch.sqrt(x.pow(2).mean(dim=-1) + self.eps))  # [B, T]
            out = x / rms.unsqueeze(-1) * self.weight
        return self.hook_out(out)


def rotary_angles(tokens: int, head_dim: int, base: float, device: torch.device) -> torch.Tensor:
    """RoPE's angles: position t turns pair j by t * base^(-2j/dk): [T, dk/2]."""
    pairs = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device)  # [dk/2] = 2j
    frequencies = base ** (-pairs / head_dim)  # [dk/2]
    position = torch.arange(tokens, dtype=torch.float32, device=device)  # [T]
    return position[:, None] * frequencies[None, :]  # [T, dk/2]


def rotate(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x_j, x_{j + dk/2}) of x [B, H, T, dk] by its angle [T, dk/2]: the
    complex product (x_j + i x_{j + dk/2}) e^(i angle) (the half-split pairing of GPT-NeoX,
    Llama and ModernBERT)."""
    first, second = x.chunk(2, dim=-1)  # [B, H, T, dk/2] each
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # [T, dk/2]
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


def outside_window(tokens: int, window: int, device: torch.device) -> torch.Tensor:
    """[query, key] True where the key is more than window // 2 positions from the query."""
    position = torch.arange(tokens, device=device)  # [T]
    return (position[:, None] - position[None, :]).abs() > window // 2  # [T, T]


class SelfAttention(nn.Module):
    """Multi-head self-attention, explicit softmax; parameters named as nn.MultiheadAttention's."""

    def __init__(self, cfg: EncoderConfig, layer: int, names: hooks.AttentionHooks) -> None:
        super().__init__()
        d = cfg.d_model
        self.layer = layer
        self.num_heads = cfg.num_heads
        self.head_dim = cfg.head_dim
        # RoPE's base in this layer (None: positions were added to the embeddings instead)
        self.rope_base = cfg.rope_base_of(layer) if cfg.positional == "rope" else None
        self.window = cfg.attention_window if cfg.is_local(layer) else 0  # 0: sees every key
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))  # rows: W_q, W_k, W_v
        if cfg.linear_bias:
            self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(d, d, bias=cfg.linear_bias)
        nn.init.xavier_uniform_(self.in_proj_weight)
        if cfg.linear_bias:
            nn.init.zeros_(self.out_proj.bias)
        self.attn_dropout = nn.Dropout(cfg.dropout_rates()["attention"])  # on the weights
        self.hook_q = HookPoint(names.q)  # [B, H, T, dk]
        self.hook_k = HookPoint(names.k)  # [B, H, T, dk]
        self.hook_v = HookPoint(names.v)  # [B, H, T, dk]
        if self.rope_base is not None:
            self.hook_rot_q = HookPoint(names.rot_q)  # [B, H, T, dk] q turned by position
            self.hook_rot_k = HookPoint(names.rot_k)  # [B, H, T, dk] k turned by position
        self.hook_scores = HookPoint(names.scores)  # [B, H, T, T] scaled, masked
        self.hook_pattern = HookPoint(names.pattern)  # [B, H, T, T] softmax
        self.hook_z = HookPoint(names.z)  # [B, H, T, dk] weighted values
        self.hook_out = HookPoint(names.out)  # [B, T, d] after out_proj

    def forward(self, x: torch.Tensor, key_padding: torch.Tensor | None) -> torch.Tensor:
        B, T, d = x.shape
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)  # [B, T, 3d]
        qkv = qkv.view(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q = self.hook_q(qkv[0])  # [B, H, T, dk]
        k = self.hook_k(qkv[1])
        v = self.hook_v(qkv[2])
        if self.rope_base is not None:  # RoPE: q and k turned by their positions
            angles = rotary_angles(T, self.head_dim, self.rope_base, x.device)  # [T, dk/2]
            q = self.hook_rot_q(rotate(q, angles))  # [B, H, T, dk]
            k = self.hook_rot_k(rotate(k, angles))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # [B, H, T, T]
        if key_padding is not None:  # [B, T] True = padding
            scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
        if self.window:  # a local layer: keys beyond window // 2 positions are not seen
            outside = outside_window(T, self.window, x.device)  # [T, T]
            if key_padding is not None:  # a padding query keeps every real key (no empty row)
                outside = outside & ~key_padding[:, None, :, None]  # [B, 1, T, T]
            scores = scores.masked_fill(outside, float("-inf"))
        scores = self.hook_scores(scores)
        pattern = self.hook_pattern(torch.softmax(scores, dim=-1))  # [B, H, query, key]
        z = self.attn_dropout(pattern) @ v  # [B, H, T, dk]
        switched_off = ablated_heads(self.layer)
        if switched_off:  # as if W_O's columns for those heads were zero
            keep = torch.ones(self.num_heads, dtype=z.dtype, device=z.device)
            keep[list(switched_off)] = 0
            z = z * keep[:, None, None]
        z = self.hook_z(z)
        z = z.transpose(1, 2).reshape(B, T, d)  # heads side by side: [B, T, d]
        return self.hook_out(self.out_proj(z))


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

    def _attention(self, x: torch.Tensor, key_padding: torch.Tensor | None) -> torch.Tensor:
        return self.dropout1(self.self_attn(x, key_padding))

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:  # act(x W_in) * (x W_gate)
            pre, gate = self.linear1(x).chunk(2, dim=-1)  # [B, T, F] each
            hidden = self.activation(self.hook_mlp_pre(pre)) * self.hook_mlp_gate(gate)
        else:
            hidden = self.activation(self.hook_mlp_pre(self.linear1(x)))  # [B, T, F]
        hidden = self.hook_mlp_post(hidden)
        return self.dropout2(self.hook_mlp_out(self.linear2(self.dropout(hidden))))

    def forward(self, x: torch.Tensor, key_padding: torch.Tensor | None) -> torch.Tensor:
        if self.norm_first:  # pre-norm: x + f(norm(x))
            attention_input = x if self.norm1 is None else self.norm1(x)
            x = self.hook_resid_mid(x + self._attention(attention_input, key_padding))
            return self.hook_resid_post(x + self._feed_forward(self.norm2(x)))
        # post-norm: norm(x + f(x))
        x = self.hook_resid_mid(self.norm1(x + self._attention(x, key_padding)))
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


def sinusoidal_positions(max_len: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...): [max_len, d]."""
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # [max_len, 1]
    even_dims = torch.arange(0, d_model, 2, dtype=torch.float32)  # [d/2]
    inv_freq = torch.exp(even_dims * (-math.log(1e4) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)
    return table


class Embeddings(nn.Module):
    """Token embedding (optionally scaled by sqrt(E)) + positions (+ token types), norm, dropout,
    and a projection to d_model when the embeddings are narrower (embedding_size).

    With RoPE nothing is added for positions (the blocks turn q and k instead): the model then
    has no position table and no embed.hook_position."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        E = cfg.embedding_width
        self.scale = math.sqrt(E) if cfg.scale_embeddings else 1.0
        self.position_offset = cfg.position_offset  # token t reads row position_offset + t
        self.token = nn.Embedding(cfg.vocab_size, E)
        # Scaled embeddings start at unit variance, like the sinusoidal table they are added to.
        nn.init.normal_(self.token.weight, std=E**-0.5 if cfg.scale_embeddings else 0.02)
        rows = cfg.max_len + cfg.position_offset
        if cfg.positional == "learned":
            self.position = nn.Embedding(rows, E)
            nn.init.normal_(self.position.weight, std=0.02)
        elif cfg.positional == "sinusoidal":
            self.register_buffer("sinusoid", sinusoidal_positions(rows, E), persistent=False)
        self.token_type = nn.Embedding(cfg.type_vocab_size, E) if cfg.type_vocab_size else None
        if self.token_type is not None:
            nn.init.normal_(self.token_type.weight, std=0.02)
        names = hooks.embed()
        self.norm = Norm(cfg, names.norm, E) if cfg.embedding_norm else None
        self.dropout = nn.Dropout(cfg.dropout)
        # ALBERT's embedding_hidden_mapping_in, ELECTRA's embeddings_project: [E] -> [d]
        if cfg.embedding_size:
            self.project = nn.Linear(E, cfg.d_model, bias=cfg.linear_bias)
        else:
            self.project = None
        self.hook_token = HookPoint(names.token)  # [B, T, E] scaled token embeddings
        if cfg.positional != "rope":
            self.hook_position = HookPoint(names.position)  # [T, E]
        self.hook_out = HookPoint(names.out)  # [B, T, d] input to block 0

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None) -> torch.Tensor:
        T = input_ids.shape[1]
        x = self.hook_token(self.token(input_ids) * self.scale)  # [B, T, E]
        # [T] token t reads row position_offset + t of the table
        rows = torch.arange(self.position_offset, self.position_offset + T, device=x.device)
        if hasattr(self, "sinusoid"):
            x = x + self.hook_position(self.sinusoid[rows])  # [T, E]
        elif hasattr(self, "position"):  # a lookup: under no_grad no gradient flag leaks out
            x = x + self.hook_position(self.position(rows))
        # (RoPE adds no positions here: each block turns q and k instead)
        if self.token_type is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.token_type(token_type_ids)
        if self.norm is not None:
            x = self.norm(x)
        x = self.dropout(x)
        if self.project is not None:
            x = self.project(x)  # [B, T, d]
        return self.hook_out(x)


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
    ) -> torch.Tensor:  # [B, T, d]
        """The encoder's output. checkpoint_blocks: when gradients are on, keep only each block's
        input for backward and run the block again during backward (gradient checkpointing,
        `torch.utils.checkpoint`, non-reentrant, RNG state preserved so dropout repeats itself):
        less memory for about one more forward pass of time. Without gradients (model.trace) it
        changes nothing."""
        key_padding = self._check_inputs(input_ids, attention_mask)
        x = self.embed(input_ids, token_type_ids)  # [B, T, d]
        recompute = checkpoint_blocks and torch.is_grad_enabled()
        for block in self.layers:
            if recompute:
                # dropout's masks replayed only when training: in eval mode torch's (process-
                # wide) generator is left alone, as `seeded` needs of every other thread
                x = checkpoint(
                    block, x, key_padding, use_reentrant=False, preserve_rng_state=self.training
                )
            else:
                x = block(x, key_padding)
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
    ) -> Trace:
        """Run forward once (no gradients) and return what it computed.

        names: keep only these hooks in `trace.tensors` (an iterable of names or a predicate on
        a name; default all); the others are never stored. `output`, `hidden_states` and
        `attention` are always returned.
        ablate_heads: (layer, head) pairs whose weighted values are zeroed before the output
        projection, exactly as if W_O's columns for that head were zero.
        """
        wanted = self._name_filter(names)
        ablated = self._check_ablation(ablate_heads)
        blocks = hooks.blocks(self.cfg.num_layers)
        required = {hooks.embed().out}
        for block in blocks:
            required |= {block.resid_post, block.attn.pattern}
        with capturing(lambda name: name in required or wanted(name), ablated) as store:
            output = self.forward(input_ids, attention_mask, token_type_ids)
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
