"""Model sources: where a setup's weights come from and what reads its text.

A source id is "random" (random weights, the sidebar's architecture), "pretrained" (the bundled
MiniLM) or the id of a model trained or uploaded in this browser session
(app.controls.session_models, which makes its models' sources). app.main resolves each setup's id
into a ModelSource once per page run, before any run; the process-wide runs (app.runs) then read
only what the ModelSource carries and never look into a browser session, so a cached entry means the
same to every session."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st
import tokenizers

from encoder import EncoderConfig, TransformerEncoder
from encoder.io.checkpoint_files import CONFIG_FILE
from encoder.io.families import family_config
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import bundled_model_dir, load_tokenizer
from encoder.tasks.task_tokenizer import check_task_text, task_tokenizer

BUILT_IN = ("random", "pretrained")  # the sources every session has; the rest are its own
LABELS = {
    "random": "Random weights, my architecture",
    "pretrained": "Pretrained MiniLM (all-MiniLM-L6-v2)",
}


@dataclass(frozen=True, eq=False)
class ModelSource:
    """A resolved model source: its id (what runs are cached under), the tokenizer that reads
    the text, a task's sequence check ((text) -> ids, ValueError naming what is wrong), and for
    a session model its own encoder (eval mode, on the CPU) and TaskModel."""

    id: str
    reader: tokenizers.Tokenizer
    check: Callable[[str], object] | None = None
    encoder: TransformerEncoder | None = None
    task_model: TaskModel | None = None

    @property
    def tag(self) -> str | None:
        """A session model's id: the cache entries built from it leave with it."""
        return self.id if self.encoder is not None else None


@st.cache_resource(show_spinner="Loading the MiniLM tokenizer…")
def tokenizer() -> tokenizers.Tokenizer:
    return load_tokenizer()


@st.cache_resource(show_spinner=False)
def pretrained_config() -> EncoderConfig:
    """The bundled checkpoint's architecture, read without its weights."""
    directory = bundled_model_dir()
    return family_config(json.loads((directory / CONFIG_FILE).read_text()), str(directory))


def built_in(source: str, cfg: EncoderConfig) -> ModelSource:
    """Random weights or MiniLM with `cfg`: MiniLM's WordPiece reads the text, but for random
    weights with a toy task's vocabulary (e.g. setup B following a trained toy model), which
    read the task's symbols."""
    if source not in BUILT_IN:
        raise ValueError(f"{source!r} is not one of {', '.join(BUILT_IN)}")
    if cfg.vocab_size == tokenizer().get_vocab_size():
        return ModelSource(source, tokenizer())
    reader = task_tokenizer(cfg.vocab_size)
    return ModelSource(source, reader, lambda text: check_task_text(text, reader, cfg.max_len))
