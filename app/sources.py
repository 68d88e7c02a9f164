"""Model sources: where a setup's weights come from and what reads its text.

A source id is "random" (random weights, the sidebar's architecture), "pretrained" (the bundled
MiniLM), "disk:NAME" (an encoder found on this machine by encoder.io.finder: in
ENCODER_EXPLORER_MODELS or the local Hugging Face cache, such as disk:FacebookAI/roberta-base; a
link may name it) or the id of a model trained or uploaded in this browser session
(app.controls.session_models, which makes its models' sources). A found model is loaded when it is
chosen, once for every session, as a shared entry of the memory budget (app.memory.CACHE) that
another session's page may evict and load again. app.main resolves each setup's id
into a ModelSource once per page run, before any run; the process-wide runs (app.runs) then read
only what the ModelSource carries and never look into a browser session, so a cached entry means the
same to every session."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import streamlit as st
import tokenizers

from app.i18n import N_, _, number, told
from app.memory import CACHE, size_text, tensor_bytes
from encoder import EncoderConfig, TransformerEncoder
from encoder.core.lm_head import MaskedLMHead
from encoder.core.said import Said
from encoder.inspect.limits import MAX_PARAMETERS
from encoder.inspect.masked import NO_HEAD
from encoder.inspect.similarity import Pooling, pooling_of
from encoder.io.checkpoint_files import CONFIG_FILE
from encoder.io.checkpoints import Checkpoint, load_checkpoint
from encoder.io.families import family_config
from encoder.io.finder import FoundModel, find_models, load_peak_bytes, too_large
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import bundled_model_dir, load_tokenizer
from encoder.tasks.task_tokenizer import check_task_text, task_tokenizer

BUILT_IN = ("random", "pretrained")  # the sources every session has; the rest are its own
LABELS = {
    "random": N_("Random weights, my architecture"),
    "pretrained": N_("Pretrained MiniLM (all-MiniLM-L6-v2)"),
}
FOUND_PREFIX = "disk:"  # a found model's source id: "disk:" + its name
FOUND_TTL_S = 30  # how long a scan of the machine is reused: a new download shows up after it
# A tokenizer in memory per byte of its JSON: MiniLM's 0.47 MB tokenizer.json takes 6.1 MB (13x)
TOKENIZER_BYTES_PER_JSON_BYTE = 16


@dataclass(frozen=True, eq=False)
class ModelSource:
    """A resolved model source: its id (what runs are cached under), the tokenizer that reads
    the text, a task's sequence check ((text) -> ids, ValueError naming what is wrong), and for
    a session model its own encoder (eval mode, on the CPU) and TaskModel; its masked-LM head
    (or why it has none) and the directory whose sentence-transformers config says its pooling."""

    id: str
    reader: tokenizers.Tokenizer
    check: Callable[[str], object] | None = None
    encoder: TransformerEncoder | None = None
    task_model: TaskModel | None = None
    mlm_head: MaskedLMHead | None = None  # on the CPU, beside `encoder`, counted with it
    no_head: Said | None = None  # why there is no head (the checkpoint's loader says)
    directory: Path | None = None

    def masked_head(self) -> tuple[MaskedLMHead | None, str | None]:
        """(the head, None), or (None, why there is none): the loader's Said (masked.NO_HEAD where
        it gave none), or NO_HEAD_RANDOM / NO_HEAD_TASK (random weights; a toy task's model)."""
        if self.mlm_head is not None:
            return self.mlm_head, None
        if self.id == "pretrained":
            return None, pretrained_no_head()
        if self.task_model is not None:
            return None, NO_HEAD_TASK
        if self.id == "random":
            return None, NO_HEAD_RANDOM
        return None, self.no_head or NO_HEAD

    @property
    def reads_symbols(self) -> bool:
        """A toy task's model, which reads symbols, not sentences (a masked-word model reads
        words: its head predicts them)."""
        return self.check is not None and self.mlm_head is None

    @property
    def pooling(self) -> Pooling:
        """How a sentence's embedding is pooled from the stream: the model's own
        sentence-transformers config where its directory has one, else mean over real tokens."""
        return _pooling(self.directory)

    @property
    def tag(self) -> str | None:
        """A session model's id: the cache entries built from it leave with it."""
        return self.id if self.encoder is not None else None


# masked_head's reasons the app says itself: weights never trained, a model trained on a toy task
NO_HEAD_RANDOM, NO_HEAD_TASK = "random", "task"


def no_head_text(why: str) -> str:
    """Why a model predicts no masked words (masked_head's reason), and the way to one that does."""
    if why == NO_HEAD_RANDOM:
        return _(
            "Random weights have never been trained to predict words: train a masked-word "
            "model in Training, or choose a model with a masked-LM head."
        )
    if why == NO_HEAD_TASK:
        return _(
            "This model was trained on a toy task, not to predict words: train a masked-word "
            "model in Training, or choose a model with a masked-LM head."
        )
    return _(
        "{why}: choose a model with a masked-LM head (BERT, RoBERTa and their kin found on this "
        "machine) or train a masked-word model in Training.",
        why=told(why).rstrip("."),
    )


@cache
def _pooling(directory: Path | None) -> Pooling:
    return pooling_of(directory)


@cache
def pretrained_no_head() -> Said | None:
    """Why MiniLM has no masked-LM head, as its checkpoint's loader says (read once)."""
    return load_checkpoint(bundled_model_dir()).no_head


def tokenizer() -> tokenizers.Tokenizer:
    with st.spinner(_("Loading the MiniLM tokenizer…")):
        return _tokenizer()


@st.cache_resource(show_spinner=False)
def _tokenizer() -> tokenizers.Tokenizer:
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
        directory = bundled_model_dir() if source == "pretrained" else None
        return ModelSource(source, tokenizer(), directory=directory)
    reader = task_tokenizer(cfg.vocab_size)
    return ModelSource(source, reader, lambda text: check_task_text(text, reader, cfg.max_len))


def checkpoint_bytes(checkpoint: Checkpoint) -> int:
    """What a loaded checkpoint holds: its encoder's (a task model's classifier's, a masked-LM
    head's where it is not tied to the embeddings) tensors and its tokenizer."""
    modules = [checkpoint.encoder]
    if checkpoint.task_model is not None:
        modules.append(checkpoint.task_model.classifier)
    if checkpoint.mlm_head is not None:
        modules.append(checkpoint.mlm_head)
    tokenizer = len(checkpoint.tokenizer.to_str()) * TOKENIZER_BYTES_PER_JSON_BYTE
    return tensor_bytes(modules) + tokenizer


def is_found_source(source: str) -> bool:
    """True for a source id of a model found on disk (whether or not this machine has it)."""
    return source.startswith(FOUND_PREFIX)


@st.cache_resource(ttl=FOUND_TTL_S, show_spinner=False)
def found_models() -> dict[str, FoundModel]:
    """The checkpoint directories on this machine by source id (encoder.io.finder), usable or
    not, rescanned at most every FOUND_TTL_S seconds."""
    return {FOUND_PREFIX + model.name: model for model in find_models()}


def found_problem(model: FoundModel) -> str:
    """Why the page cannot load `model`, in a sentence ("" when it can): a directory the loaders
    cannot read, or one beyond the run bounds or the server's memory budget."""
    return model.problem or too_large(model, MAX_PARAMETERS, CACHE.budget)


def found_label(model: FoundModel) -> str:
    """How the source control names a found model: its name, family, size, and whether it
    fits."""
    size = []
    if model.parameters is not None:
        count = model.parameters
        if count >= 1e6:
            size.append(_("{count}M parameters", count=number(count / 1e6, 1)))
        else:
            size.append(_("{count} parameters", count=number(count)))
    if model.weight_bytes is not None:
        size.append(size_text(model.weight_bytes))
    details = ", ".join([model.family, *size])
    if too_large(model, MAX_PARAMETERS, CACHE.budget):
        return _("{name} ({details}, too large here)", name=model.name, details=details)
    return _("{name} ({details})", name=model.name, details=details)


def found_model(source: str) -> FoundModel:
    """The found model `source` names; ValueError when this machine has no such model, or one
    the page cannot load (the sentence says why)."""
    model = found_models().get(source)
    if model is None:
        raise ValueError(
            _(
                "{name} is not among the models found on this machine (in "
                "ENCODER_EXPLORER_MODELS or the Hugging Face cache)",
                name=repr(source.removeprefix(FOUND_PREFIX)),
            )
        )
    problem = found_problem(model)
    if problem:
        raise ValueError(
            _("{name} cannot be used here: {problem}", name=model.name, problem=told(problem))
        )
    return model


def found_checkpoint(source: str) -> Checkpoint:
    """The found model `source` names, loaded with load_checkpoint once for every session (a
    shared entry of the memory budget). ValueError (MemoryRefused when it does not fit now, a
    loader's refusal, FileNotFoundError's message) with the sentence for the page."""
    model = found_model(source)

    def load() -> Checkpoint:
        CACHE.release(tags=[source])  # runs of an earlier load (evicted) hold its tensors
        return load_checkpoint(model.path)

    try:
        return CACHE.get_or_build(
            ("found model", source, model.path),
            load,
            checkpoint_bytes,
            reserve=load_peak_bytes(model),
            what=_("The model {name}", name=model.name),
        )
    except OSError as error:
        raise ValueError(
            _("{name} cannot be read: {error}", name=model.name, error=told(error))
        ) from error


def found_source(source: str) -> ModelSource:
    """A found model as a source of runs: its own tokenizer, encoder (eval mode, CPU), masked-LM
    head and pooling."""
    checkpoint = found_checkpoint(source)
    return ModelSource(
        source,
        checkpoint.tokenizer,
        encoder=checkpoint.encoder,
        mlm_head=checkpoint.mlm_head,
        no_head=checkpoint.no_head,
        directory=found_models()[source].path,
    )
