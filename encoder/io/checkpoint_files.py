"""The three files of a checkpoint, read as if they came from a stranger.

A checkpoint is config.json, model.safetensors and tokenizer.json: a directory on disk, a zip
archive of the three (what a page offers for download and takes back by upload), or the files'
bytes in a dict {file name: bytes}. Every reader here checks before it trusts:

- each file is at most `max_bytes` (MAX_FILE_BYTES by default), checked before it is read whole;
- weights are read with safetensors only: nothing is unpickled, nothing is executed;
- a config may describe at most MAX_LAYERS blocks, and the expected tensors are worked out on
  PyTorch's "meta" device (shapes without storage), so a config cannot make us allocate anything
  before the file's tensors are known to match it.

Every problem is a ValueError that names the file and what is wrong with it.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from torch import nn
from torch.overrides import TorchFunctionMode

from encoder.core.config import EncoderConfig
from encoder.io.tokenize import TOKENIZER_FILE

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
CHECKPOINT_FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE)
MAX_FILE_BYTES = 200_000_000  # per file; the bundled MiniLM's weights are 91 MB
MAX_LAYERS = 64  # blocks a checkpoint's config may describe (BERT-large has 24)
MAX_LISTED = 5  # names a message lists before it says "and N more"

Files = dict[str, bytes]  # file name (one of CHECKPOINT_FILES) -> its bytes


def file_source(source: str, name: str) -> str:
    """How a message names file `name` of the checkpoint `source` (a directory or an upload)."""
    return f"{source}/{name}"


def listed(names: Iterable[str]) -> str:
    """Names for a message: the first MAX_LISTED, then how many more."""
    names = list(names)
    shown = ", ".join(names[:MAX_LISTED])
    return shown if len(names) <= MAX_LISTED else f"{shown} and {len(names) - MAX_LISTED} more"


def check_size(source: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise ValueError(
            f"{source} is {size:,} bytes, more than the limit of {max_bytes:,} bytes "
            f"({max_bytes / 1e6:,.0f} MB)"
        )


def read_checkpoint_dir(directory: str | Path, max_bytes: int = MAX_FILE_BYTES) -> Files:
    """The three files of a checkpoint directory; FileNotFoundError naming a missing one."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"checkpoint directory not found: {directory}")
    files: Files = {}
    for name in CHECKPOINT_FILES:
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"checkpoint file not found: {path}")
        check_size(str(path), path.stat().st_size, max_bytes)
        with path.open("rb") as file:
            files[name] = file.read(max_bytes + 1)  # the file may have grown since stat
        check_size(str(path), len(files[name]), max_bytes)
    return files


def check_files(files: Files, source: str, max_bytes: int = MAX_FILE_BYTES) -> None:
    """Exactly the three checkpoint files, each within the size limit."""
    missing = [name for name in CHECKPOINT_FILES if name not in files]
    if missing:
        raise ValueError(f"{source} lacks {listed(missing)}")
    unexpected = sorted(set(files) - set(CHECKPOINT_FILES))
    if unexpected:
        raise ValueError(
            f"{source} holds {listed(unexpected)}; a checkpoint is only {listed(CHECKPOINT_FILES)}"
        )
    for name, data in files.items():
        check_size(file_source(source, name), len(data), max_bytes)


def checkpoint_archive(files: Files) -> bytes:
    """The checkpoint's files as one zip archive (deflated), e.g. for a download button."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in CHECKPOINT_FILES:
            archive.writestr(name, files[name])
    return buffer.getvalue()


def files_from_archive(data: bytes, source: str, max_bytes: int = MAX_FILE_BYTES) -> Files:
    """The three files inside a zip archive (at its top or in one folder), read in memory.

    Nothing is extracted to disk. ValueError for anything else in the archive, a file over the
    limit (by its declared size, and never reading past it), a damaged or encrypted archive.
    """
    try:
        return _files_from_archive(data, source, max_bytes)
    except ValueError as error:
        logger.warning("refused archive %s (%s bytes): %s", source, f"{len(data):,}", error)
        raise


def _files_from_archive(data: bytes, source: str, max_bytes: int) -> Files:
    check_size(source, len(data), len(CHECKPOINT_FILES) * max_bytes)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise ValueError(f"{source} is not a zip archive: {error}") from error
    files: Files = {}
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = info.filename.rsplit("/", 1)[-1]
            where = file_source(source, info.filename)
            if name not in CHECKPOINT_FILES:
                raise ValueError(
                    f"{source} holds {info.filename!r}; a checkpoint archive holds only "
                    f"{listed(CHECKPOINT_FILES)}"
                )
            if name in files:
                raise ValueError(f"{source} holds {name} twice")
            if info.flag_bits & 0x1:
                raise ValueError(f"{where} is encrypted")
            check_size(where, info.file_size, max_bytes)
            try:
                files[name] = archive.read(info)  # reads at most file_size bytes, checks CRC
            except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError) as error:
                raise ValueError(f"{where} cannot be read: {error}") from error
    check_files(files, source, max_bytes)
    return files


def read_json_object(data: bytes, source: str) -> dict:
    """A JSON object from a file's bytes; ValueError naming the file otherwise."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"{source} is not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise ValueError(f"{source} must hold a JSON object, not {type(value).__name__}")
    return value


def read_safetensors(data: bytes, source: str) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file; ValueError for anything else (a pickle, random bytes)."""
    try:
        return load_safetensors(data)
    except (SafetensorError, ValueError, TypeError, OverflowError) as error:
        raise ValueError(f"{source} is not a valid safetensors file: {error}") from error


def check_layers(cfg: EncoderConfig, source: str) -> None:
    """Refuse a config with more than MAX_LAYERS blocks before anything is built for it."""
    if cfg.num_layers > MAX_LAYERS:
        raise ValueError(
            f"{source}: num_layers={cfg.num_layers} is more than the {MAX_LAYERS} blocks a "
            f"checkpoint may have"
        )


class _NoInit(TorchFunctionMode):
    """torch.nn.init's functions leave tensors as they are: initialising meta tensors does
    nothing, but torch's meta kernel of normal_ imports torch._dynamo the first time, which stays
    resident (76 MB measured)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", None) == "torch.nn.init":
            return args[0] if args else kwargs["tensor"]
        return func(*args, **(kwargs or {}))


def meta_state(build: Callable[[], nn.Module]) -> dict[str, torch.Tensor]:
    """The state_dict `build()` would have, as meta tensors: names, shapes, dtypes, no storage."""
    with torch.device("meta"), _NoInit():
        return build().state_dict()


def check_tensors(
    tensors: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], source: str
) -> None:
    """The file's tensors are exactly the expected ones, each with the expected shape and dtype."""
    missing = [name for name in expected if name not in tensors]
    if missing:
        raise ValueError(f"{source} lacks the tensors {listed(missing)}")
    unexpected = sorted(set(tensors) - set(expected))
    if unexpected:
        raise ValueError(f"{source} has tensors this model does not use: {listed(unexpected)}")
    for name, want in expected.items():
        got = tensors[name]
        if got.shape != want.shape:
            raise ValueError(
                f"{source}: tensor {name} has shape {tuple(got.shape)}, but {CONFIG_FILE} "
                f"implies {tuple(want.shape)}"
            )
        if got.dtype != want.dtype:
            raise ValueError(f"{source}: tensor {name} is {got.dtype}, expected {want.dtype}")
