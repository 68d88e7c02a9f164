"""Multi-head self-attention, written out (an explicit softmax, a hook point on q, k, v, the
scores, the pattern, z and the output), with RoPE's turns of q and k and a local window's mask.
Shapes as in encoder.core.model."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from encoder.core import hooks
from encoder.core.capture import HookPoint, ablated_heads
from encoder.core.config import EncoderConfig


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

    def forward(
        self, x: torch.Tensor, key_padding: torch.Tensor | None, causal: bool = False
    ) -> torch.Tensor:
        """causal: each query sees only keys at or before itself (a decoder's mask)."""
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
        if causal:  # a decoder's mask: keys after the query are not seen
            later = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=1)
            if key_padding is not None:  # as for the window: a padding query keeps every key
                later = later & ~key_padding[:, None, :, None]  # [B, 1, T, T]
            scores = scores.masked_fill(later, float("-inf"))
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
