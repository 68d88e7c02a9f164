"""LayerNorm and RMSNorm, computed explicitly so that their statistics can be captured: the
norms of the block (ln1, ln2), the final norm and the embedding norm. Shapes as in
encoder.core.model."""

from __future__ import annotations

import torch
from torch import nn

from encoder.core import hooks
from encoder.core.capture import HookPoint
from encoder.core.config import EncoderConfig


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
