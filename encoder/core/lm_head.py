"""The masked-LM head: what turns the encoder's output at a [MASK] into a probability for every
word of the vocabulary. Every family that was trained to predict hidden words ends in the same
four steps (transformers' BertLMPredictionHead, RobertaLMHead, DistilBERT's vocab_* layers,
AlbertMLMHead, ElectraGeneratorPredictions + generator_lm_head, ModernBertPredictionHead +
decoder), which differ only in widths, activation, biases and whether the decoder is the word
embedding table itself (tied):

    states [..., d_model] -> transform (Linear d_model -> width) -> activation
        -> LayerNorm(width) -> decoder (Linear width -> vocab, + bias) -> logits [..., vocab]

width is d_model for BERT, RoBERTa, DistilBERT and ModernBERT, and the embedding size for ALBERT
and ELECTRA's generator (whose decoder is tied to their narrower word embeddings).

    head = MaskedLMHead(LMHeadConfig(d_model=384, width=384, vocab_size=30522))
    logits = head(trace.output)            # [B, T, vocab]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from encoder.core.model import ACTIVATION_FUNCTIONS
from encoder.core.said import Said

HEAD_ACTIVATIONS = ("relu", "gelu", "gelu_tanh")  # ungated: the head's transform is one Linear


@dataclass(frozen=True)
class LMHeadConfig:
    """The shape of a masked-LM head (see the module docstring)."""

    d_model: int  # the encoder's width: what the head reads
    width: int  # the transform's output and the decoder's input (d_model, or the embedding size)
    vocab_size: int
    activation: str = "gelu"  # one of HEAD_ACTIVATIONS
    norm_eps: float = 1e-12
    norm_bias: bool = True  # the LayerNorm's bias (ModernBERT may have none)
    transform_bias: bool = True  # the transform Linear's bias
    decoder_bias: bool = True  # the bias added to every word's logit
    tied: bool = True  # the decoder's weight is the encoder's word embedding table

    def __post_init__(self) -> None:
        if self.activation not in HEAD_ACTIVATIONS:
            raise ValueError(
                Said(
                    "activation={value!r} is not one of {choices}",
                    value=self.activation,
                    choices=HEAD_ACTIVATIONS,
                )
            )
        for name in ("d_model", "width", "vocab_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    Said("{name}={value!r} must be a whole number >= 1", name=name, value=value)
                )

    def to_dict(self) -> dict:
        return asdict(self)


class MaskedLMHead(nn.Module):
    """transform -> activation -> LayerNorm -> decoder, as the module docstring says. Its
    parameters: transform.weight [width, d_model] (+ .bias), norm.weight [width] (+ .bias),
    decoder.weight [vocab, width] (the word embeddings when tied), bias [vocab]."""

    def __init__(self, cfg: LMHeadConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.transform = nn.Linear(cfg.d_model, cfg.width, bias=cfg.transform_bias)
        self.activation = ACTIVATION_FUNCTIONS[cfg.activation]
        self.norm = nn.LayerNorm(cfg.width, eps=cfg.norm_eps, bias=cfg.norm_bias)
        self.decoder = nn.Linear(cfg.width, cfg.vocab_size, bias=False)
        if cfg.decoder_bias:
            self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        else:
            self.register_parameter("bias", None)

    def tie(self, word_embeddings: nn.Embedding) -> None:
        """Make the decoder's weight the encoder's word table (one tensor, as the checkpoint)."""
        if tuple(word_embeddings.weight.shape) != tuple(self.decoder.weight.shape):
            raise ValueError(
                Said(
                    "the word embeddings {embedding} and the decoder {decoder} differ in shape",
                    embedding=tuple(word_embeddings.weight.shape),
                    decoder=tuple(self.decoder.weight.shape),
                )
            )
        self.decoder.weight = word_embeddings.weight

    def forward(self, states: torch.Tensor) -> torch.Tensor:  # [..., d_model] -> [..., vocab]
        hidden = self.norm(self.activation(self.transform(states)))  # [..., width]
        return F.linear(hidden, self.decoder.weight, self.bias)  # [..., vocab]
