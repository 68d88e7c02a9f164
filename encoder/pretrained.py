"""Load a checkpoint into our TransformerEncoder: a Hugging Face BERT, or a model saved here.

The directory holds config.json, model.safetensors and tokenizer.json (the default is the bundled
all-MiniLM-L6-v2). A config.json with a "format" key is a task model saved here
(encoder.task_model); any other is read as BERT's. BERT is a post-norm encoder with exact-erf
GELU, learned positions, token types and a LayerNorm after the embeddings; its weights are
renamed onto our module paths, with the separate query/key/value projections stacked into one
`in_proj`. Files are read as encoder.checkpoint_files describes: size-limited, safetensors only
(nothing is unpickled), tensors checked against the config before the model is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Tokenizer

from encoder.checkpoint_files import (
    CONFIG_FILE,
    MAX_FILE_BYTES,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    Files,
    check_files,
    check_layers,
    file_source,
    listed,
    meta_state,
    read_checkpoint_dir,
    read_json_object,
    read_safetensors,
)
from encoder.config import EncoderConfig
from encoder.model import TransformerEncoder
from encoder.task_model import TaskModel, is_task_model_config, task_model_from_config
from encoder.tokenize import bundled_model_dir, tokenizer_from_json

# config.json key -> EncoderConfig field
CONFIG_KEYS = {
    "vocab_size": "vocab_size",
    "hidden_size": "d_model",
    "num_attention_heads": "num_heads",
    "num_hidden_layers": "num_layers",
    "intermediate_size": "d_ff",
    "hidden_act": "activation",
    "hidden_dropout_prob": "dropout",
    "max_position_embeddings": "max_len",
    "layer_norm_eps": "layer_norm_eps",
    "type_vocab_size": "type_vocab_size",
}
# BERT's hidden_act names that mean the same function as ours ("gelu" is the exact erf form).
ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}

# Tensors in the file that our encoder has no use for.
IGNORED_PREFIXES = ("pooler.", "cls.", "embeddings.position_ids")

EMBEDDING_NAMES = {
    "embeddings.word_embeddings.weight": "embed.token.weight",
    "embeddings.position_embeddings.weight": "embed.position.weight",
    "embeddings.token_type_embeddings.weight": "embed.token_type.weight",
    "embeddings.LayerNorm.weight": "embed.norm.weight",
    "embeddings.LayerNorm.bias": "embed.norm.bias",
}
# Inside encoder.layer.{i} -> inside layers.{i}
LAYER_MODULES = {
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "linear1",
    "output.dense": "linear2",
    "output.LayerNorm": "norm2",
}
QKV = ("query", "key", "value")


def bert_config(bert: dict, path: str) -> EncoderConfig:
    """The EncoderConfig that expresses the BERT described by a config.json (read from `path`)."""
    missing = [key for key in CONFIG_KEYS if key not in bert]
    if missing:
        raise ValueError(f"{path} lacks the keys {', '.join(missing)}")
    if bert.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"{path}: position_embedding_type={bert['position_embedding_type']!r} is not "
            f"supported; only 'absolute' (learned) positions are"
        )
    if not isinstance(bert["hidden_act"], str) or bert["hidden_act"] not in ACTIVATIONS:
        raise ValueError(
            f"{path}: hidden_act={bert['hidden_act']!r} is not supported; "
            f"use one of {tuple(ACTIVATIONS)}"
        )
    fields = {ours: bert[key] for key, ours in CONFIG_KEYS.items()}
    fields["activation"] = ACTIVATIONS[bert["hidden_act"]]
    try:
        return EncoderConfig(
            **fields,
            norm_first=False,
            positional="learned",
            scale_embeddings=False,
            embedding_norm=True,
            norm_type="layernorm",
        )
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path} describes an invalid encoder: {error}") from error


def _bert_name(name: str) -> str:
    """Drop a "bert." prefix and rename old LayerNorm gamma/beta to weight/bias."""
    name = name.removeprefix("bert.")
    if name.endswith(".gamma"):
        return name.removesuffix(".gamma") + ".weight"
    if name.endswith(".beta"):
        return name.removesuffix(".beta") + ".bias"
    return name


def _name_map(num_layers: int) -> dict[str, tuple[str, ...]]:
    """Our parameter name -> the BERT tensors it is made of (three for a stacked in_proj)."""
    names = {ours: (bert,) for bert, ours in EMBEDDING_NAMES.items()}
    for i in range(num_layers):
        for bert_module, our_module in LAYER_MODULES.items():
            for kind in ("weight", "bias"):
                names[f"layers.{i}.{our_module}.{kind}"] = (
                    f"encoder.layer.{i}.{bert_module}.{kind}",
                )
        for kind in ("weight", "bias"):
            names[f"layers.{i}.self_attn.in_proj_{kind}"] = tuple(
                f"encoder.layer.{i}.attention.self.{part}.{kind}" for part in QKV
            )
    return names


def map_bert_weights(
    tensors: dict[str, torch.Tensor], cfg: EncoderConfig, source: str
) -> dict[str, torch.Tensor]:
    """Rename (and stack q, k, v of) BERT tensors into a state_dict for TransformerEncoder(cfg).

    Raise ValueError naming the missing, unexpected or mis-shaped tensors.
    """
    bert = {
        _bert_name(name): tensor
        for name, tensor in tensors.items()
        if not _bert_name(name).startswith(IGNORED_PREFIXES)
    }
    expected = meta_state(lambda: TransformerEncoder(cfg))  # shapes only, nothing allocated
    name_map = _name_map(cfg.num_layers)
    missing = [b for parts in name_map.values() for b in parts if b not in bert]
    if missing:
        raise ValueError(f"{source} lacks the tensors {listed(missing)}")
    used = {b for parts in name_map.values() for b in parts}
    unexpected = sorted(set(bert) - used)
    if unexpected:
        raise ValueError(f"{source} has tensors this encoder does not use: {listed(unexpected)}")

    state: dict[str, torch.Tensor] = {}
    for ours, parts in name_map.items():
        shape = tuple(expected[ours].shape)
        part_shape = (shape[0] // len(parts), *shape[1:])  # q, k, v each take a third of the rows
        for part in parts:
            if tuple(bert[part].shape) != part_shape:
                raise ValueError(
                    f"{source}: tensor {part} has shape {tuple(bert[part].shape)}, "
                    f"but {CONFIG_FILE} implies {part_shape}"
                )
        state[ours] = torch.cat([bert[part] for part in parts])
    return state


def bert_from_config(bert: dict, files: Files, source: str) -> TransformerEncoder:
    """Our encoder (eval mode) with the weights of the BERT whose parsed config.json is `bert`."""
    cfg = bert_config(bert, file_source(source, CONFIG_FILE))
    check_layers(cfg, file_source(source, CONFIG_FILE))
    weights_source = file_source(source, WEIGHTS_FILE)
    state = map_bert_weights(
        read_safetensors(files[WEIGHTS_FILE], weights_source), cfg, weights_source
    )
    model = TransformerEncoder(cfg)
    model.load_state_dict(state, strict=True)
    return model.eval()


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: the encoder and tokenizer every view reads, and for a model trained
    here, the whole TaskModel (task, classifier head, training record)."""

    encoder: TransformerEncoder  # eval mode
    tokenizer: Tokenizer  # padding and truncation off
    task_model: TaskModel | None = None  # None for a BERT checkpoint


def checkpoint_from_files(files: Files, source: str, max_bytes: int = MAX_FILE_BYTES) -> Checkpoint:
    """A checkpoint of either kind from its three files' bytes (e.g. an upload's).

    `source` names the checkpoint in messages. ValueError naming the file and what is wrong.
    """
    check_files(files, source, max_bytes)
    config = read_json_object(files[CONFIG_FILE], file_source(source, CONFIG_FILE))
    if is_task_model_config(config):
        task_model = task_model_from_config(config, files, source)
        return Checkpoint(task_model.encoder, task_model.tokenizer, task_model)
    encoder = bert_from_config(config, files, source)
    tokenizer = tokenizer_from_json(files[TOKENIZER_FILE], file_source(source, TOKENIZER_FILE))
    return Checkpoint(encoder, tokenizer)


def load_checkpoint(path: str | Path | None = None, max_bytes: int = MAX_FILE_BYTES) -> Checkpoint:
    """The checkpoint in directory `path` (default: the bundled all-MiniLM-L6-v2)."""
    directory = Path(path) if path is not None else bundled_model_dir()
    files = read_checkpoint_dir(directory, max_bytes)
    return checkpoint_from_files(files, str(directory), max_bytes)


def load_pretrained(
    path: str | Path | None = None, max_bytes: int = MAX_FILE_BYTES
) -> tuple[TransformerEncoder, Tokenizer]:
    """Our encoder (eval mode) with a checkpoint's weights, and its tokenizer.

    path: a directory with config.json, model.safetensors and tokenizer.json, from Hugging Face
    (BERT-style) or saved here (TaskModel.save); default: the bundled all-MiniLM-L6-v2. Each file
    may be at most `max_bytes`. For a task model's classifier head, use load_checkpoint(path)
    .task_model or encoder.task_model.load_task_model(path).
    """
    checkpoint = load_checkpoint(path, max_bytes)
    return checkpoint.encoder, checkpoint.tokenizer
