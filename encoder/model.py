"""A Transformer encoder written out in full, with a hook point on every intermediate tensor.

Shapes: B = batch (sentences), T = tokens, d = d_model, H = heads, dk = d / H, F = d_ff.

Module paths follow `torch.nn.TransformerEncoder` (`layers.{i}.self_attn.in_proj_weight`,
`layers.{i}.linear1`, `layers.{i}.norm1`, final `norm`), so each block's state_dict loads into
`nn.TransformerEncoderLayer` unchanged. Hook names follow the shared design
(`blocks.{i}.attn.hook_pattern`, `blocks.{i}.ln1.hook_std`, ...).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from encoder.capture import HookPoint, Trace, capturing
from encoder.config import EncoderConfig


class Norm(nn.Module):
    """LayerNorm or RMSNorm, computed explicitly so its statistics can be captured."""

    def __init__(self, cfg: EncoderConfig, name: str) -> None:
        super().__init__()
        self.norm_type = cfg.norm_type
        self.eps = cfg.layer_norm_eps
        self.weight = nn.Parameter(torch.ones(cfg.d_model))
        if cfg.norm_type == "layernorm":
            self.bias = nn.Parameter(torch.zeros(cfg.d_model))
        else:
            self.register_parameter("bias", None)
        self.hook_in = HookPoint(f"{name}.hook_in")  # [B, T, d]
        self.hook_mean = HookPoint(f"{name}.hook_mean")  # [B, T] mean over d of the input
        # [B, T] what the input is divided by: sqrt(var + eps) for LayerNorm,
        # sqrt(mean(x^2) + eps) for RMSNorm (which does not subtract the mean)
        self.hook_std = HookPoint(f"{name}.hook_std")
        self.hook_out = HookPoint(f"{name}.hook_out")  # [B, T, d]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.hook_in(x)
        mean = self.hook_mean(x.mean(dim=-1))  # [B, T]
        if self.norm_type == "layernorm":
            centered = x - mean.unsqueeze(-1)
            std = self.hook_std(torch.sqrt(centered.pow(2).mean(dim=-1) + self.eps))  # [B, T]
            out = centered / std.unsqueeze(-1) * self.weight + self.bias
        else:
            rms = self.hook_std(torch.sqrt(x.pow(2).mean(dim=-1) + self.eps))  # [B, T]
            out = x / rms.unsqueeze(-1) * self.weight
        return self.hook_out(out)


class SelfAttention(nn.Module):
    """Multi-head self-attention, explicit softmax; parameters named as nn.MultiheadAttention's."""

    def __init__(self, cfg: EncoderConfig, name: str) -> None:
        super().__init__()
        d = cfg.d_model
        self.num_heads = cfg.num_heads
        self.head_dim = cfg.head_dim
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))  # rows: W_q, W_k, W_v
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        self.out_proj = nn.Linear(d, d)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.hook_q = HookPoint(f"{name}.hook_q")  # [B, H, T, dk]
        self.hook_k = HookPoint(f"{name}.hook_k")  # [B, H, T, dk]
        self.hook_v = HookPoint(f"{name}.hook_v")  # [B, H, T, dk]
        self.hook_scores = HookPoint(f"{name}.hook_scores")  # [B, H, T, T] scaled, masked
        self.hook_pattern = HookPoint(f"{name}.hook_pattern")  # [B, H, T, T] softmax
        self.hook_z = HookPoint(f"{name}.hook_z")  # [B, H, T, dk] weighted values
        self.hook_out = HookPoint(f"{name}.hook_out")  # [B, T, d] after out_proj

    def forward(self, x: torch.Tensor, key_padding: torch.Tensor | None) -> torch.Tensor:
        B, T, d = x.shape
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias)  # [B, T, 3d]
        qkv = qkv.view(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q = self.hook_q(qkv[0])  # [B, H, T, dk]
        k = self.hook_k(qkv[1])
        v = self.hook_v(qkv[2])
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # [B, H, T, T]
        if key_padding is not None:  # [B, T] True = padding
            scores = scores.masked_fill(key_padding[:, None, None, :], float("-inf"))
        scores = self.hook_scores(scores)
        pattern = self.hook_pattern(torch.softmax(scores, dim=-1))  # [B, H, query, key]
        z = self.hook_z(self.attn_dropout(pattern) @ v)  # [B, H, T, dk]
        z = z.transpose(1, 2).reshape(B, T, d)  # heads side by side: [B, T, d]
        return self.hook_out(self.out_proj(z))


class EncoderBlock(nn.Module):
    """One encoder layer; state_dict keys and shapes equal nn.TransformerEncoderLayer's."""

    def __init__(self, cfg: EncoderConfig, index: int) -> None:
        super().__init__()
        name = f"blocks.{index}"
        self.norm_first = cfg.norm_first
        self.activation = F.relu if cfg.activation == "relu" else F.gelu
        self.self_attn = SelfAttention(cfg, f"{name}.attn")
        self.linear1 = nn.Linear(cfg.d_model, cfg.d_ff)
        self.dropout = nn.Dropout(cfg.dropout)
        self.linear2 = nn.Linear(cfg.d_ff, cfg.d_model)
        self.norm1 = Norm(cfg, f"{name}.ln1")
        self.norm2 = Norm(cfg, f"{name}.ln2")
        self.dropout1 = nn.Dropout(cfg.dropout)
        self.dropout2 = nn.Dropout(cfg.dropout)
        self.hook_mlp_pre = HookPoint(f"{name}.mlp.hook_pre")  # [B, T, F] before activation
        self.hook_mlp_post = HookPoint(f"{name}.mlp.hook_post")  # [B, T, F] after activation
        self.hook_mlp_out = HookPoint(f"{name}.mlp.hook_out")  # [B, T, d]
        self.hook_resid_mid = HookPoint(f"{name}.hook_resid_mid")  # [B, T, d]
        self.hook_resid_post = HookPoint(f"{name}.hook_resid_post")  # [B, T, d]

    def _attention(self, x: torch.Tensor, key_padding: torch.Tensor | None) -> torch.Tensor:
        return self.dropout1(self.self_attn(x, key_padding))

    def _feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.hook_mlp_post(self.activation(self.hook_mlp_pre(self.linear1(x))))
        return self.dropout2(self.hook_mlp_out(self.linear2(self.dropout(hidden))))

    def forward(self, x: torch.Tensor, key_padding: torch.Tensor | None) -> torch.Tensor:
        if self.norm_first:  # pre-norm: x + f(norm(x))
            x = self.hook_resid_mid(x + self._attention(self.norm1(x), key_padding))
            return self.hook_resid_post(x + self._feed_forward(self.norm2(x)))
        # post-norm: norm(x + f(x))
        x = self.hook_resid_mid(self.norm1(x + self._attention(x, key_padding)))
        return self.hook_resid_post(self.norm2(x + self._feed_forward(x)))


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
    """Token embedding (optionally scaled by sqrt(d)) + positions (+ token types), norm, dropout."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.scale = math.sqrt(d) if cfg.scale_embeddings else 1.0
        self.token = nn.Embedding(cfg.vocab_size, d)
        # Scaled embeddings start at unit variance, like the sinusoidal table they are added to.
        nn.init.normal_(self.token.weight, std=d**-0.5 if cfg.scale_embeddings else 0.02)
        if cfg.positional == "learned":
            self.position = nn.Embedding(cfg.max_len, d)
            nn.init.normal_(self.position.weight, std=0.02)
        else:
            self.register_buffer("sinusoid", sinusoidal_positions(cfg.max_len, d), persistent=False)
        self.token_type = nn.Embedding(cfg.type_vocab_size, d) if cfg.type_vocab_size else None
        if self.token_type is not None:
            nn.init.normal_(self.token_type.weight, std=0.02)
        self.norm = Norm(cfg, "embed.ln") if cfg.embedding_norm else None
        self.dropout = nn.Dropout(cfg.dropout)
        self.hook_token = HookPoint("embed.hook_token")  # [B, T, d] scaled token embeddings
        self.hook_position = HookPoint("embed.hook_position")  # [T, d]
        self.hook_out = HookPoint("embed.hook_out")  # [B, T, d] input to block 0

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None) -> torch.Tensor:
        T = input_ids.shape[1]
        tokens = self.hook_token(self.token(input_ids) * self.scale)  # [B, T, d]
        if hasattr(self, "sinusoid"):
            positions = self.sinusoid[:T]  # [T, d]
        else:  # a lookup, so that under no_grad no gradient flag leaks into the trace
            positions = self.position(torch.arange(T, device=input_ids.device))
        x = tokens + self.hook_position(positions)
        if self.token_type is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.token_type(token_type_ids)
        if self.norm is not None:
            x = self.norm(x)
        return self.hook_out(self.dropout(x))


class TransformerEncoder(nn.Module):
    """Embeddings, a stack of EncoderBlocks and, for pre-norm, a final norm."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        with torch.random.fork_rng(devices=[]):  # same cfg + seed -> same weights, RNG untouched
            torch.manual_seed(cfg.seed)
            self.embed = Embeddings(cfg)
            self.layers = nn.ModuleList(EncoderBlock(cfg, i) for i in range(cfg.num_layers))
            # Pre-norm leaves the residual stream un-normalised; a final norm closes it off.
            self.norm = Norm(cfg, "final_norm") if cfg.norm_first else None

    @property
    def device(self) -> torch.device:
        return self.embed.token.weight.device

    def _check_inputs(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
    ) -> torch.Tensor | None:
        """Validate the batch; return the key padding mask ([B, T], True = padding) or None."""
        if input_ids.dim() != 2:
            shape = tuple(input_ids.shape)
            raise ValueError(f"input_ids must be [batch, tokens], got shape {shape}")
        B, T = input_ids.shape
        if T == 0:
            raise ValueError("input_ids has no tokens: there is nothing to encode")
        if T > self.cfg.max_len:
            raise ValueError(f"{T} tokens is more than max_len={self.cfg.max_len}")
        if attention_mask is None:
            return None
        if attention_mask.shape != input_ids.shape:
            raise ValueError(
                f"attention_mask shape {tuple(attention_mask.shape)} differs from "
                f"input_ids shape {tuple(input_ids.shape)}"
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
    ) -> torch.Tensor:  # [B, T, d]
        key_padding = self._check_inputs(input_ids, attention_mask)
        x = self.embed(input_ids, token_type_ids)
        for block in self.layers:
            x = block(x, key_padding)
        return self.norm(x) if self.norm is not None else x

    def hook_names(self) -> list[str]:
        """Every hook point's name, in module order."""
        return [m.name for m in self.modules() if isinstance(m, HookPoint)]

    @torch.no_grad()
    def trace(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> Trace:
        """Run forward once and return every captured tensor (no gradients)."""
        with capturing() as store:
            output = self.forward(input_ids, attention_mask, token_type_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        L = self.cfg.num_layers
        hidden_states = (store["embed.hook_out"],) + tuple(
            store[f"blocks.{i}.hook_resid_post"] for i in range(L)
        )
        attention = torch.stack([store[f"blocks.{i}.attn.hook_pattern"] for i in range(L)])
        return Trace(
            output=output,
            hidden_states=hidden_states,
            attention=attention,  # [L, B, H, T, T]
            tensors=store,
            input_ids=input_ids,
            attention_mask=attention_mask,
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
