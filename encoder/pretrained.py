"""Load a Hugging Face BERT-style checkpoint directory into our TransformerEncoder.

The directory holds config.json, model.safetensors and tokenizer.json (the default is the bundled
all-MiniLM-L6-v2). BERT is a post-norm encoder with exact-erf GELU, learned positions, token types
and a LayerNorm after the embeddings; its weights are renamed onto our module paths, with the
separate query/key/value projections stacked into one `in_proj`. Weights are read with
safetensors only: nothing is unpickled.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from tokenizers import Tokenizer

from encoder.config import EncoderConfig
from encoder.model import TransformerEncoder
from encoder.tokenize import TOKENIZER_FILE, bundled_model_dir, load_tokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"

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


def read_config(directory: Path) -> EncoderConfig:
    """The EncoderConfig that expresses the BERT described by directory/config.json."""
    path = directory / CONFIG_FILE
    try:
        bert = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(bert, dict):
        raise ValueError(f"{path} must hold a JSON object, not {type(bert).__name__}")
    missing = [key for key in CONFIG_KEYS if key not in bert]
    if missing:
        raise ValueError(f"{path} lacks the keys {', '.join(missing)}")
    if bert.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"{path}: position_embedding_type={bert['position_embedding_type']!r} is not "
            f"supported; only 'absolute' (learned) positions are"
        )
    if bert["hidden_act"] not in ACTIVATIONS:
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
    tensors: dict[str, torch.Tensor], model: TransformerEncoder, source: Path
) -> dict[str, torch.Tensor]:
    """Rename (and stack q, k, v of) BERT tensors into a state_dict for `model`.

    Raise ValueError naming every missing, unexpected or mis-shaped tensor.
    """
    bert = {
        _bert_name(name): tensor
        for name, tensor in tensors.items()
        if not _bert_name(name).startswith(IGNORED_PREFIXES)
    }
    expected_shapes = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    name_map = _name_map(model.cfg.num_layers)
    missing = [b for parts in name_map.values() for b in parts if b not in bert]
    if missing:
        raise ValueError(f"{source} lacks the tensors {', '.join(missing)}")
    used = {b for parts in name_map.values() for b in parts}
    unexpected = sorted(set(bert) - used)
    if unexpected:
        raise ValueError(f"{source} has tensors this encoder does not use: {', '.join(unexpected)}")

    state: dict[str, torch.Tensor] = {}
    for ours, parts in name_map.items():
        shape = expected_shapes[ours]
        part_shape = (shape[0] // len(parts), *shape[1:])  # q, k, v each take a third of the rows
        for part in parts:
            if tuple(bert[part].shape) != part_shape:
                raise ValueError(
                    f"{source}: tensor {part} has shape {tuple(bert[part].shape)}, "
                    f"but {CONFIG_FILE} implies {part_shape}"
                )
        state[ours] = torch.cat([bert[part] for part in parts])
    return state


def load_pretrained(path: str | Path | None = None) -> tuple[TransformerEncoder, Tokenizer]:
    """Our encoder (eval mode) with a BERT checkpoint's weights, and its tokenizer.

    path: a directory with config.json, model.safetensors and tokenizer.json; default: the
    bundled all-MiniLM-L6-v2.
    """
    directory = Path(path) if path is not None else bundled_model_dir()
    if not directory.is_dir():
        raise FileNotFoundError(f"checkpoint directory not found: {directory}")
    for name in (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE):
        if not (directory / name).is_file():
            raise FileNotFoundError(f"checkpoint file not found: {directory / name}")

    cfg = read_config(directory)
    weights_path = directory / WEIGHTS_FILE
    try:
        tensors = load_file(weights_path)
    except SafetensorError as error:
        raise ValueError(f"{weights_path} is not a valid safetensors file: {error}") from error
    model = TransformerEncoder(cfg)
    model.load_state_dict(map_bert_weights(tensors, model, weights_path), strict=True)
    return model.eval(), load_tokenizer(directory)
