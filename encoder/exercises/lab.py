"""The live model an exercise is checked against: a model, a batch of the student's text, its
trace with every hook, and how the student's function is called (NumPy arrays or torch tensors).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tokenizers import Tokenizer

from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.exercises.student import TIME_LIMIT_S, validate_time_limit
from encoder.io.checkpoints import load_pretrained
from encoder.io.tokenize import TokenizedBatch, load_tokenizer, tokenize

BACKENDS = ("numpy", "torch")
DEFAULT_TEXT = ("The cat sat on the mat.", "Dogs bark.")  # two lengths, so the batch has padding
MAX_SENTENCES = 8
MAX_TOKENS = 64  # per sentence: the exercises need a few tokens, not a long document


@dataclass
class Lab:
    """A model in eval mode, the student's text as a padded batch, and its full trace.

    backend: "numpy" (the student's function gets float64 NumPy arrays) or "torch" (float64
    tensors). time_limit: the seconds one check gives the student's function before stopping it.
    Build one with `setup`.
    """

    model: TransformerEncoder
    batch: TokenizedBatch
    trace: Trace
    backend: str = "numpy"
    time_limit: float = TIME_LIMIT_S

    @property
    def cfg(self) -> EncoderConfig:
        return self.model.cfg

    @property
    def dtype(self) -> torch.dtype:
        """The dtype the model computed its tensors in (what the student's numbers are held to)."""
        return next(self.model.parameters()).dtype

    @property
    def key_is_token(self) -> np.ndarray:
        """[B, T] True for real tokens, False for padding."""
        return self.batch.attention_mask.numpy().astype(bool)

    def array(self, value: torch.Tensor | np.ndarray) -> np.ndarray:
        """A live tensor as float64 NumPy (what checkers compute with)."""
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().double().numpy()
        return np.array(value, dtype=np.float64)

    def given(self, value: torch.Tensor | np.ndarray) -> np.ndarray | torch.Tensor:
        """A copy of a value in the student's backend (their function may change it freely):
        numbers as float64, masks as bool, ids as int64."""
        if isinstance(value, np.ndarray):
            value = torch.from_numpy(np.ascontiguousarray(value))
        value = value.detach().cpu().clone()
        if value.is_floating_point():
            value = value.double()
        return value if self.backend == "torch" else value.numpy()


def setup(
    model: EncoderConfig | TransformerEncoder | str | Path | None = None,
    text: str | list[str] | tuple[str, ...] = DEFAULT_TEXT,
    *,
    backend: str = "numpy",
    tokenizer: Tokenizer | None = None,
    time_limit: float = TIME_LIMIT_S,
) -> Lab:
    """The live model exercises are checked against.

    model: None or "minilm" (the bundled pretrained all-MiniLM-L6-v2), an EncoderConfig (random
    weights of that architecture, from its seed), a checkpoint directory (BERT-style or saved
    here), or a TransformerEncoder you built. text: one sentence or several (several of different
    lengths give a padding mask). tokenizer: for a model you pass in (default: the bundled one).
    time_limit: seconds each check gives the student's function (lab.time_limit changes it later).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r} must be one of {BACKENDS}")
    validate_time_limit(time_limit)
    if model is None or (isinstance(model, str) and model.lower() == "minilm"):
        model, tokenizer = load_pretrained()
    elif isinstance(model, (str, Path)):
        model, tokenizer = load_pretrained(model)
    elif isinstance(model, EncoderConfig):
        model = TransformerEncoder(model)
    elif not isinstance(model, TransformerEncoder):
        raise ValueError(
            f"model must be None, 'minilm', an EncoderConfig, a checkpoint directory or a "
            f"TransformerEncoder, got {type(model).__name__}"
        )
    sentences = [text] if isinstance(text, str) else list(text)
    if not 1 <= len(sentences) <= MAX_SENTENCES:
        raise ValueError(f"give 1 to {MAX_SENTENCES} sentences, got {len(sentences)}")
    tokenizer = tokenizer if tokenizer is not None else load_tokenizer()
    batch = tokenize(sentences, tokenizer, min(model.cfg.max_len, MAX_TOKENS))
    model.eval()
    trace = model.trace(batch.input_ids.to(model.device), batch.attention_mask.to(model.device))
    return Lab(model, batch, trace.to("cpu"), backend, time_limit)
