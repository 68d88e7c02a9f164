"""The masked word: what a model with a masked-LM head (encoder.core.lm_head) predicts at each
[MASK] of a sentence, and the lens: the same head applied to the residual stream after every
block at the mask (through the model's final norm where it has one), so that the word can be
seen forming layer by layer. At the last layer the lens is the prediction, exactly.

    fills = fill(checkpoint.encoder, checkpoint.mlm_head, checkpoint.tokenizer, "Paris is the
                 [MASK] of France.")
    fills[0].top[0]            # Word(token="capital", id=..., probability=0.93)
    fills[0].by_layer[2][0]    # the best word after block 2
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tokenizers import Tokenizer

from encoder.core.capture import Trace
from encoder.core.lm_head import MaskedLMHead
from encoder.core.model import TransformerEncoder
from encoder.core.said import Quoted, Said
from encoder.inspect.limits import check_run

MAX_MASKS = 8  # masks predicted in one sentence
MASK_TOKENS = ("[MASK]", "<mask>")
# Who writes each mask token, for the sentence that says another family's was typed.
MASK_FAMILIES = {
    "[MASK]": "BERT, DistilBERT, ALBERT, ELECTRA and ModernBERT",
    "<mask>": "RoBERTa, XLM-R and CamemBERT",
}
NO_HEAD = Said("this model has no masked-LM head, so it predicts no masked word")


@dataclass(frozen=True)
class Word:
    token: str  # the vocabulary's token ("cat", "Ġcat", "▁chat", "##s")
    id: int
    probability: float


@dataclass(frozen=True)
class MaskFill:
    position: int  # the mask's token position in the sentence
    top: list[Word]  # the prediction at the output, best first
    by_layer: list[list[Word]]  # by_layer[l]: the head on the stream after block l (through
    # the final norm where the model has one); by_layer[-1] == top


def mask_token_of(tokenizer: Tokenizer) -> str:
    """The tokenizer's mask token, "[MASK]" or "<mask>"; ValueError when it has neither."""
    for token in MASK_TOKENS:
        if tokenizer.token_to_id(token) is not None:
            return token
    raise ValueError(Said("this tokenizer has no mask token ([MASK] or <mask>)"))


def mask_positions(tokens: list[str], mask_token: str) -> list[int]:
    """The positions of `mask_token` in a sentence's tokens."""
    return [i for i, token in enumerate(tokens) if token == mask_token]


def _typed(tokens: list[str]) -> str:
    """The sentence as typed, near enough to find a mask token split into pieces ("<", "mask",
    ">"): the tokens without their word-piece marks, lower case, no spaces."""
    return "".join(t.removeprefix("##").replace("Ġ", "").replace("▁", "") for t in tokens).lower()


def checked_positions(tokens: list[str], mask_token: str, text: str | None = None) -> list[int]:
    """mask_positions, or ValueError(Said) for no mask, another family's mask token typed (found
    in `text` where given, else in the tokens), or more than MAX_MASKS."""
    positions = mask_positions(tokens, mask_token)
    if not positions:
        typed = _typed(tokens) if text is None else text.lower()
        for other, families in MASK_FAMILIES.items():
            if other != mask_token and other.lower() in typed:
                raise ValueError(
                    Said(
                        "{typed} is the mask token of {families}; this model's is {mask}: type "
                        "{mask} where a word should be predicted",
                        typed=Quoted(other),
                        families=families,
                        mask=Quoted(mask_token),
                    )
                )
        raise ValueError(
            Said(
                "no {mask} in the sentence: type {mask} where a word should be predicted",
                mask=Quoted(mask_token),
            )
        )
    if len(positions) > MAX_MASKS:
        raise ValueError(
            Said.plural(
                "{count} mask in the sentence; at most {limit} are predicted at once",
                "{count} masks in the sentence; at most {limit} are predicted at once",
                len(positions),
                limit=MAX_MASKS,
            )
        )
    return positions


@torch.no_grad()
def lens_probabilities(
    model: TransformerEncoder,
    head: MaskedLMHead,
    trace: Trace,
    sentence: int,
    positions: list[int],
) -> torch.Tensor:
    """[num_layers, masks, vocab]: the head's softmax on the stream after each block at each
    position (through model.norm where the model has one); the last layer is the head on
    trace.output itself, the model's prediction."""
    index = torch.as_tensor(positions, dtype=torch.long, device=trace.output.device)
    inner = torch.stack([h[sentence, index] for h in trace.hidden_states[1:-1]])  # [L-1, M, d]
    device = head.decoder.weight.device
    inner = inner.to(device)
    if model.norm is not None:
        inner = model.norm(inner)
    states = torch.cat([inner, trace.output[sentence, index].to(device)[None]])  # [L, M, d]
    return head(states).softmax(dim=-1).to(trace.output.device)  # [L, M, vocab]


def fills(
    model: TransformerEncoder,
    head: MaskedLMHead | None,
    trace: Trace,
    tokens: list[str],
    mask_token: str,
    sentence: int = 0,
    top: int = 5,
    *,
    tokenizer: Tokenizer,
    text: str | None = None,
) -> list[MaskFill]:
    """Every mask of one sentence of a traced batch: the `top` words at the output and after
    each block (the tokenizer names them). ValueError(Said) as checked_positions says (`text`:
    the sentence as typed), for a model without a head, or for top < 1."""
    if head is None:
        raise ValueError(NO_HEAD)
    if top < 1:
        raise ValueError(Said("top={top} must be at least 1", top=top))
    positions = checked_positions(tokens, mask_token, text)
    probabilities = lens_probabilities(model, head, trace, sentence, positions)  # [L, M, V]
    values, ids = probabilities.topk(min(top, probabilities.shape[-1]), dim=-1)  # [L, M, k]
    words = [
        [
            [Word(tokenizer.id_to_token(i), i, p) for i, p in zip(row_ids, row_values, strict=True)]
            for row_ids, row_values in zip(layer_ids, layer_values, strict=True)
        ]
        for layer_ids, layer_values in zip(ids.tolist(), values.tolist(), strict=True)
    ]  # [L][M][k]
    return [
        MaskFill(position, words[-1][m], [layer[m] for layer in words])
        for m, position in enumerate(positions)
    ]


@torch.no_grad()
def fill(
    model: TransformerEncoder,
    head: MaskedLMHead | None,
    tokenizer: Tokenizer,
    text: str,
    top: int = 5,
) -> list[MaskFill]:
    """Tokenize `text`, run the model and fill every mask (fills). ValueError(Said) as fills
    says, or for a sentence longer than the model reads or a run over the machine's bounds."""
    if head is None:
        raise ValueError(NO_HEAD)
    mask_token = mask_token_of(tokenizer)
    encoding = tokenizer.encode(text)
    tokens = encoding.tokens
    checked_positions(tokens, mask_token, text)  # before the run
    if len(tokens) > model.cfg.max_len:
        raise ValueError(
            Said(
                "the sentence is {count} tokens long; this model reads at most {limit}",
                count=len(tokens),
                limit=model.cfg.max_len,
            )
        )
    check_run(model.cfg, 1, len(tokens))
    ids = torch.tensor([encoding.ids], device=model.device)  # [1, T]
    trace = model.trace(ids, torch.ones_like(ids))
    return fills(model, head, trace, tokens, mask_token, 0, top, tokenizer=tokenizer, text=text)
