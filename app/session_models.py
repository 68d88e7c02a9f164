"""Models trained or uploaded in this browser session: model sources beside random and MiniLM.

They live in the session's state (app.state), so each browser session sees only its own, and at most
MAX_SESSION_MODELS of them (the oldest is dropped first, never the one in use). Each has a
unique id (a random UUID, never a hash of its tensors) that names it as a model source: in the
source control, in the URL, and in the keys of the shared run cache (app.runs), where no other
session can ever ask for the same id.

Their weights are not counted in the server's memory budget (app.memory): a trained model is a
few hundred kB, an uploaded checkpoint at most MAX_FILE_BYTES per file, and a session keeps at
most MAX_SESSION_MODELS of them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import PurePath

from tokenizers import Tokenizer

from app import state
from encoder.core.config import EncoderConfig, placement_of
from encoder.core.model import TransformerEncoder
from encoder.io.checkpoint_files import (
    MAX_FILE_BYTES,
    Files,
    check_size,
    checkpoint_archive,
    files_from_archive,
)
from encoder.io.checkpoints import Checkpoint, checkpoint_from_files
from encoder.io.task_model import TaskModel
from encoder.train.trainer import TrainResult

MAX_SESSION_MODELS = 8
UPLOAD_LIMIT = MAX_FILE_BYTES  # bytes per uploaded file (read at call time, so tests can lower it)
PREFIXES = ("trained-", "uploaded-")


@dataclass(frozen=True, eq=False)
class SessionModel:
    """One model source of this session: the encoder every view reads, its tokenizer, and for a
    model trained on a toy task, the whole TaskModel (task, length, classifier head)."""

    id: str
    label: str
    encoder: TransformerEncoder  # eval mode, on the CPU, never changed
    tokenizer: Tokenizer
    task_model: TaskModel | None  # None for an uploaded BERT-style checkpoint
    file_name: str  # the download's name, without ".zip"

    @property
    def cfg(self) -> EncoderConfig:
        return self.encoder.cfg

    def archive(self) -> bytes | None:
        """The checkpoint as a zip (config.json, model.safetensors, tokenizer.json); None for an
        uploaded BERT-style checkpoint, whose files the user already has."""
        if self.task_model is None:
            return None
        return checkpoint_archive(self.task_model.files())


def is_session_source(source: str) -> bool:
    """True for a source id of this module's kind (whether or not this session has it)."""
    return source.startswith(PREFIXES)


def session_models() -> dict[str, SessionModel]:
    """This session's models by id, oldest first."""
    return state.keep("_session_models", dict)


def find(source: str) -> SessionModel | None:
    """The session model `source` names; None for "random" and "pretrained".

    ValueError when it names a model this session does not have (dropped, or another session's).
    """
    if not is_session_source(source):
        return None
    model = session_models().get(source)
    if model is None:
        raise ValueError(
            "That model is not in this browser session any more: a session keeps the last "
            f"{MAX_SESSION_MODELS} models trained or uploaded in it."
        )
    return model


def _unique(label: str) -> str:
    taken = {model.label for model in session_models().values()}
    if label not in taken:
        return label
    count = 2
    while f"{label} ({count})" in taken:
        count += 1
    return f"{label} ({count})"


def add(kind: str, label: str, checkpoint: Checkpoint, file_name: str, in_use: str) -> str:
    """Keep a model (kind "trained" or "uploaded"), dropping the oldest past MAX_SESSION_MODELS
    but never `in_use` (the selected source); its new id."""
    models = session_models()
    model_id = f"{kind}-{uuid.uuid4().hex}"
    models[model_id] = SessionModel(
        id=model_id,
        label=_unique(label),
        encoder=checkpoint.encoder,
        tokenizer=checkpoint.tokenizer,
        task_model=checkpoint.task_model,
        file_name=file_name,
    )
    for old in [key for key in models if key not in (in_use, model_id)]:
        if len(models) <= MAX_SESSION_MODELS:
            break
        del models[old]
    return model_id


def trained_label(model: TaskModel) -> str:
    """TaskModel.label(), plus the warmup when there was one (the comparison's variants)."""
    warmup = model.training.get("warmup_steps")
    return model.label() + (f", warmup {warmup}" if warmup else "")


def add_trained(result: TrainResult, in_use: str) -> str:
    """Keep a finished training run as a model source; its id."""
    model = TaskModel.from_result(result)
    cfg = model.cfg
    file_name = f"{model.task}-{placement_of(cfg.norm_first)}-norm-{cfg.num_layers}x{cfg.num_heads}"
    checkpoint = Checkpoint(model.encoder, model.tokenizer, model)
    return add("trained", trained_label(model), checkpoint, file_name, in_use)


def checkpoint_from_upload(uploads: list[tuple[str, bytes]]) -> tuple[Checkpoint, str]:
    """(checkpoint, name) from uploaded files: one .zip, or config.json, model.safetensors and
    tokenizer.json. ValueError naming the file and what is wrong; nothing is executed."""
    if not uploads:
        raise ValueError("No file was uploaded.")
    for name, data in uploads:
        check_size(name, len(data), UPLOAD_LIMIT)
    if len(uploads) == 1 and uploads[0][0].lower().endswith(".zip"):
        name, data = uploads[0]
        files = files_from_archive(data, name, UPLOAD_LIMIT)
    else:
        files: Files = {}
        for name, data in uploads:
            if name in files:
                raise ValueError(f"{name} was uploaded twice")
            files[name] = data
        name = "upload"
    return checkpoint_from_files(files, name, UPLOAD_LIMIT), name


def add_upload(uploads: list[tuple[str, bytes]], in_use: str) -> str:
    """Load an upload (see checkpoint_from_upload) and keep it as a model source; its id."""
    checkpoint, name = checkpoint_from_upload(uploads)
    zipped = name.lower().endswith(".zip")
    where = f"uploaded {name}" if zipped else "uploaded"
    if checkpoint.task_model is not None:
        label = f"{trained_label(checkpoint.task_model)} ({where})"
    else:
        cfg = checkpoint.encoder.cfg
        label = (
            f"{placement_of(cfg.norm_first)}-norm {cfg.num_layers} x {cfg.num_heads}, "
            f"d_model {cfg.d_model} ({where})"
        )
    file_name = PurePath(name).stem if zipped else "checkpoint"
    return add("uploaded", label, checkpoint, file_name, in_use)
