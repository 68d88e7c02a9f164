"""Read a Hugging Face BERT checkpoint into our TransformerEncoder.

BERT is a post-norm encoder with exact-erf GELU, learned positions, token types and a LayerNorm
after the embeddings; its weights are renamed onto our module paths, with the separate
query/key/value projections stacked into one `in_proj`. Every mismatch is a ValueError that names
the tensor or key.
"""

from __future__ import annotations

import torch

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.io.checkpoint_files import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    Files,
    check_layers,
    file_source,
    listed,
    meta_state,
    read_safetensors,
)

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
