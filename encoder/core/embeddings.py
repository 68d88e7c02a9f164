"""The embeddings that feed block 0: tokens (optionally scaled), positions (a learned or a
sinusoidal table; none with RoPE), token types, a norm, dropout and a projection to d_model.
Shapes as in encoder.core.model."""

from __future__ import annotations

import math

import torch
from torch import nn

from encoder.core import hooks
from encoder.core.capture import HookPoint
from encoder.core.config import EncoderConfig
from encoder.core.norm import Norm


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
