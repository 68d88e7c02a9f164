"""The tokenizer of a model trained on a toy task: one token per input symbol, split on whitespace.

    tokenizer = task_tokenizer(vocab=10)
    tokenizer.encode("3 1 4 1 5 9 2 6").ids      # [3, 1, 4, 1, 5, 9, 2, 6]: the training ids
    check_task_text("3 1 4 x", tokenizer, seq_len=8)   # ValueError: 'x' is not a symbol ...

Symbol i (`encoder.tasks.tasks.input_symbol(i)`) has id i, exactly as the task fed the model in
training. Anything else becomes [UNK] (id `vocab`, outside the model's vocabulary, so the model
refuses it); `check_task_text` names it first. There is no [PAD]: a task model reads sequences
of exactly its trained length, so a batch of them is never padded. Like every tokenizer here,
it has no padding or truncation of its own and adds no special tokens.
"""

from __future__ import annotations

from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import WhitespaceSplit

from encoder.core.said import Said
from encoder.tasks.tasks import input_symbols

UNK = "[UNK]"
MAX_LISTED_SYMBOLS = 12  # a message lists the symbols when there are at most this many


def task_tokenizer(vocab: int) -> Tokenizer:
    """A WordLevel tokenizer with ids 0 .. vocab - 1 for the task's symbols and [UNK] = vocab."""
    ids = {symbol: token for token, symbol in enumerate(input_symbols(vocab))}
    ids[UNK] = vocab
    tokenizer = Tokenizer(WordLevel(ids, unk_token=UNK))
    tokenizer.pre_tokenizer = WhitespaceSplit()
    return tokenizer


def known_symbols(tokenizer: Tokenizer) -> list[str]:
    """The symbols a task tokenizer knows, in id order ([UNK] left out)."""
    vocab = tokenizer.get_vocab()
    return sorted((s for s in vocab if s != UNK), key=vocab.__getitem__)


def _describe(symbols: list[str]) -> str:
    if len(symbols) <= MAX_LISTED_SYMBOLS:
        return " ".join(symbols)
    return Said(
        "{first} {second} ... {last} ({count} symbols)",
        first=symbols[0],
        second=symbols[1],
        last=symbols[-1],
        count=len(symbols),
    )


def check_task_text(text: str, tokenizer: Tokenizer, seq_len: int) -> list[int]:
    """The ids of `text` for a task model trained on sequences of `seq_len` symbols.

    ValueError naming the first symbol the tokenizer does not know, or the number of symbols
    and the one expected.
    """
    encoding = tokenizer.encode(text)
    unk_id = tokenizer.token_to_id(UNK)
    for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
        if token_id == unk_id:
            raise ValueError(
                Said(
                    "{symbol!r} is not a symbol this model knows; it reads {symbols}, separated by "
                    "spaces",
                    symbol=text[start:end],
                    symbols=_describe(known_symbols(tokenizer)),
                )
            )
    if len(encoding.ids) != seq_len:
        symbols = known_symbols(tokenizer)
        example = " ".join(symbols[i % len(symbols)] for i in range(seq_len))
        raise ValueError(
            Said(
                "{count} symbols, but this model was trained on sequences of exactly {seq_len}, "
                "such as {example!r}",
                count=len(encoding.ids),
                seq_len=seq_len,
                example=example,
            )
        )
    return list(encoding.ids)
