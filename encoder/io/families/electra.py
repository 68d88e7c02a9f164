"""ELECTRA (the discriminator, or the generator's encoder): BERT's layout (transformers'
modeling_electra), its embeddings `embedding_size` wide and projected to the hidden size by
`embeddings_project` after their norm when the two differ (the small models). The discriminator's
and generator's heads are not part of the encoder and are left out."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.core.said import Said
from encoder.io.families.bert import CONFIG_KEYS, bert_fields, bert_tensors
from encoder.io.families.family import (
    Family,
    HeadTensors,
    NameMap,
    encoder_config,
    head_tensors,
    parameter_names,
)

DISCRIMINATOR = Said(
    "this is ELECTRA's discriminator: it was trained to tell which words of a sentence were "
    "replaced, not to predict them; only ELECTRA's generator has a masked-LM head"
)


def electra_config(config: dict, path: str) -> EncoderConfig:
    """BERT's config with ELECTRA's embedding_size (0, no projection, when it is hidden_size)."""
    fields = bert_fields(config, path, {**CONFIG_KEYS, "embedding_size": "embedding_size"})
    if fields["embedding_size"] == fields["d_model"]:
        fields["embedding_size"] = 0
    return encoder_config(path, **fields)


def electra_tensors(cfg: EncoderConfig) -> NameMap:
    return bert_tensors(cfg) | parameter_names("embed.project", "embeddings_project")


def electra_head(config: dict, cfg: EncoderConfig, path: str) -> HeadTensors:
    """The generator's (ElectraForMaskedLM): generator_predictions.dense to the embedding size,
    exact GELU, generator_predictions.LayerNorm, generator_lm_head (tied to the word table)."""
    return head_tensors(
        "generator_predictions.dense",
        "generator_predictions.LayerNorm",
        "generator_lm_head",
        ("generator_lm_head.bias",),
        instead=("discriminator_predictions.", DISCRIMINATOR),
        d_model=cfg.d_model,
        width=cfg.embedding_size or cfg.d_model,
        vocab_size=cfg.vocab_size,
        activation="gelu",
        norm_eps=cfg.layer_norm_eps,
    )


ELECTRA = Family(
    names={"electra": "ELECTRA"},
    read_config=electra_config,
    tensors=electra_tensors,
    prefixes=("electra.",),
    ignored=("discriminator_predictions.", "generator_predictions.", "generator_lm_head."),
    head=electra_head,
)
