"""The model a toy task trains: our TransformerEncoder plus a linear head per token.

It lives apart from the trainer so that loading a saved task model (encoder.io.task_model) needs
the model's code only, never the training loop.
"""

from __future__ import annotations

import torch
from torch import nn

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder, seeded


class TokenClassifier(nn.Module):
    """Our TransformerEncoder plus a linear head giving class logits for every token.

    Same config and num_classes -> identical weights (the head is seeded by cfg.seed too).
    """

    def __init__(self, cfg: EncoderConfig, num_classes: int) -> None:
        super().__init__()
        self.encoder = TransformerEncoder(cfg)
        with seeded(cfg.seed):
            self.head = nn.Linear(cfg.d_model, num_classes)

    def forward(
        self, input_ids: torch.Tensor, *, checkpoint_blocks: bool = False
    ) -> torch.Tensor:  # [B, T] -> [B, T, classes]
        """checkpoint_blocks: recompute each block in backward (TransformerEncoder.forward)."""
        return self.head(self.encoder(input_ids, checkpoint_blocks=checkpoint_blocks))
