"""The files of a checkpoint, read as if they came from a stranger.

A checkpoint is config.json, its weights and tokenizer.json: a directory on disk, a zip archive of
them (what a page offers for download and takes back by upload), or the files' bytes in a dict
{file name: bytes}. The weights are model.safetensors, or shards named in
model.safetensors.index.json (Hugging Face's sharded layout). Every reader here checks before it
trusts:

- each file is at most `max_bytes` (MAX_FILE_BYTES by default for an upload, MAX_DISK_FILE_BYTES
  for a directory on this machine), checked before it is read whole;
- weights are read with safetensors only: nothing is unpickled, nothing is executed; a
  checkpoint whose weights are only a pickle (pytorch_model.bin) is refused with the way to
  convert it;
- a config may describe at most MAX_LAYERS blocks, and the expected tensors are worked out on
  PyTorch's "meta" device (shapes without storage), so a config cannot make us allocate anything
  before the file's tensors are known to match it (encoder.io.tensor_checks).

Every problem is a ValueError that names the file and what is wrong with it.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from collections.abc import Iterable
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors

from encoder.core.said import Said
from encoder.io.tokenize import TOKENIZER_FILE

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"  # sharded weights: {"weight_map": {tensor: shard}}
CHECKPOINT_FILES = (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE)
# Weights in formats that are never read here: pickles run code when loaded.
PICKLE_FILES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
MAX_FILE_BYTES = 200_000_000  # per uploaded file; the bundled MiniLM's weights are 91 MB
MAX_DISK_FILE_BYTES = 1_500_000_000  # per file on this machine's disk: BERT-large is 1.34 GB
MAX_SHARDS = 256  # weight files a sharded checkpoint may name
MAX_LAYERS = 64  # blocks a checkpoint's config may describe (BERT-large has 24)
MAX_LISTED = 5  # names a message lists before it says "and N more"

Files = dict[str, bytes]  # file name (config.json, tokenizer.json, weights, shards) -> its bytes


def file_source(source: str, name: str) -> str:
    """How a message names file `name` of the checkpoint `source` (a directory or an upload)."""
    return f"{source}/{name}"


def listed(names: Iterable[str]) -> str:
    """Names for a message: the first MAX_LISTED, then how many more."""
    names = list(names)
    shown = ", ".join(names[:MAX_LISTED])
    if len(names) <= MAX_LISTED:
        return shown
    return Said("{names} and {count} more", names=shown, count=len(names) - MAX_LISTED)


def check_size(source: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise ValueError(
            Said(
                "{source} is {size} bytes, more than the limit of {limit} bytes ({megabytes} MB)",
                source=source,
                size=format(size, ","),
                limit=format(max_bytes, ","),
                megabytes=format(max_bytes / 1e6, ",.0f"),
            )
        )


def read_file(path: Path, max_bytes: int) -> bytes:
    """A file's bytes, refused (ValueError) past max_bytes before it is read whole."""
    check_size(str(path), path.stat().st_size, max_bytes)
    with path.open("rb") as file:
        data = file.read(max_bytes + 1)  # the file may have grown since stat
    check_size(str(path), len(data), max_bytes)
    return data


def read_config_file(directory: str | Path, max_bytes: int = MAX_DISK_FILE_BYTES) -> bytes:
    """config.json of a checkpoint directory; FileNotFoundError when the directory or the file
    is missing (the directory is then no checkpoint at all)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(Said("checkpoint directory not found: {path}", path=str(directory)))
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise FileNotFoundError(Said("checkpoint file not found: {path}", path=str(path)))
    return read_file(path, max_bytes)


CONVERT_COMMAND = (
    'python -c "from transformers import AutoModel; '
    "AutoModel.from_pretrained('DIR').save_pretrained('DIR')\""
)


def pickle_refusal(source: str | None, names: Iterable[str]) -> str:
    """The message for weights that are only a pickle: what was found, why it is not read, how
    to convert it (`source` None: the sentence says "it", of a directory already named)."""
    values = {"names": listed(names), "command": CONVERT_COMMAND, "weights": WEIGHTS_FILE}
    if source is None:
        return Said(
            "it has its weights only as {names}, a Python pickle, which can run code when it is "
            "loaded, so it is never read here. Convert it to safetensors once, where you trust "
            "the file: {command} writes DIR/{weights}",
            **values,
        )
    return Said(
        "{source} has its weights only as {names}, a Python pickle, which can run code when it "
        "is loaded, so it is never read here. Convert it to safetensors once, where you trust "
        "the file: {command} writes DIR/{weights}",
        source=source,
        **values,
    )


def _weight_names(directory: Path, source: str, max_bytes: int) -> list[str]:
    """The weight files to read: model.safetensors, or the index and the shards it names."""
    if (directory / WEIGHTS_FILE).is_file():
        return [WEIGHTS_FILE]
    if (directory / INDEX_FILE).is_file():
        index = read_file(directory / INDEX_FILE, max_bytes)
        return [INDEX_FILE, *shard_names(index, file_source(source, INDEX_FILE))]
    pickles = [name for name in PICKLE_FILES if (directory / name).is_file()]
    if pickles:
        raise ValueError(pickle_refusal(source, pickles))
    raise FileNotFoundError(
        Said("checkpoint file not found: {path}", path=str(directory / WEIGHTS_FILE))
    )


def read_checkpoint_dir(directory: str | Path, max_bytes: int = MAX_DISK_FILE_BYTES) -> Files:
    """The files of a checkpoint directory: config.json, the weights (model.safetensors, or
    model.safetensors.index.json and its shards) and tokenizer.json. FileNotFoundError for a
    missing directory, config.json or weights; ValueError for weights only as a pickle (with how
    to convert them), for a missing tokenizer.json, or a file over max_bytes."""
    directory = Path(directory)
    files: Files = {CONFIG_FILE: read_config_file(directory, max_bytes)}
    for name in _weight_names(directory, str(directory), max_bytes):
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(
                Said(
                    "checkpoint file not found: {path} (named in {index})",
                    path=str(path),
                    index=INDEX_FILE,
                )
            )
        files[name] = read_file(path, max_bytes)
    if not (directory / TOKENIZER_FILE).is_file():
        raise ValueError(
            Said(
                "{path} has no {tokenizer}: its tokenizer is read only from that file (the "
                "tokenizers library's format, which transformers' fast tokenizers save with "
                "AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR))",
                path=str(directory),
                tokenizer=TOKENIZER_FILE,
            )
        )
    files[TOKENIZER_FILE] = read_file(directory / TOKENIZER_FILE, max_bytes)
    return files


def shard_names(index: bytes, source: str) -> list[str]:
    """The shard files a model.safetensors.index.json names, in order; ValueError for an index
    that is not one, or names a shard outside its directory."""
    weight_map = read_json_object(index, source).get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise ValueError(
            Said("{source} has no 'weight_map' of tensor names to shard files", source=source)
        )
    names = sorted(set(map(str, weight_map.values())))
    odd = [
        name for name in names if "/" in name or "\\" in name or not name.endswith(".safetensors")
    ]
    if odd:
        raise ValueError(
            Said(
                "{source} names shards that are not .safetensors files beside it: {names}",
                source=source,
                names=listed(odd),
            )
        )
    if len(names) > MAX_SHARDS:
        raise ValueError(
            Said(
                "{source} names {count} shards, more than the {limit} allowed",
                source=source,
                count=len(names),
                limit=MAX_SHARDS,
            )
        )
    return names


def check_files(files: Files, source: str, max_bytes: int = MAX_FILE_BYTES) -> None:
    """config.json, tokenizer.json and the weights (model.safetensors, or the index and exactly
    the shards it names), nothing else, each within the size limit."""
    for name, data in files.items():
        check_size(file_source(source, name), len(data), max_bytes)
    pickles = [name for name in PICKLE_FILES if name in files]
    if pickles and WEIGHTS_FILE not in files and INDEX_FILE not in files:
        raise ValueError(pickle_refusal(source, pickles))
    weights = [INDEX_FILE] if INDEX_FILE in files else [WEIGHTS_FILE]
    if INDEX_FILE in files:
        weights += shard_names(files[INDEX_FILE], file_source(source, INDEX_FILE))
    missing = [name for name in (CONFIG_FILE, *weights, TOKENIZER_FILE) if name not in files]
    if missing:
        raise ValueError(Said("{source} lacks {names}", source=source, names=listed(missing)))
    unexpected = sorted(set(files) - {CONFIG_FILE, TOKENIZER_FILE, *weights})
    if unexpected:
        raise ValueError(
            Said(
                "{source} holds {names}; a checkpoint is only {files}",
                source=source,
                names=listed(unexpected),
                files=listed(CHECKPOINT_FILES),
            )
        )


def checkpoint_archive(files: Files) -> bytes:
    """The checkpoint's files as one zip archive (deflated), e.g. for a download button."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def files_from_archive(data: bytes, source: str, max_bytes: int = MAX_FILE_BYTES) -> Files:
    """The checkpoint's files inside a zip archive (at its top or in one folder), read in memory.

    Nothing is extracted to disk. ValueError for anything else in the archive, a file over the
    limit (by its declared size, and never reading past it), a damaged or encrypted archive.
    """
    try:
        return _files_from_archive(data, source, max_bytes)
    except ValueError as error:
        logger.warning("refused archive %s (%s bytes): %s", source, f"{len(data):,}", error)
        raise


def _files_from_archive(data: bytes, source: str, max_bytes: int) -> Files:
    check_size(source, len(data), (MAX_SHARDS + 3) * max_bytes)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise ValueError(
            Said("{source} is not a zip archive: {error}", source=source, error=str(error))
        ) from error
    files: Files = {}
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            name = info.filename.rsplit("/", 1)[-1]
            where = file_source(source, info.filename)
            if name in PICKLE_FILES:
                raise ValueError(pickle_refusal(source, [name]))
            if name not in CHECKPOINT_FILES and not _weights_name(name):
                raise ValueError(
                    Said(
                        "{source} holds {name!r}; a checkpoint archive holds only {files}",
                        source=source,
                        name=info.filename,
                        files=listed(CHECKPOINT_FILES),
                    )
                )
            if name in files:
                raise ValueError(Said("{source} holds {name} twice", source=source, name=name))
            if info.flag_bits & 0x1:
                raise ValueError(Said("{source} is encrypted", source=where))
            check_size(where, info.file_size, max_bytes)
            try:
                files[name] = archive.read(info)  # reads at most file_size bytes, checks CRC
            except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError) as error:
                raise ValueError(
                    Said("{source} cannot be read: {error}", source=where, error=str(error))
                ) from error
    check_files(files, source, max_bytes)
    return files


def _weights_name(name: str) -> bool:
    """A name an archive's sharded weights may have (check_files matches them to the index)."""
    return name == INDEX_FILE or name.endswith(".safetensors")


def read_json_object(data: bytes, source: str) -> dict:
    """A JSON object from a file's bytes; ValueError naming the file otherwise."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(
            Said("{source} is not valid JSON: {error}", source=source, error=str(error))
        ) from error
    if not isinstance(value, dict):
        raise ValueError(
            Said(
                "{source} must hold a JSON object, not {kind}",
                source=source,
                kind=type(value).__name__,
            )
        )
    return value


def read_safetensors(data: bytes, source: str) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file; ValueError for anything else (a pickle, random bytes)."""
    try:
        return load_safetensors(data)
    except (SafetensorError, ValueError, TypeError, OverflowError) as error:
        raise ValueError(
            Said(
                "{source} is not a valid safetensors file: {error}", source=source, error=str(error)
            )
        ) from error


def read_weights(files: Files, source: str) -> dict[str, torch.Tensor]:
    """The tensors of a checkpoint's weights: model.safetensors, or every shard its index names
    (each tensor in the shard the index says, none in two). ValueError naming the file."""
    if INDEX_FILE not in files:
        return read_safetensors(files[WEIGHTS_FILE], file_source(source, WEIGHTS_FILE))
    index_source = file_source(source, INDEX_FILE)
    weight_map = read_json_object(files[INDEX_FILE], index_source)["weight_map"]
    tensors: dict[str, torch.Tensor] = {}
    for shard in shard_names(files[INDEX_FILE], index_source):
        shard_source = file_source(source, shard)
        shard_tensors = read_safetensors(files[shard], shard_source)
        elsewhere = [name for name in shard_tensors if weight_map.get(name) != shard]
        if elsewhere:
            raise ValueError(
                Said(
                    "{source} holds {names}, which {index} does not place there",
                    source=shard_source,
                    names=listed(elsewhere),
                    index=INDEX_FILE,
                )
            )
        tensors.update(shard_tensors)
    absent = [name for name in weight_map if name not in tensors]
    if absent:
        raise ValueError(
            Said(
                "{source} lists {names}, which no shard holds",
                source=index_source,
                names=listed(absent),
            )
        )
    return tensors
