"""The masked-word task's data: the bundled corpus's sentences as words, BERT's masking.

    tokenizer = word_tokenizer()                       # lower-cased words of the corpus
    tokenizer.encode("The [MASK] sat on the mat.").tokens
        # ['[CLS]', 'the', '[MASK]', 'sat', 'on', 'the', 'mat', '.', '[SEP]']
    inputs, targets = mask_words(ids, generator, vocab)   # targets: IGNORE where not chosen

The vocabulary is every word of the bundled corpus (encoder.inspect.corpus), lower-cased, split on
whitespace and punctuation (BERT's pre-tokenizer), after the SPECIALS, most frequent first (ties
alphabetical): the same on every machine. Every tenth sentence is held out (`sentence_split`), never
trained on. BERT's masking (Devlin et al. 2019): MASK_RATE of each sentence's words are chosen (at
least one), of those 80% become [MASK], 10% a random word and 10% stay; the loss is taken only at
the chosen positions. A word the vocabulary lacks reads as [UNK].
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from importlib import resources

import torch
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.normalizers import Lowercase
from tokenizers.pre_tokenizers import BertPreTokenizer
from tokenizers.processors import TemplateProcessing

from encoder.core.said import Said

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD, UNK, CLS, SEP, MASK = range(len(SPECIALS))
FIRST_WORD = len(SPECIALS)  # ids from here on are words
IGNORE = -100  # a target that is not counted (cross_entropy's ignore_index)
MASK_RATE = 0.15
MASKED_SHARE, RANDOM_SHARE = 0.8, 0.1  # of the chosen; the rest (0.1) stay as they are
HELD_OUT_EVERY = 10  # sentence i is held out when i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1


def _words(sentence: str) -> list[str]:
    return [word.lower() for word, _ in BertPreTokenizer().pre_tokenize_str(sentence)]


@cache
def corpus_sentences() -> tuple[str, ...]:
    """The bundled corpus's sentences, each once, in their order: encoder.inspect.corpus's
    bundled_corpus() (tasks sit below inspect, so they read its file here, by its rule)."""
    text = resources.files("encoder.inspect").joinpath("corpus.txt").read_text(encoding="utf-8")
    lines = (line for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return tuple(dict.fromkeys(lines))


@cache
def word_vocabulary() -> dict[str, int]:
    """{token: id}: the SPECIALS, then the corpus's words by falling count (ties alphabetical)."""
    counts = Counter(word for sentence in corpus_sentences() for word in _words(sentence))
    words = sorted(counts, key=lambda word: (-counts[word], word))
    return {token: index for index, token in enumerate((*SPECIALS, *words))}


def word_tokenizer() -> Tokenizer:
    """The task's WordLevel tokenizer: lower-cased words, [CLS] and [SEP] added, no padding."""
    tokenizer = Tokenizer(WordLevel(word_vocabulary(), unk_token=SPECIALS[UNK]))
    tokenizer.normalizer = Lowercase()
    tokenizer.pre_tokenizer = BertPreTokenizer()
    tokenizer.add_special_tokens(list(SPECIALS))
    tokenizer.post_processor = TemplateProcessing(
        single="[CLS] $A [SEP]",
        special_tokens=[(SPECIALS[CLS], CLS), (SPECIALS[SEP], SEP)],
    )
    return tokenizer


@cache
def _encoded() -> tuple[list[int], ...]:
    tokenizer = word_tokenizer()
    return tuple(tokenizer.encode(sentence).ids for sentence in corpus_sentences())


def longest_sentence() -> int:
    """The most tokens a corpus sentence has, [CLS] and [SEP] included."""
    return max(map(len, _encoded()))


def sentence_split(held_out: bool) -> list[list[int]]:
    """The ids of the sentences trained on (held_out False) or held out (True)."""
    last = HELD_OUT_EVERY - 1
    return [ids for i, ids in enumerate(_encoded()) if (i % HELD_OUT_EVERY == last) == held_out]


def padded(sentences: list[list[int]], seq_len: int) -> torch.Tensor:
    """[len(sentences), seq_len] ids: each cut to seq_len (its [SEP] kept), [PAD] after it."""
    rows = torch.full((len(sentences), seq_len), PAD, dtype=torch.long)
    for row, ids in zip(rows, sentences, strict=True):
        ids = ids if len(ids) <= seq_len else [*ids[: seq_len - 1], SEP]
        row[: len(ids)] = torch.tensor(ids)
    return rows


def mask_words(
    ids: torch.Tensor, generator: torch.Generator, vocab: int, replace: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking of a batch of ids [B, T]: (inputs, targets), both [B, T] long.

    MASK_RATE of the words (ids >= FIRST_WORD) are chosen, at least one in each row that has a
    word; targets are their ids there and IGNORE elsewhere. With `replace`, a chosen word becomes
    [MASK] (MASKED_SHARE), a random word (RANDOM_SHARE) or stays; without, always [MASK] (what
    the held-out sentences read, as a person types them)."""
    words = ids >= FIRST_WORD
    draw = torch.rand(ids.shape, generator=generator)
    chosen = words & (draw < MASK_RATE)
    spare = torch.where(words, torch.rand(ids.shape, generator=generator), -1.0)
    none = ~chosen.any(-1) & words.any(-1)  # rows with no choice yet: their best spare word
    chosen[none, spare[none].argmax(-1)] = True
    how = torch.rand(ids.shape, generator=generator) if replace else torch.zeros(ids.shape)
    random_words = torch.randint(FIRST_WORD, vocab, ids.shape, generator=generator)
    inputs = torch.where(chosen & (how < MASKED_SHARE), MASK, ids)
    swapped = chosen & (how >= MASKED_SHARE) & (how < MASKED_SHARE + RANDOM_SHARE)
    inputs = torch.where(swapped, random_words, inputs)
    return inputs, torch.where(chosen, ids, IGNORE)


def masked_batch(
    batch: int, seq_len: int, vocab: int, generator: torch.Generator, held_out: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch` sentences drawn at random from the training (or held-out) sentences, padded to
    seq_len and masked (training: BERT's way; held out: every chosen word [MASK])."""
    sentences = sentence_split(held_out)
    picks = torch.randint(0, len(sentences), (batch,), generator=generator).tolist()
    ids = padded([sentences[i] for i in picks], seq_len)
    return mask_words(ids, generator, vocab, replace=not held_out)


def most_frequent_word() -> int:
    """The id of the word most frequent in the training sentences (the guessing baseline's)."""
    counts = Counter(i for ids in sentence_split(False) for i in ids if i >= FIRST_WORD)
    return counts.most_common(1)[0][0]


def check_words(text: str, tokenizer: Tokenizer, seq_len: int) -> list[int]:
    """The ids of `text` for a masked-word model: any words ([UNK] for those it does not know),
    at most seq_len tokens with [CLS] and [SEP]; ValueError otherwise."""
    ids = tokenizer.encode(text).ids
    if len(ids) <= 2:
        raise ValueError(Said("{text!r} has no words", text=text))
    if len(ids) > seq_len:
        raise ValueError(
            Said(
                "{count} tokens with [CLS] and [SEP], but this model reads at most {seq_len}",
                count=len(ids),
                seq_len=seq_len,
            )
        )
    return ids
