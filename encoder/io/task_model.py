"""A model trained here on a toy task: encoder, head, tokenizer, task, and its record.

    model = train(TrainConfig(task="reverse")).task_model()   # encoder.train.trainer
    model.save("reverse-model")          # config.json, model.safetensors, tokenizer.json
    model = load_task_model("reverse-model")
    ids = model.check_text("3 1 4 1 5 9 2 6")          # ValueError for a wrong symbol or length

Its config.json is marked `"format": FORMAT`, which tells it from a BERT config:

    {"format": "encoder-explorer-task-model", "format_version": 1,
     "encoder": {every EncoderConfig field},
     "task": {"name": "reverse", "seq_len": 8, "vocab": 10, "num_classes": 10},
     "training": {"steps": 600, "held_out_accuracy": 1.0, ...}}      # optional, for labels

The masked-word task's "task" section adds "head": its LMHeadConfig (every field), the one
encoder.tasks.classifier.word_head_config builds for the encoder, tied: the word embeddings are
saved once (no "head.decoder.weight"); its tokenizer.json is encoder.tasks.masked's. Without
"head", a symbol task's (format_version 1 reads both).

Loading trusts nothing in the files (see encoder.io.checkpoint_files): unknown keys, values of the
wrong type, tensors that do not match the config, or a tokenizer that is not the task's are each
a ValueError naming the file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

import torch
from safetensors.torch import save as save_safetensors
from tokenizers import Tokenizer

from encoder.core.config import EncoderConfig
from encoder.core.lm_head import LMHeadConfig, MaskedLMHead
from encoder.core.model import TransformerEncoder
from encoder.core.options import placement_of
from encoder.core.said import Said, said_of
from encoder.io.checkpoint_files import (
    CONFIG_FILE,
    MAX_FILE_BYTES,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    Files,
    check_files,
    file_source,
    listed,
    read_checkpoint_dir,
    read_json_object,
    read_safetensors,
)
from encoder.io.tensor_checks import check_layers, check_tensors, meta_state
from encoder.io.tokenize import tokenizer_from_json
from encoder.tasks.classifier import TokenClassifier, word_head_config
from encoder.tasks.tasks import Task, get_task

FORMAT = "encoder-explorer-task-model"
FORMAT_VERSION = 1
CONFIG_KEYS = ("format", "format_version", "encoder", "task", "training")  # "training" optional
TASK_KEYS = ("name", "seq_len", "vocab", "num_classes", "head")  # "head": the masked task's only
TIED_WEIGHT = "head.decoder.weight"  # a masked-LM head's decoder: the word embeddings, not saved
# What the training record may say; each a number, true/false, or null (unknown).
TRAINING_KEYS = (
    "steps",  # steps trained
    "lr",
    "warmup_steps",
    "batch_size",
    "seed",
    "held_out_accuracy",  # per token, on held-out sequences never trained on
    "held_out_sequence_accuracy",
    "stopped",  # stopped before the planned steps
)
ENCODER_FIELDS = tuple(f.name for f in fields(EncoderConfig))


def is_task_model_config(config: dict) -> bool:
    """True for the config.json of a model saved here (it carries a "format" key; BERT's not)."""
    return "format" in config


@dataclass
class TaskModel:
    """A trained token classifier with everything needed to feed it text and save it."""

    classifier: TokenClassifier  # eval mode; classifier.encoder is the TransformerEncoder
    tokenizer: Tokenizer  # the task's: task_tokenizer(vocab) (symbol i -> id i), or its words'
    task: str
    seq_len: int  # the length it was trained on; check_text accepts exactly this (masked: at most)
    training: dict[str, float | int | bool | None] = field(default_factory=dict)  # TRAINING_KEYS

    @property
    def encoder(self) -> TransformerEncoder:
        return self.classifier.encoder

    @property
    def cfg(self) -> EncoderConfig:
        return self.classifier.encoder.cfg

    @property
    def vocab(self) -> int:
        return self.cfg.vocab_size

    @property
    def num_classes(self) -> int:
        return self.vocab if self.mlm_head is not None else self.classifier.head.out_features

    @property
    def mlm_head(self) -> MaskedLMHead | None:
        """The masked-word task's head (tied to the word embeddings); None for a symbol task."""
        return self.classifier.lm_head

    @property
    def example(self) -> str:
        """An input to type for this model (e.g. "3 1 4 1 5 9 2 6", or a sentence with [MASK])."""
        return get_task(self.task).example(self.seq_len, self.vocab)

    def label(self) -> str:
        """A name for a menu, e.g. "reverse, pre-norm 2 x 4, 600 steps, 100% held-out"."""
        cfg = self.cfg
        parts = [
            self.task,
            f"{placement_of(cfg.norm_first)}-norm {cfg.num_layers} x {cfg.num_heads}",
        ]
        if self.training.get("steps") is not None:
            parts.append(f"{self.training['steps']} steps")
        if self.training.get("held_out_accuracy") is not None:
            parts.append(f"{self.training['held_out_accuracy']:.0%} held-out")
        return ", ".join(parts)

    def check_text(self, text: str) -> list[int]:
        """The ids of one input; ValueError saying why not (the task's check_text)."""
        return get_task(self.task).check_text(text, self.tokenizer, self.seq_len)

    @torch.no_grad()
    def predicted_classes(self, output: torch.Tensor) -> list[list[str]]:
        """The head's answer for each position of encoder outputs [B, T, d], as class names."""
        logits = self.classifier.head(output.to(self.encoder.device))  # [B, T, classes]
        class_name = get_task(self.task).class_name
        return [[class_name(c, self.vocab) for c in row] for row in logits.argmax(-1).tolist()]

    def config_dict(self) -> dict:
        """What config.json holds (see the module docstring)."""
        config = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "encoder": self.cfg.to_dict(),
            "task": {
                "name": self.task,
                "seq_len": self.seq_len,
                "vocab": self.vocab,
                "num_classes": self.num_classes,
            },
        }
        if self.mlm_head is not None:
            config["task"]["head"] = self.mlm_head.cfg.to_dict()
        if self.training:
            config["training"] = dict(self.training)
        return config

    def files(self) -> Files:
        """The checkpoint's three files as bytes (e.g. for checkpoint_archive)."""
        state = {
            name: tensor.detach().to("cpu").contiguous()
            for name, tensor in self.classifier.state_dict().items()
            if not (name == TIED_WEIGHT and self.mlm_head is not None)  # the word embeddings
        }
        return {
            CONFIG_FILE: json.dumps(self.config_dict(), indent=2).encode("utf-8"),
            WEIGHTS_FILE: save_safetensors(state, metadata={"format": "pt"}),
            TOKENIZER_FILE: self.tokenizer.to_str(pretty=True).encode("utf-8"),
        }

    def save(self, directory: str | Path) -> Path:
        """Write the three files into `directory` (created if need be); return its path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name, data in self.files().items():
            (directory / name).write_bytes(data)
        return directory


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _section(config: dict, key: str, source: str) -> dict:
    value = config[key]
    if not isinstance(value, dict):
        raise ValueError(
            Said(
                "{source}: {key!r} must be a JSON object, not {kind}",
                source=source,
                key=key,
                kind=type(value).__name__,
            )
        )
    return value


def _check_keys(given: dict, allowed: tuple[str, ...], required: tuple[str, ...], where: str):
    unknown = [key for key in given if key not in allowed]
    if unknown:
        raise ValueError(
            Said("{source} has unknown keys {keys}", source=where, keys=listed(map(repr, unknown)))
        )
    missing = [key for key in required if key not in given]
    if missing:
        raise ValueError(
            Said("{path} lacks the keys {keys}", path=where, keys=listed(map(repr, missing)))
        )


def _encoder_config(config: dict, source: str) -> EncoderConfig:
    encoder = _section(config, "encoder", source)
    _check_keys(encoder, ENCODER_FIELDS, ENCODER_FIELDS, f"{source}: 'encoder'")
    try:
        return EncoderConfig(**encoder)
    except (TypeError, ValueError) as error:
        raise ValueError(
            Said("{path} describes an invalid encoder: {error}", path=source, error=said_of(error))
        ) from error


def _head(task: dict, spec: Task, cfg: EncoderConfig, source: str) -> LMHeadConfig | None:
    """The masked task's head config (the one the task builds for `cfg`), else None; ValueError
    for a head that is missing, not that one, or given to a task without one."""
    expected = word_head_config(cfg) if spec.reads_words else None
    given = task.get("head")
    if given != (expected and expected.to_dict()):
        raise ValueError(
            Said(
                "{source}: the {name} task's 'head' must be {expected}, not {given}",
                source=source,
                name=spec.name,
                expected=Said("absent") if expected is None else expected.to_dict(),
                given=Said("absent") if "head" not in task else given,
            )
        )
    return expected


def _task(
    config: dict, cfg: EncoderConfig, source: str
) -> tuple[str, int, int, LMHeadConfig | None]:
    """(task name, seq_len, num_classes, the masked task's head config), each checked against
    the task and the encoder."""
    task = _section(config, "task", source)
    _check_keys(task, TASK_KEYS, TASK_KEYS[:-1], f"{source}: 'task'")
    name, seq_len, vocab, num_classes = (task[key] for key in TASK_KEYS[:-1])
    if not isinstance(name, str):
        raise ValueError(
            Said("{source}: task name {name!r} must be a string", source=source, name=name)
        )
    try:
        spec = get_task(name)
    except ValueError as error:
        raise ValueError(Said("{source}: {error}", source=source, error=said_of(error))) from error
    for key in ("seq_len", "vocab", "num_classes"):
        if not _whole(task[key]) or task[key] < 1:
            raise ValueError(
                Said(
                    "{source}: task {key}={value!r} must be a whole number >= 1",
                    source=source,
                    key=key,
                    value=task[key],
                )
            )
    if vocab != cfg.vocab_size:
        raise ValueError(
            Said(
                "{source}: task vocab={vocab} differs from the encoder's vocab_size={vocab_size}",
                source=source,
                vocab=vocab,
                vocab_size=cfg.vocab_size,
            )
        )
    if seq_len > cfg.max_len:
        raise ValueError(
            Said(
                "{source}: task seq_len={seq_len} is more than the encoder's max_len={max_len}",
                source=source,
                seq_len=seq_len,
                max_len=cfg.max_len,
            )
        )
    expected = spec.num_classes(seq_len, vocab)
    if num_classes != expected:
        raise ValueError(
            Said(
                "{source}: task num_classes={num_classes}, but {name} with seq_len={seq_len} and "
                "vocab={vocab} has {expected} classes",
                source=source,
                num_classes=num_classes,
                name=name,
                seq_len=seq_len,
                vocab=vocab,
                expected=expected,
            )
        )
    return name, seq_len, num_classes, _head(task, spec, cfg, source)


def _training(config: dict, source: str) -> dict:
    if "training" not in config:
        return {}
    training = _section(config, "training", source)
    _check_keys(training, TRAINING_KEYS, (), f"{source}: 'training'")
    for key, value in training.items():
        number = isinstance(value, (int, float)) and math.isfinite(value)
        if value is not None and not number:
            raise ValueError(
                Said(
                    "{source}: training {key}={value!r} must be a finite number, true/false or "
                    "null",
                    source=source,
                    key=key,
                    value=value,
                )
            )
    return training


def task_model_from_config(config: dict, files: Files, source: str) -> TaskModel:
    """Rebuild a TaskModel from its parsed config.json and its files' bytes (see the docstring)."""
    config_source = file_source(source, CONFIG_FILE)
    _check_keys(config, CONFIG_KEYS, CONFIG_KEYS[:-1], config_source)
    if config["format"] != FORMAT:
        raise ValueError(
            Said(
                "{source}: format {value!r} is not {wanted!r}",
                source=config_source,
                value=config["format"],
                wanted=FORMAT,
            )
        )
    if config["format_version"] != FORMAT_VERSION:
        raise ValueError(
            Said(
                "{source}: format_version {value!r} is not {wanted}, the one this version reads",
                source=config_source,
                value=config["format_version"],
                wanted=FORMAT_VERSION,
            )
        )
    cfg = _encoder_config(config, config_source)
    name, seq_len, num_classes, head = _task(config, cfg, config_source)
    training = _training(config, config_source)
    check_layers(cfg, config_source)

    weights_source = file_source(source, WEIGHTS_FILE)
    tensors = read_safetensors(files[WEIGHTS_FILE], weights_source)
    expected = meta_state(lambda: TokenClassifier(cfg, num_classes, head))
    if head is not None:
        del expected[TIED_WEIGHT]  # the word embeddings'
    check_tensors(tensors, expected, weights_source)
    classifier = TokenClassifier(cfg, num_classes, head)
    classifier.load_state_dict(tensors, strict=head is None)  # (checked: only the tie missing)

    tokenizer_source = file_source(source, TOKENIZER_FILE)
    tokenizer = get_task(name).tokenizer(cfg.vocab_size)
    given = tokenizer_from_json(files[TOKENIZER_FILE], tokenizer_source)
    if given.to_str() != tokenizer.to_str():
        if head is not None:
            raise ValueError(
                Said(
                    "{source} is not the masked task's tokenizer (its corpus's words)",
                    source=tokenizer_source,
                )
            )
        raise ValueError(
            Said(
                "{source} is not the tokenizer of a task with {count} symbols (one WordLevel "
                "token per symbol, split on whitespace)",
                source=tokenizer_source,
                count=cfg.vocab_size,
            )
        )
    return TaskModel(classifier.eval(), tokenizer, name, seq_len, training)


def task_model_from_files(files: Files, source: str, max_bytes: int = MAX_FILE_BYTES) -> TaskModel:
    """A TaskModel from the three files' bytes (e.g. files_from_archive of an upload)."""
    check_files(files, source, max_bytes)
    config = read_json_object(files[CONFIG_FILE], file_source(source, CONFIG_FILE))
    if not is_task_model_config(config):
        raise ValueError(
            Said(
                "{source} has no 'format' key: it is not a task model saved by this program (a "
                "BERT checkpoint loads with load_pretrained)",
                source=file_source(source, CONFIG_FILE),
            )
        )
    return task_model_from_config(config, files, source)


def load_task_model(path: str | Path, max_bytes: int = MAX_FILE_BYTES) -> TaskModel:
    """The TaskModel saved in directory `path` (TaskModel.save)."""
    return task_model_from_files(read_checkpoint_dir(path, max_bytes), str(path), max_bytes)
