"""The encoders on this machine, found offline and without loading a weight.

Two places are looked in:

- the directories named in ENCODER_EXPLORER_MODELS (separated by os.pathsep): each is a checkpoint
  directory (it holds config.json) or a folder of them (its subdirectories, one level down);
- the local Hugging Face cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub):
  models--ORG--NAME/snapshots/REVISION/, the revision refs/main names (else the newest), whose
  files are links into blobs/.

Each directory found becomes a FoundModel: its name ("FacebookAI/roberta-base" for the cache's
models--FacebookAI--roberta-base, the directory's name otherwise), its family (named by
encoder.io.families from config.json's model_type), its parameter count and bytes (from the
safetensors headers alone: 8 bytes of length, then JSON; sharded checkpoints through
model.safetensors.index.json) and whether it has a tokenizer.json. A directory that cannot be used
(a decoder, a family the loaders do not read, weights only as a pickle, a broken config.json, no
tokenizer.json) is listed all the same, with `problem` saying why in a sentence: a teacher who
finds their model missing reads why there.

The scan is bounded: one level below each named folder, MAX_SCANNED directory entries in all,
MAX_FOUND models; a header larger than MAX_HEADER_BYTES is not read. Nothing here raises for what
it finds on disk.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from encoder.core.said import Said, said_of
from encoder.io.checkpoint_files import (
    CONFIG_FILE,
    INDEX_FILE,
    MAX_DISK_FILE_BYTES,
    PICKLE_FILES,
    WEIGHTS_FILE,
    listed,
    pickle_refusal,
    shard_names,
)
from encoder.io.families import family_name
from encoder.io.task_model import is_task_model_config
from encoder.io.tokenize import TOKENIZER_FILE

MODELS_ENV = "ENCODER_EXPLORER_MODELS"
HUB_CACHE_ENV = "HF_HUB_CACHE"
HF_HOME_ENV = "HF_HOME"
CACHE_PREFIX = "models--"
MAX_SCANNED = 5000  # directory entries looked at, in all the places together
MAX_FOUND = 200  # models listed
MAX_HEADER_BYTES = 100_000_000  # safetensors' own limit on a header
MAX_CONFIG_BYTES = 1_000_000  # a config.json or a shard index larger than this is not read

TASK_MODEL_FAMILY = "trained here"  # a model saved by this app (its config has a "format")


@dataclass(frozen=True)
class FoundModel:
    """One checkpoint directory found on this machine; `problem` is "" when it can be loaded."""

    name: str  # "FacebookAI/roberta-base" (the cache), or the directory's name
    path: Path
    family: str  # the family (encoder.io.families), TASK_MODEL_FAMILY, or config.json's model_type
    parameters: int | None = None  # values in the safetensors files (None: not read)
    weight_bytes: int | None = None  # bytes of the safetensors files
    has_tokenizer: bool = False
    largest_file: int = 0  # bytes of its largest safetensors file
    problem: str = ""  # why it cannot be used, in a sentence; "" when it can

    @property
    def usable(self) -> bool:
        return not self.problem


def hub_cache_dir() -> Path:
    """The local Hugging Face cache, as huggingface_hub finds it."""
    if os.environ.get(HUB_CACHE_ENV):
        return Path(os.environ[HUB_CACHE_ENV]).expanduser()
    if os.environ.get(HF_HOME_ENV):
        return Path(os.environ[HF_HOME_ENV]).expanduser() / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def model_dirs_from_env() -> list[Path]:
    """The places ENCODER_EXPLORER_MODELS names, in its order (empty entries skipped)."""
    raw = os.environ.get(MODELS_ENV, "")
    return [Path(part).expanduser() for part in raw.split(os.pathsep) if part.strip()]


class _Budget:
    """How many more directory entries the scan may look at."""

    def __init__(self, entries: int) -> None:
        self.left = entries

    def subdirectories(self, folder: Path) -> list[Path]:
        """`folder`'s subdirectories by name, within the budget; [] when it cannot be read."""
        found = []
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if self.left <= 0:
                        break
                    self.left -= 1
                    try:
                        if entry.is_dir():
                            found.append(Path(entry.path))
                    except OSError:
                        continue
        except OSError:
            return []
        return sorted(found)


def _named_dirs(places: list[Path], budget: _Budget) -> Iterator[tuple[str, Path]]:
    """(name, directory) of each checkpoint directory the named places hold."""
    for place in places:
        if (place / CONFIG_FILE).exists() or (place / CONFIG_FILE).is_symlink():
            yield place.name or str(place), place
            continue
        for child in budget.subdirectories(place):
            if (child / CONFIG_FILE).exists() or (child / CONFIG_FILE).is_symlink():
                yield child.name, child


def _snapshot(model_dir: Path, budget: _Budget) -> Path | None:
    """The snapshot refs/main names, else the most recently changed one; None when none."""
    snapshots = model_dir / "snapshots"
    try:
        revision = (model_dir / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        revision = ""
    if revision and "/" not in revision and (snapshots / revision).is_dir():
        return snapshots / revision
    candidates = budget.subdirectories(snapshots)

    def changed(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    return max(candidates, key=changed, default=None)


def _cache_dirs(cache: Path, budget: _Budget) -> Iterator[tuple[str, Path]]:
    """(repository id, snapshot directory) of each model in a Hugging Face cache."""
    for model_dir in budget.subdirectories(cache):
        if not model_dir.name.startswith(CACHE_PREFIX):
            continue  # datasets--, spaces--, .locks
        snapshot = _snapshot(model_dir, budget)
        if snapshot is not None:
            yield model_dir.name.removeprefix(CACHE_PREFIX).replace("--", "/"), snapshot


def find_models(
    places: list[Path] | None = None, cache: Path | None = None, max_found: int = MAX_FOUND
) -> list[FoundModel]:
    """Every checkpoint directory in `places` (default: ENCODER_EXPLORER_MODELS's) and in the
    Hugging Face cache `cache` (default: hub_cache_dir()), named places first; names are unique
    (a second directory of the same name is named by its path)."""
    places = model_dirs_from_env() if places is None else places
    cache = hub_cache_dir() if cache is None else cache
    budget = _Budget(MAX_SCANNED)
    found: list[FoundModel] = []
    seen_paths: set[Path] = set()
    names: set[str] = set()
    for name, directory in (*_named_dirs(places, budget), *_cache_dirs(cache, budget)):
        if len(found) >= max_found:
            break
        resolved = directory.resolve()
        if resolved in seen_paths:
            continue
        seen_paths.add(resolved)
        name = str(directory) if name in names else name
        names.add(name)
        found.append(inspect_dir(name, directory))
    return found


def find_model(name: str, found: list[FoundModel] | None = None) -> FoundModel:
    """The model a name means: a directory (any checkpoint directory), else one found by its
    name ("FacebookAI/roberta-base"). ValueError saying where it looked and what it found."""
    path = Path(name).expanduser()
    if path.is_dir():
        return inspect_dir(path.name or name, path)
    found = find_models() if found is None else found
    for model in found:
        if model.name == name:
            return model
    usable = [model.name for model in found if model.usable]
    have = f"found there: {listed(usable)}" if usable else "no usable model was found there"
    raise ValueError(
        f"checkpoint directory not found: {name}; nor is it the name of a model in "
        f"{MODELS_ENV} or the Hugging Face cache ({hub_cache_dir()}): {have}"
    )


def checkpoint_path(name: str | Path) -> Path:
    """The checkpoint directory `name` means: a directory as it is (its loader says what is
    wrong with it), else the model found by that name, when it can be used. ValueError saying
    why not."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    model = find_model(str(name))
    if model.problem:
        raise ValueError(f"{model.name} ({model.path}) cannot be used: {model.problem}")
    return model.path


def _read_config(path: Path) -> tuple[dict | None, str]:
    """(config, "") or (None, why config.json cannot be read)."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            return None, Said(
                "its config.json is {size} bytes, too large for a config", size=format(size, ",")
            )
        config = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, Said("its config.json is missing (a link to a file not downloaded?)")
    except OSError as error:
        return None, Said(
            "its config.json cannot be read ({error})", error=str(error.strerror or error)
        )
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return None, Said("its config.json is not valid JSON ({error})", error=str(error))
    if not isinstance(config, dict):
        return None, Said("its config.json is not a JSON object")
    return config, ""


def family_problem(config: dict) -> tuple[str, str]:
    """(family, "") for a config whose model_type the loaders read (encoder.io.families; what
    else its loader checks is said when it loads), or (its model_type, why not: a decoder, an
    encoder-decoder, another attention, a family not read)."""
    if is_task_model_config(config):
        return TASK_MODEL_FAMILY, ""
    try:
        return family_name(config, CONFIG_FILE), ""
    except ValueError as error:
        return str(config.get("model_type", "unknown")), said_of(error)


def safetensors_values(path: Path) -> int:
    """The number of values in a safetensors file, from its header alone. ValueError when the
    header is not one."""
    with path.open("rb") as file:
        start = file.read(8)
        if len(start) < 8:
            raise ValueError(Said("{name} is too short to be a safetensors file", name=path.name))
        (length,) = struct.unpack("<Q", start)
        if length > MAX_HEADER_BYTES:
            raise ValueError(
                Said(
                    "{name}'s header claims {size} bytes: not safetensors",
                    name=path.name,
                    size=format(length, ","),
                )
            )
        header = file.read(length)
    try:
        tensors = json.loads(header)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ValueError(
            Said("{name}'s header is not JSON: not a safetensors file", name=path.name)
        ) from None
    if not isinstance(tensors, dict):
        raise ValueError(Said("{name}'s header is not a JSON object", name=path.name))
    try:
        return sum(
            math.prod(tensor["shape"]) for name, tensor in tensors.items() if name != "__metadata__"
        )
    except (KeyError, TypeError):
        raise ValueError(
            Said("{name}'s header has a tensor without a shape", name=path.name)
        ) from None


def _weight_files(directory: Path) -> tuple[list[Path], str]:
    """(the safetensors files, "") or ([], why there are none to read)."""
    if (directory / WEIGHTS_FILE).exists():
        return [directory / WEIGHTS_FILE], ""
    index = directory / INDEX_FILE
    if index.exists():
        try:
            size = index.stat().st_size
            if size > MAX_CONFIG_BYTES:
                return [], Said(
                    "its {index} is {size} bytes, too large for an index",
                    index=INDEX_FILE,
                    size=format(size, ","),
                )
            return [directory / name for name in shard_names(index.read_bytes(), INDEX_FILE)], ""
        except OSError as error:
            return [], Said(
                "its {index} cannot be read ({error})",
                index=INDEX_FILE,
                error=str(error.strerror or error),
            )
        except ValueError as error:
            return [], said_of(error)
    if (directory / WEIGHTS_FILE).is_symlink():
        return [], Said(
            "its {weights} links to a file that is missing (an unfinished download?)",
            weights=WEIGHTS_FILE,
        )
    pickles = [name for name in PICKLE_FILES if (directory / name).exists()]
    if pickles:
        return [], pickle_refusal(None, pickles)
    return [], Said("it has no weights ({weights})", weights=WEIGHTS_FILE)


def inspect_dir(name: str, directory: Path) -> FoundModel:
    """What one checkpoint directory holds, read from its config, headers and file sizes."""
    has_tokenizer = (directory / TOKENIZER_FILE).is_file()
    config, problem = _read_config(directory / CONFIG_FILE)
    family = "unknown"
    if config is not None:
        family, problem = family_problem(config)
    files, weights_problem = _weight_files(directory)
    parameters = weight_bytes = None
    largest = 0
    if files:
        try:
            sizes = [file.stat().st_size for file in files]
            parameters = sum(safetensors_values(file) for file in files)
            weight_bytes, largest = sum(sizes), max(sizes)
        except FileNotFoundError as error:
            weights_problem = Said(
                "{name} is missing (an unfinished download?)", name=Path(str(error.filename)).name
            )
        except OSError as error:
            weights_problem = Said(
                "its weights cannot be read ({error})", error=str(error.strerror or error)
            )
        except ValueError as error:
            weights_problem = said_of(error)
    if not problem:
        problem = weights_problem
    if not problem and not has_tokenizer:
        problem = Said(
            "it has no {tokenizer} (a tokenizer saved by the tokenizers library: "
            "tokenizer.save_pretrained(DIR) writes one)",
            tokenizer=TOKENIZER_FILE,
        )
    return FoundModel(
        name=name,
        path=directory,
        family=family,
        parameters=parameters,
        weight_bytes=weight_bytes,
        has_tokenizer=has_tokenizer,
        largest_file=largest,
        problem=problem,
    )


def load_peak_bytes(model: FoundModel) -> int:
    """The memory loading `model` takes at its peak: its files' bytes read, the tensors read
    from them, and the float32 model they fill."""
    weights = model.weight_bytes or 0
    return 2 * weights + 4 * (model.parameters or 0)


def too_large(model: FoundModel, max_parameters: int, budget_bytes: int | None = None) -> str:
    """Why `model` is beyond these bounds, in a sentence; "" when it is within them."""
    if model.parameters is not None and model.parameters > max_parameters:
        return Said(
            "it has {count} million parameters, more than the limit of {limit} million",
            count=format(model.parameters / 1e6, ",.0f"),
            limit=format(max_parameters / 1e6, ",.0f"),
        )
    if model.largest_file > MAX_DISK_FILE_BYTES:
        return Said(
            "its weights file is {size} MB, more than the {limit} MB a file may have",
            size=format(model.largest_file / 1e6, ",.0f"),
            limit=format(MAX_DISK_FILE_BYTES / 1e6, ",.0f"),
        )
    peak = load_peak_bytes(model)
    if budget_bytes is not None and peak > budget_bytes:
        return Said(
            "loading it takes about {size} MB of memory, more than this server's limit of "
            "{limit} MB",
            size=format(peak / 1e6, ",.0f"),
            limit=format(budget_bytes / 1e6, ",.0f"),
        )
    return ""
