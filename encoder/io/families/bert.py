"""BERT: a post-norm encoder with exact-erf GELU, learned positions, token types and a LayerNorm
after the embeddings (transformers' modeling_bert). Its separate query/key/value projections are
stacked into one `in_proj`. RoBERTa and ELECTRA keep this layout and build on it here."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.core.said import Said
from encoder.io.families.family import (
    Family,
    HeadTensors,
    NameMap,
    activation_of,
    block_tensors,
    config_values,
    encoder_config,
    head_tensors,
    parameter_names,
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
# transformers' hidden_act names that mean one of our activations: "gelu" is the exact erf form,
# "gelu_new" (ALBERT's, ELECTRA's) and "gelu_pytorch_tanh" its tanh approximation.
ACTIVATIONS = {
    "gelu": "gelu",
    "relu": "relu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
}

# Our embedding modules -> BERT's (inside "embeddings.")
EMBEDDINGS = {
    "embed.token": "word_embeddings",
    "embed.position": "position_embeddings",
    "embed.token_type": "token_type_embeddings",
    "embed.norm": "LayerNorm",
}
# Inside encoder.layer.{i} -> inside layers.{i}
LAYER_MODULES = {
    "self_attn.out_proj": "attention.output.dense",
    "norm1": "attention.output.LayerNorm",
    "linear1": "intermediate.dense",
    "linear2": "output.dense",
    "norm2": "output.LayerNorm",
}
QKV = ("attention.self.query", "attention.self.key", "attention.self.value")
# What every BERT-layout family (DistilBERT's too) has whatever its config.json says: post-norm
# blocks, learned positions, a LayerNorm after the unscaled embeddings
POST_NORM_LAYOUT = {
    "norm_first": False,
    "positional": "learned",
    "scale_embeddings": False,
    "embedding_norm": True,
    "norm_type": "layernorm",
}


def bert_fields(config: dict, path: str, keys: dict[str, str] = CONFIG_KEYS) -> dict:
    """The EncoderConfig fields of a BERT-layout config.json (BERT, RoBERTa, ELECTRA, ALBERT)."""
    fields = config_values(config, keys, path)
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            Said(
                "{path}: position_embedding_type={value!r} is not supported; only 'absolute' "
                "(learned) positions are",
                path=path,
                value=config["position_embedding_type"],
            )
        )
    fields["activation"] = activation_of(config, "hidden_act", ACTIVATIONS, path)
    return {**fields, **POST_NORM_LAYOUT}


def bert_config(config: dict, path: str) -> EncoderConfig:
    """The EncoderConfig that expresses the BERT described by a config.json (read from `path`)."""
    return encoder_config(path, **bert_fields(config, path))


def embedding_tensors(modules: dict[str, str] = EMBEDDINGS) -> NameMap:
    """Our embedding tables and norm <- BERT's "embeddings.*" (weights; the norm's bias too), or
    a family's own names for them there."""
    names: NameMap = {}
    for ours, theirs in modules.items():
        names |= parameter_names(ours, f"embeddings.{theirs}")
    return names


def bert_tensors(cfg: EncoderConfig) -> NameMap:
    """Our parameter name -> the BERT tensors it is made of (three for a stacked in_proj)."""
    names = embedding_tensors()
    for i in range(cfg.num_layers):
        names |= block_tensors(i, f"encoder.layer.{i}", LAYER_MODULES, QKV)
    return names


def bert_head(config: dict, cfg: EncoderConfig, path: str) -> HeadTensors:
    """BertLMPredictionHead: transform.dense (hidden_act), transform.LayerNorm, the decoder and
    its bias, under cls.predictions."""
    return head_tensors(
        "cls.predictions.transform.dense",
        "cls.predictions.transform.LayerNorm",
        "cls.predictions.decoder",
        ("cls.predictions.decoder.bias", "cls.predictions.bias"),
        d_model=cfg.d_model,
        width=cfg.d_model,
        vocab_size=cfg.vocab_size,
        activation=cfg.activation,
        norm_eps=cfg.layer_norm_eps,
    )


BERT = Family(
    names={"bert": "BERT"},
    read_config=bert_config,
    tensors=bert_tensors,
    prefixes=("bert.",),
    ignored=("cls.",),
    head=bert_head,
)
