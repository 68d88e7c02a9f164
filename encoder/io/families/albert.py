"""ALBERT: BERT's post-norm block (transformers' modeling_albert) with two changes. Its embeddings
are `embedding_size` wide and always projected to the hidden size (`embedding_hidden_mapping_in`,
after the embedding norm), and every layer is one shared layer applied num_hidden_layers times.
ALBERT's hidden_act is "gelu_new", GELU's tanh approximation. Checkpoints that split the layers
into several groups (num_hidden_groups > 1) or stack several layers in a group
(inner_group_num > 1) are refused: no released ALBERT does."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.core.said import Said
from encoder.io.families.bert import CONFIG_KEYS, bert_fields, embedding_tensors
from encoder.io.families.family import (
    Family,
    HeadTensors,
    NameMap,
    block_tensors,
    encoder_config,
    head_tensors,
    parameter_names,
)

# The one shared layer, inside "encoder.albert_layer_groups.0.albert_layers.0."
SHARED_LAYER = "encoder.albert_layer_groups.0.albert_layers.0"
LAYER_MODULES = {
    "self_attn.out_proj": "attention.dense",
    "norm1": "attention.LayerNorm",
    "linear1": "ffn",
    "linear2": "ffn_output",
    "norm2": "full_layer_layer_norm",
}
QKV = ("attention.query", "attention.key", "attention.value")


def albert_config(config: dict, path: str) -> EncoderConfig:
    """BERT's config with ALBERT's embedding projection and one layer shared by every block."""
    for key in ("num_hidden_groups", "inner_group_num"):
        if config.get(key, 1) != 1:
            raise ValueError(
                Said(
                    "{path}: {key}={value!r}; only ALBERT with one group of one shared layer "
                    "(num_hidden_groups=1, inner_group_num=1, as every released ALBERT) is read",
                    path=path,
                    key=key,
                    value=config[key],
                )
            )
    fields = bert_fields(config, path, {**CONFIG_KEYS, "embedding_size": "embedding_size"})
    return encoder_config(path, **fields, shared_layers=True)


def albert_tensors(cfg: EncoderConfig) -> NameMap:
    """Every block's parameters come from the one shared layer."""
    names = embedding_tensors()
    names |= parameter_names("embed.project", "encoder.embedding_hidden_mapping_in")
    for i in range(cfg.num_layers):
        names |= block_tensors(i, SHARED_LAYER, LAYER_MODULES, QKV)
    return names


def albert_head(config: dict, cfg: EncoderConfig, path: str) -> HeadTensors:
    """AlbertMLMHead: dense from the hidden size to the embedding size (hidden_act), LayerNorm,
    the decoder (tied to the embedding-size word table) and its bias, under predictions."""
    return head_tensors(
        "predictions.dense",
        "predictions.LayerNorm",
        "predictions.decoder",
        ("predictions.decoder.bias", "predictions.bias"),
        d_model=cfg.d_model,
        width=cfg.embedding_size or cfg.d_model,
        vocab_size=cfg.vocab_size,
        activation=cfg.activation,
        norm_eps=cfg.layer_norm_eps,
    )


ALBERT = Family(
    names={"albert": "ALBERT"},
    read_config=albert_config,
    tensors=albert_tensors,
    prefixes=("albert.",),
    ignored=("predictions.", "sop_classifier."),
    head=albert_head,
)
