"""The encoder families the loaders read, chosen by config.json's model_type, and the refusals
of everything else: each a ValueError that names what the checkpoint is and why it is not read.

    family = family_of(config, "dir/config.json")       # ROBERTA for model_type "xlm-roberta"
    model, head, no_head = encoder_from_files(family, config, files, "dir")  # head or why none

BERT (encoder.io.families.bert), RoBERTa, XLM-R and CamemBERT (roberta), DistilBERT
(distilbert), ELECTRA (electra), ALBERT (albert), ModernBERT (modernbert); a config.json without
a model_type is read as BERT's, as old BERT checkpoints have none.
"""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.core.said import Said
from encoder.io.families.albert import ALBERT
from encoder.io.families.bert import BERT
from encoder.io.families.distilbert import DISTILBERT
from encoder.io.families.electra import ELECTRA
from encoder.io.families.family import Family, encoder_from_files
from encoder.io.families.modernbert import MODERNBERT
from encoder.io.families.roberta import ROBERTA

FAMILIES = (BERT, ROBERTA, DISTILBERT, ELECTRA, ALBERT, MODERNBERT)
BY_MODEL_TYPE = {model_type: family for family in FAMILIES for model_type in family.names}

# Well-known model types that are not encoders (for configs that do not say so themselves).
DECODERS = frozenset(
    [
        "gpt2",
        "gpt_neo",
        "gpt_neox",
        "gptj",
        "gpt_bigcode",
        "openai-gpt",
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen3",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi",
        "phi3",
        "opt",
        "bloom",
        "falcon",
        "mpt",
        "olmo",
        "olmo2",
        "codegen",
        "ctrl",
        "xglm",
        "biogpt",
        "modernbert-decoder",
        "bert-generation",
    ]
)
ENCODER_DECODERS = frozenset(
    [
        "t5",
        "mt5",
        "umt5",
        "longt5",
        "bart",
        "mbart",
        "pegasus",
        "marian",
        "led",
        "fsmt",
        "m2m_100",
        "blenderbot",
        "blenderbot-small",
        "prophetnet",
        "encoder-decoder",
        "whisper",
    ]
)
# Encoders whose attention is not this model's, with what differs.
DEBERTA = Said(
    "DeBERTa's disentangled attention (separate content and relative-position terms in every "
    "score) is not this model's attention"
)
OTHER_ATTENTION = {
    "deberta": DEBERTA,
    "deberta-v2": DEBERTA,
    "mpnet": Said(
        "MPNet's attention adds a learned relative-position bias to every score, which this "
        "model's attention has not"
    ),
}
# The last words of architectures (config.json's "architectures") of decoders and of
# encoder-decoders.
DECODER_HEADS = ("ForCausalLM", "LMHeadModel")
ENCODER_DECODER_HEADS = ("ForConditionalGeneration", "ForSeq2SeqLM")


def _supported() -> str:
    return ", ".join(name for family in FAMILIES for name in family.names.values())


def _architectures(config: dict) -> list[str]:
    architectures = config.get("architectures")
    return (
        [a for a in architectures if isinstance(a, str)] if isinstance(architectures, list) else []
    )


def family_of(config: dict, path: str) -> Family:
    """The family that reads this config.json (`path` names it); ValueError for a decoder, an
    encoder-decoder, an encoder whose attention differs, or a model_type no family reads."""
    model_type = config.get("model_type")
    # a noun phrase, said in the reader's language inside each sentence below
    named = Said("a model") if model_type is None else Said("model_type {type!r}", type=model_type)
    architectures = _architectures(config)
    if (
        config.get("is_encoder_decoder") is True
        or model_type in ENCODER_DECODERS
        or any(a.endswith(ENCODER_DECODER_HEADS) for a in architectures)
    ):
        raise ValueError(
            Said(
                "{path}: {named} is an encoder-decoder (sequence-to-sequence) model; only encoders "
                "are read ({families})",
                path=path,
                named=named,
                families=_supported(),
            )
        )
    if (
        config.get("is_decoder") is True
        or model_type in DECODERS
        or any(a.endswith(DECODER_HEADS) for a in architectures)
    ):
        raise ValueError(
            Said(
                "{path}: {named} is a decoder (each token attends only to the tokens before it); "
                "only encoders, whose tokens attend both ways, are read ({families})",
                path=path,
                named=named,
                families=_supported(),
            )
        )
    if model_type in OTHER_ATTENTION:
        raise ValueError(
            Said(
                "{path}: {named} is not read: {why}",
                path=path,
                named=named,
                why=OTHER_ATTENTION[model_type],
            )
        )
    if model_type is None:
        return BERT
    if model_type not in BY_MODEL_TYPE:
        raise ValueError(
            Said(
                "{path}: {named} is not a family this loader reads; it reads {families}",
                path=path,
                named=named,
                families=_supported(),
            )
        )
    return BY_MODEL_TYPE[model_type]


def family_name(config: dict, path: str) -> str:
    """The family's name as the page shows it ("XLM-R" for model_type "xlm-roberta");
    ValueError as family_of."""
    return family_of(config, path).name_of(config.get("model_type"))


def family_config(config: dict, path: str) -> EncoderConfig:
    """The EncoderConfig of any family's config.json, without reading its weights."""
    return family_of(config, path).read_config(config, path)


__all__ = [
    "FAMILIES",
    "Family",
    "encoder_from_files",
    "family_config",
    "family_name",
    "family_of",
]
