"""RoBERTa, XLM-R and CamemBERT: BERT's layout (transformers' modeling_roberta, -xlm_roberta,
-camembert), with one difference that changes every number: positions start after the padding
index. Token t reads row padding_idx + 1 + t of the position table (fairseq's make_positions), so
the table has max_position_embeddings rows but takes max_position_embeddings - padding_idx - 1
tokens (514 rows, 512 tokens for roberta-base)."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.core.said import Said
from encoder.io.families.bert import bert_fields, bert_tensors
from encoder.io.families.family import Family, HeadTensors, encoder_config, head_tensors


def roberta_config(config: dict, path: str) -> EncoderConfig:
    """The EncoderConfig of a RoBERTa-family config.json: BERT's, positions offset by
    pad_token_id + 1."""
    fields = bert_fields(config, path)
    pad = config.get("pad_token_id")
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
        raise ValueError(
            Said(
                "{path}: pad_token_id={pad!r} must be a whole number >= 0: RoBERTa's positions "
                "start after it",
                path=path,
                pad=pad,
            )
        )
    offset = pad + 1
    return encoder_config(
        path, **{**fields, "position_offset": offset, "max_len": fields["max_len"] - offset}
    )


def roberta_head(config: dict, cfg: EncoderConfig, path: str) -> HeadTensors:
    """RobertaLMHead: dense, exact GELU whatever hidden_act says, layer_norm, the decoder and
    its bias, under lm_head."""
    return head_tensors(
        "lm_head.dense",
        "lm_head.layer_norm",
        "lm_head.decoder",
        ("lm_head.decoder.bias", "lm_head.bias"),
        d_model=cfg.d_model,
        width=cfg.d_model,
        vocab_size=cfg.vocab_size,
        activation="gelu",
        norm_eps=cfg.layer_norm_eps,
    )


ROBERTA = Family(
    names={"roberta": "RoBERTa", "xlm-roberta": "XLM-R", "camembert": "CamemBERT"},
    read_config=roberta_config,
    tensors=bert_tensors,
    prefixes=("roberta.", "camembert."),
    ignored=("lm_head.",),
    head=roberta_head,
)
