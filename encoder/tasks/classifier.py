"""The model a toy task trains: our TransformerEncoder plus a linear head per token, or, for the
masked-word task, the masked-LM head every family shares (encoder.core.lm_head) tied to the word
embeddings.

It lives apart from the trainer so that loading a saved task model (encoder.io.task_model) needs
the model's code only, never the training loop.
"""

from __future__ import annotations

import torch
from torch import nn

from encoder.core.config import EncoderConfig
from encoder.core.lm_head import HEAD_ACTIVATIONS, LMHeadConfig, MaskedLMHead
from encoder.core.model import TransformerEncoder, seeded

# A task model's learned positions start at the scale of the sinusoidal table (its entries' root
# mean square, 1 / sqrt 2), not at BERT's 0.02: from 0.02 attention can hardly tell the positions
# apart, and a model first learns what needs no order (the bag of the sequence's tokens) and must
# then find where each token is. Measured here (reverse, 600 steps at lr 3e-3, seeds 0 and 1,
# 2026-11-29): the Training view's default on MiniLM's architecture (post-norm, 4 layers x 12
# heads, d_model 96) stayed at 0.32 held-out accuracy, its loss flat at 1.6 from step 20; the
# 2 x 4 default left that plateau (loss < 1) only at step 229 and 293. From this scale the first
# reaches 1.00 held-out (every sequence right) and the second leaves the plateau at step 17.
POSITION_STD = 0.5**0.5


def word_head_config(cfg: EncoderConfig) -> LMHeadConfig:
    """The masked-word task's head for encoder `cfg`: BERT's (GELU unless the encoder's own
    activation is one a head takes), as wide as the word embeddings and tied to them."""
    activation = cfg.activation if cfg.activation in HEAD_ACTIVATIONS else "gelu"
    width = cfg.embedding_size or cfg.d_model
    return LMHeadConfig(cfg.d_model, width, cfg.vocab_size, activation, cfg.layer_norm_eps)


class TokenClassifier(nn.Module):
    """Our TransformerEncoder plus a head giving class logits for every token: a Linear, or with
    `lm_head` a MaskedLMHead tied to the word embeddings (its classes are the vocabulary's).

    Same config and num_classes -> identical weights (the head, and the learned positions'
    start at POSITION_STD, are seeded by cfg.seed too).
    """

    def __init__(
        self, cfg: EncoderConfig, num_classes: int, lm_head: LMHeadConfig | None = None
    ) -> None:
        super().__init__()
        self.encoder = TransformerEncoder(cfg)
        with seeded(cfg.seed):
            if lm_head is None:
                self.head = nn.Linear(cfg.d_model, num_classes)
            else:
                self.head = MaskedLMHead(lm_head)
                self.head.tie(self.encoder.embed.token)
            position = getattr(self.encoder.embed, "position", None)  # learned positions only
            if position is not None:
                nn.init.normal_(position.weight, std=POSITION_STD)

    @property
    def lm_head(self) -> MaskedLMHead | None:
        return self.head if isinstance(self.head, MaskedLMHead) else None

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        *,
        checkpoint_blocks: bool = False,
    ) -> torch.Tensor:  # [B, T] -> [B, T, classes]
        """checkpoint_blocks: recompute each block in backward (TransformerEncoder.forward)."""
        states = self.encoder(input_ids, attention_mask, checkpoint_blocks=checkpoint_blocks)
        return self.head(states)
