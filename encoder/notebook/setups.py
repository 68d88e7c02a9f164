"""What `explore` runs: a setup (a model and its tokenizer) named in any of the ways a notebook
user has at hand, and the attention it computes for one sentence."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer

from encoder.core.model import TransformerEncoder
from encoder.io.checkpoints import load_pretrained
from encoder.io.finder import checkpoint_path
from encoder.io.tokenize import load_tokenizer, tokenize

ModelLike = TransformerEncoder | str | Path | None
TokenizerLike = Tokenizer | str | Path | None


@dataclass(frozen=True)
class Setup:
    """A model in eval mode, the tokenizer that feeds it, and its name ("A" or "B")."""

    model: TransformerEncoder
    tokenizer: Tokenizer
    name: str


@dataclass(frozen=True)
class SentenceAttention:
    """One sentence's attention in one setup."""

    attention: torch.Tensor  # [layers, heads, T, T]
    tokens: list[str]  # T tokens
    name: str  # "A", or "B" to compare
    layer_labels: tuple[int, ...] | None = None  # the layers' numbers; default 0, 1, ...


@functools.lru_cache(maxsize=4)
def _checkpoint(name: str) -> tuple[TransformerEncoder, Tokenizer]:
    """A checkpoint loaded once per process: a directory, or a model found on this machine by
    its name (encoder.io.finder); default: the bundled MiniLM."""
    return load_pretrained(checkpoint_path(name) if name else None)


def resolve(model: ModelLike = None, tokenizer: TokenizerLike = None, name: str = "A") -> Setup:
    """A Setup from our model, a checkpoint directory, the name of a model found on this
    machine ("FacebookAI/roberta-base": in ENCODER_EXPLORER_MODELS or the Hugging Face cache), or
    nothing (the bundled MiniLM).

    tokenizer: a tokenizers.Tokenizer, a tokenizer.json or a directory holding one; by default
    the checkpoint's own, and for a model object the bundled MiniLM's (our random-weight models
    use its vocabulary). A token id outside the model's vocabulary is a ValueError when it runs.
    """
    if model is None or isinstance(model, (str, Path)):
        encoder, own_tokenizer = _checkpoint(str(model) if model is not None else "")
    elif isinstance(model, TransformerEncoder):
        encoder, own_tokenizer = model, None
    else:
        raise TypeError(
            f"model={type(model).__name__} is not one of ours: give a TransformerEncoder, "
            "a checkpoint directory or a found model's name, or nothing for the bundled MiniLM "
            "(for a Hugging Face model, run it with output_attentions=True and use head_view)"
        )
    if isinstance(tokenizer, (str, Path)):
        tokenizer = load_tokenizer(tokenizer)
    elif tokenizer is None:
        tokenizer = own_tokenizer if own_tokenizer is not None else load_tokenizer()
    elif not isinstance(tokenizer, Tokenizer):
        raise TypeError(
            f"tokenizer={type(tokenizer).__name__}: give a tokenizers.Tokenizer, "
            "a tokenizer.json or a checkpoint directory"
        )
    return Setup(encoder.eval(), tokenizer, name)


def sentence_attention(setup: Setup, text: str) -> SentenceAttention:
    """Run one sentence (cut to the model's max_len tokens) and keep only its attention."""
    if not isinstance(text, str):
        raise TypeError(f"text={type(text).__name__}: give one sentence as a str")
    batch = tokenize([text], setup.tokenizer, setup.model.cfg.max_len)
    trace = setup.model.trace(batch.input_ids, batch.attention_mask, names=())
    return SentenceAttention(trace.attention[:, 0], batch.tokens[0], setup.name)  # [L, H, T, T]
