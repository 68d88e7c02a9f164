"""DistilBERT: BERT's post-norm block with half the layers (transformers' modeling_distilbert):
no token types, LayerNorm eps fixed at 1e-12, its own names (q_lin, sa_layer_norm, ffn.lin1, ...)
and config keys (dim, n_heads, hidden_dim, ...). Its position table is in the weights whether it
was learned or filled with sinusoids (sinusoidal_pos_embds), so it is read as learned."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.io.families.bert import POST_NORM_LAYOUT, embedding_tensors
from encoder.io.families.family import (
    Family,
    HeadTensors,
    NameMap,
    activation_of,
    block_tensors,
    config_values,
    encoder_config,
    head_tensors,
)

CONFIG_KEYS = {
    "vocab_size": "vocab_size",
    "dim": "d_model",
    "n_heads": "num_heads",
    "n_layers": "num_layers",
    "hidden_dim": "d_ff",
    "dropout": "dropout",
    "attention_dropout": "attention_dropout",
    "max_position_embeddings": "max_len",
}
ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}
LAYER_NORM_EPS = 1e-12  # fixed in DistilBERT's code, not in its config
EMBEDDINGS = {
    "embed.token": "word_embeddings",
    "embed.position": "position_embeddings",
    "embed.norm": "LayerNorm",
}
LAYER_MODULES = {
    "self_attn.out_proj": "attention.out_lin",
    "norm1": "sa_layer_norm",
    "linear1": "ffn.lin1",
    "linear2": "ffn.lin2",
    "norm2": "output_layer_norm",
}
QKV = ("attention.q_lin", "attention.k_lin", "attention.v_lin")


def distilbert_config(config: dict, path: str) -> EncoderConfig:
    fields = config_values(config, CONFIG_KEYS, path)
    return encoder_config(
        path,
        **fields,
        activation=activation_of(config, "activation", ACTIVATIONS, path),
        layer_norm_eps=LAYER_NORM_EPS,
        **POST_NORM_LAYOUT,
    )


def distilbert_tensors(cfg: EncoderConfig) -> NameMap:
    names = embedding_tensors(EMBEDDINGS)
    for i in range(cfg.num_layers):
        names |= block_tensors(i, f"transformer.layer.{i}", LAYER_MODULES, QKV)
    return names


def distilbert_head(config: dict, cfg: EncoderConfig, path: str) -> HeadTensors:
    """vocab_transform (config's activation), vocab_layer_norm (eps 1e-12), vocab_projector."""
    return head_tensors(
        "vocab_transform",
        "vocab_layer_norm",
        "vocab_projector",
        ("vocab_projector.bias",),
        d_model=cfg.d_model,
        width=cfg.d_model,
        vocab_size=cfg.vocab_size,
        activation=cfg.activation,
        norm_eps=LAYER_NORM_EPS,
    )


DISTILBERT = Family(
    names={"distilbert": "DistilBERT"},
    read_config=distilbert_config,
    tensors=distilbert_tensors,
    prefixes=("distilbert.",),
    ignored=("vocab_transform.", "vocab_layer_norm.", "vocab_projector.", "pre_classifier."),
    head=distilbert_head,
)
