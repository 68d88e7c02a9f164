"""ELECTRA (the discriminator, or the generator's encoder): BERT's layout (transformers'
modeling_electra), its embeddings `embedding_size` wide and projected to the hidden size by
`embeddings_project` after their norm when the two differ (the small models). The discriminator's
and generator's heads are not part of the encoder and are left out."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.io.families.bert import CONFIG_KEYS, bert_fields, bert_tensors
from encoder.io.families.family import Family, NameMap, encoder_config, parameter_names


def electra_config(config: dict, path: str) -> EncoderConfig:
    """BERT's config with ELECTRA's embedding_size (0, no projection, when it is hidden_size)."""
    fields = bert_fields(config, path, {**CONFIG_KEYS, "embedding_size": "embedding_size"})
    if fields["embedding_size"] == fields["d_model"]:
        fields["embedding_size"] = 0
    return encoder_config(path, **fields)


def electra_tensors(cfg: EncoderConfig) -> NameMap:
    return bert_tensors(cfg) | parameter_names("embed.project", "embeddings_project")


ELECTRA = Family(
    names={"electra": "ELECTRA"},
    read_config=electra_config,
    tensors=electra_tensors,
    prefixes=("electra.",),
    ignored=("discriminator_predictions.", "generator_predictions.", "generator_lm_head."),
)
