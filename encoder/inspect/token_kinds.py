"""What kind of token each position holds: [CLS], [SEP], another special token, punctuation or a
word piece. The attention tables count the share of attention that goes to each kind."""

from __future__ import annotations

import torch

from encoder.inspect.lesson import is_content, is_special

CLS, SEP = "[CLS]", "[SEP]"
PUNCTUATION, WORD, SPECIAL = "punctuation", "word", "special"
KINDS = (CLS, SEP, PUNCTUATION, WORD, SPECIAL)
SINK_KINDS = (CLS, SEP, PUNCTUATION)  # where heads with nothing to do park their weight


# The tokens that open and close a sentence, by family: BERT's [CLS] and [SEP], RoBERTa's (and
# XLM-R's, CamemBERT's) <s> and </s>. Both count as the kinds CLS and SEP.
OPENING, CLOSING = (CLS, "<s>"), (SEP, "</s>")
# The token a tokenizer gives for text its vocabulary does not hold, by family.
UNKNOWN = ("[UNK]", "<unk>")


def token_kind(token: str) -> str:
    """One of KINDS: the sentence's opening ([CLS], <s>) and closing ([SEP], </s>) tokens, any
    other special token, a word piece (holds a letter or digit), else punctuation."""
    if token in OPENING:
        return CLS
    if token in CLOSING:
        return SEP
    if is_special(token):
        return SPECIAL
    return WORD if is_content(token) else PUNCTUATION


def kind_masks(tokens: list[list[str]], length: int) -> dict[str, torch.Tensor]:
    """{kind: [B, length] bool}, True where a sentence's real token is of that kind (padding is
    False everywhere)."""
    masks = {kind: torch.zeros(len(tokens), length, dtype=torch.bool) for kind in KINDS}
    for row, sentence in enumerate(tokens):
        for position, token in enumerate(sentence[:length]):
            masks[token_kind(token)][row, position] = True
    return masks
