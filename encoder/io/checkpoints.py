"""Load a checkpoint into our TransformerEncoder: a Hugging Face encoder, or a model saved here.

A directory holds config.json, the weights (model.safetensors, or shards named in
model.safetensors.index.json) and tokenizer.json (the default is the bundled all-MiniLM-L6-v2).
A config.json with a "format" key is a task model saved here (encoder.io.task_model); any other
is read by its family (encoder.io.families: BERT, RoBERTa, XLM-R, CamemBERT, DistilBERT,
ELECTRA, ALBERT, ModernBERT, by its model_type), and anything else is refused with a ValueError
naming what it is and why. Files are read as encoder.io.checkpoint_files describes:
size-limited, safetensors only (nothing is unpickled, nothing is downloaded), tensors checked
against the config before the model is built.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from tokenizers import Tokenizer

from encoder.core.lm_head import MaskedLMHead
from encoder.core.model import TransformerEncoder
from encoder.core.said import Said
from encoder.io.checkpoint_files import (
    CONFIG_FILE,
    MAX_DISK_FILE_BYTES,
    MAX_FILE_BYTES,
    TOKENIZER_FILE,
    Files,
    check_files,
    check_size,
    file_source,
    read_checkpoint_dir,
    read_config_file,
    read_json_object,
)
from encoder.io.families import Family, encoder_from_files, family_name, family_of
from encoder.io.task_model import TaskModel, is_task_model_config, task_model_from_config
from encoder.io.tokenize import bundled_model_dir, tokenizer_from_json

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: the encoder and tokenizer every view reads, and for a model trained
    here, the whole TaskModel (task, classifier head, training record)."""

    encoder: TransformerEncoder  # eval mode
    tokenizer: Tokenizer  # padding and truncation off
    task_model: TaskModel | None = None  # None for a Hugging Face encoder
    family: str | None = None  # the encoder's family ("BERT", "RoBERTa", "XLM-R", ...); None
    # for a model trained here (its task_model says what it is)
    mlm_head: MaskedLMHead | None = None  # the masked-LM head loaded with the encoder (eval)
    no_head: Said | None = None  # why there is none, when there is none


# Files beside a sentence-transformers model (all-MiniLM-L6-v2's): it was trained for sentence
# embeddings, so a masked-LM head is missing by design, not by accident.
SENTENCE_TRANSFORMERS_FILES = ("modules.json", "config_sentence_transformers.json")
BUNDLED_NAME = "all-MiniLM-L6-v2"
NO_TASK_HEAD = Said("a model trained here for a task has no masked-LM head")


def checkpoint_from_files(files: Files, source: str, max_bytes: int = MAX_FILE_BYTES) -> Checkpoint:
    """A checkpoint of either kind from its files' bytes (e.g. an upload's).

    `source` names the checkpoint in messages. ValueError naming the file and what is wrong.
    """
    try:
        checkpoint = _checkpoint(files, source, max_bytes)
    except ValueError as error:
        logger.warning("refused checkpoint %s: %s", source, error)
        raise
    cfg, task_model = checkpoint.encoder.cfg, checkpoint.task_model
    kind = (
        f"{checkpoint.family}-style encoder"
        if task_model is None
        else f"{task_model.task} task model"
    )
    logger.info(
        "loaded %s from %s: %d layers x %d heads, d_model %d, %s bytes",
        kind, source, cfg.num_layers, cfg.num_heads, cfg.d_model,
        f"{sum(len(data) for data in files.values()):,}",
    )  # fmt: skip
    return checkpoint


def _family(config: dict, config_source: str) -> Family | None:
    """The family that reads this config.json, None for a task model saved here; ValueError for
    anything else (a decoder is refused as one, whatever its files)."""
    return None if is_task_model_config(config) else family_of(config, config_source)


def _checkpoint(files: Files, source: str, max_bytes: int) -> Checkpoint:
    config_source = file_source(source, CONFIG_FILE)
    if CONFIG_FILE not in files:
        raise ValueError(Said("{source} lacks {names}", source=source, names=CONFIG_FILE))
    check_size(config_source, len(files[CONFIG_FILE]), max_bytes)
    config = read_json_object(files[CONFIG_FILE], config_source)
    family = _family(config, config_source)  # what the model is decides before its files do
    check_files(files, source, max_bytes)
    if family is None:
        task_model = task_model_from_config(config, files, source)
        return Checkpoint(
            task_model.encoder,
            task_model.tokenizer,
            task_model,
            mlm_head=task_model.mlm_head,
            no_head=None if task_model.mlm_head is not None else NO_TASK_HEAD,
        )
    encoder, head, no_head = encoder_from_files(family, config, files, source)
    tokenizer = tokenizer_from_json(files[TOKENIZER_FILE], file_source(source, TOKENIZER_FILE))
    name = family_name(config, config_source)
    return Checkpoint(encoder, tokenizer, family=name, mlm_head=head, no_head=no_head)


def _sentence_embeddings(checkpoint: Checkpoint, directory: Path, name: str) -> Checkpoint:
    """A checkpoint without a head beside sentence-transformers' files says why it has none."""
    if checkpoint.mlm_head is not None or checkpoint.task_model is not None:
        return checkpoint
    if not any((directory / file).is_file() for file in SENTENCE_TRANSFORMERS_FILES):
        return checkpoint
    why = Said(
        "{name} was trained for sentence embeddings (a sentence-transformers model); its "
        "checkpoint has no masked-LM head",
        name=name,
    )
    return replace(checkpoint, no_head=why)


def load_checkpoint(
    path: str | Path | None = None, max_bytes: int = MAX_DISK_FILE_BYTES
) -> Checkpoint:
    """The checkpoint in directory `path` (default: the bundled all-MiniLM-L6-v2)."""
    directory = Path(path) if path is not None else bundled_model_dir()
    try:
        config_source = str(directory / CONFIG_FILE)
        _family(
            read_json_object(read_config_file(directory, max_bytes), config_source), config_source
        )
        files = read_checkpoint_dir(directory, max_bytes)
    except (ValueError, OSError) as error:
        logger.warning("refused checkpoint %s: %s", directory, error)
        raise
    checkpoint = checkpoint_from_files(files, str(directory), max_bytes)
    bundled = directory.resolve() == bundled_model_dir().resolve()
    return _sentence_embeddings(checkpoint, directory, BUNDLED_NAME if bundled else str(directory))


def load_pretrained(
    path: str | Path | None = None, max_bytes: int = MAX_DISK_FILE_BYTES
) -> tuple[TransformerEncoder, Tokenizer]:
    """Our encoder (eval mode) with a checkpoint's weights, and its tokenizer.

    path: a directory with config.json, model.safetensors (or model.safetensors.index.json and
    its shards) and tokenizer.json, from Hugging Face (BERT, RoBERTa, XLM-R, CamemBERT,
    DistilBERT, ELECTRA, ALBERT, ModernBERT) or saved here (TaskModel.save); default: the
    bundled all-MiniLM-L6-v2. Each file may be at most `max_bytes`. For a task model's
    classifier head, use load_checkpoint(path).task_model or
    encoder.io.task_model.load_task_model(path). Anything else is a ValueError naming what it
    is and why.
    """
    checkpoint = load_checkpoint(path, max_bytes)
    return checkpoint.encoder, checkpoint.tokenizer
