"""Toy per-token classification tasks, generated on the fly (no downloads).

Every task reads a sequence of `seq_len` random tokens from `0 .. vocab - 1` and asks for one class
per position. Token i is written as the symbol "i" (`input_symbol`), so a sequence reads
"3 1 4 1 5 9 2 6". Each is solvable by an encoder with an attention pattern a class can recognise:

    reverse    the token at the mirrored position             attention: the anti-diagonal
    sort       the i-th smallest token of the sequence        attention: to tokens of rank i
    histogram  how many times this token occurs in the input  attention: to equal tokens
    shift      the previous token (position 0: "none")        attention: the sub-diagonal

One task reads words instead (WordTask, its data in encoder.tasks.masked):

    masked     the hidden words of a corpus sentence          BERT's masked-LM objective
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import torch
from tokenizers import Tokenizer

from encoder.core.said import Said
from encoder.tasks import masked


@dataclass(frozen=True)
class Task:
    """A named per-token task: how to label a batch and how many classes the labels span."""

    name: str
    description: str  # a sentence for the reader (a Said: the front end says it in their language)
    targets: Callable[[torch.Tensor, int], torch.Tensor]  # (inputs [B, T], vocab) -> [B, T]
    num_classes: Callable[[int, int], int]  # (seq_len, vocab) -> classes
    class_name: Callable[[int, int], str]  # (class index, vocab) -> label shown to people
    reads_words = False  # (a class attribute) True: WordTask's masked-LM task

    def sample(
        self, batch: int, seq_len: int, vocab: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A fresh batch: (inputs [batch, seq_len], targets [batch, seq_len]), both long."""
        inputs = torch.randint(0, vocab, (batch, seq_len), generator=generator)
        return inputs, self.targets(inputs, vocab)

    def held_out(
        self, count: int, seq_len: int, vocab: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The held-out examples (the trainer leaves out those it trained on)."""
        return self.sample(count, seq_len, vocab, generator)

    def vocab_size(self, vocab: int) -> int:
        """The model's vocabulary: the config's `vocab` (a word task has its own)."""
        return vocab

    def attention_mask(self, inputs: torch.Tensor) -> torch.Tensor | None:
        """[B, T] 1 = token, 0 = padding; None: these inputs are never padded."""
        return None

    def input_name(self, token: int, vocab: int) -> str:
        return input_symbol(token)

    def tokenizer(self, vocab: int) -> Tokenizer:
        """What reads text for a model of this task (encoder.tasks.task_tokenizer's)."""
        from encoder.tasks.task_tokenizer import task_tokenizer  # (it reads this module)

        return task_tokenizer(vocab)

    def check_text(self, text: str, tokenizer: Tokenizer, seq_len: int) -> list[int]:
        """The ids of one input; ValueError saying why `text` is not one this task reads."""
        from encoder.tasks.task_tokenizer import check_task_text

        return check_task_text(text, tokenizer, seq_len)

    def example(self, seq_len: int, vocab: int) -> str:
        """An input to type for a model of this task."""
        return example_sequence(seq_len, vocab)

    def guessing(self, seq_len: int, vocab: int) -> float:
        """guessing_accuracy's measure for this task."""
        return _guessing_by_position(self, seq_len, vocab)


class WordTask(Task):
    """The masked-word task: sentences of the bundled corpus with words hidden the way BERT hid
    them (encoder.tasks.masked); its classes are the words, its head a MaskedLMHead tied to the
    word embeddings (encoder.tasks.classifier), its accuracy counted at the hidden words only."""

    reads_words = True

    def sample(self, batch, seq_len, vocab, generator):
        return masked.masked_batch(batch, seq_len, vocab, generator)

    def held_out(self, count, seq_len, vocab, generator):
        return masked.masked_batch(count, seq_len, vocab, generator, held_out=True)

    def vocab_size(self, vocab: int) -> int:
        return len(masked.word_vocabulary())

    def attention_mask(self, inputs: torch.Tensor) -> torch.Tensor:
        return (inputs != masked.PAD).long()

    def input_name(self, token: int, vocab: int) -> str:
        return self.class_name(token, vocab)

    def tokenizer(self, vocab: int) -> Tokenizer:
        return masked.word_tokenizer()

    def check_text(self, text: str, tokenizer: Tokenizer, seq_len: int) -> list[int]:
        return masked.check_words(text, tokenizer, seq_len)

    def example(self, seq_len: int, vocab: int) -> str:
        return MASKED_EXAMPLE

    def guessing(self, seq_len: int, vocab: int) -> float:
        """Top-1 of always answering the training sentences' most frequent word, at the masked
        words of GUESS_SAMPLES held-out sentences (drawn with a fixed seed)."""
        generator = torch.Generator().manual_seed(0)
        _, targets = self.held_out(GUESS_SAMPLES, seq_len, vocab, generator)
        counted = targets[targets != masked.IGNORE]
        return round((counted == masked.most_frequent_word()).float().mean().item(), 3)


# A held-out sentence of the corpus (never trained on) with "river" (5 times in the training
# sentences) hidden
MASKED_EXAMPLE = "The big brown bear caught a fish in the [MASK]."


def reverse_targets(inputs: torch.Tensor, vocab: int) -> torch.Tensor:
    """targets[b, i] = inputs[b, T - 1 - i]."""
    return inputs.flip(-1)


def sort_targets(inputs: torch.Tensor, vocab: int) -> torch.Tensor:
    """targets[b, i] = the i-th smallest token of inputs[b] (duplicates kept)."""
    return inputs.sort(dim=-1).values


def histogram_targets(inputs: torch.Tensor, vocab: int) -> torch.Tensor:
    """targets[b, i] = how many positions j have inputs[b, j] == inputs[b, i] (itself included)."""
    same = inputs.unsqueeze(-1) == inputs.unsqueeze(-2)  # [B, T, T]
    return same.sum(dim=-1)


def shift_targets(inputs: torch.Tensor, vocab: int) -> torch.Tensor:
    """targets[b, i] = inputs[b, i - 1]; position 0 has no previous token and gets class `vocab`."""
    none = torch.full_like(inputs[:, :1], vocab)
    return torch.cat([none, inputs[:, :-1]], dim=-1)


def input_symbol(token: int) -> str:
    """How input token `token` is written: its number ("0", "1", ...)."""
    return str(token)


def input_symbols(vocab: int) -> list[str]:
    """Every input symbol of a task with `vocab` tokens, in id order: symbol i is token i."""
    return [input_symbol(token) for token in range(vocab)]


PI_DIGITS = "31415926535897932384626433832795"


def example_sequence(seq_len: int, vocab: int) -> str:
    """A sequence to type, as symbols: the digits of pi modulo vocab ("3 1 4 1 5 9 2 6")."""
    digits = (PI_DIGITS * (seq_len // len(PI_DIGITS) + 1))[:seq_len]
    return " ".join(input_symbol(int(digit) % vocab) for digit in digits)


def _token_name(index: int, vocab: int) -> str:
    return input_symbol(index)


@cache
def _word_names() -> tuple[str, ...]:
    return tuple(masked.word_vocabulary())


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            "reverse",
            Said("Output the token at the mirrored position (first <-> last)."),
            reverse_targets,
            lambda seq_len, vocab: vocab,
            _token_name,
        ),
        Task(
            "sort",
            Said("Output the sequence sorted: position i gets the i-th smallest token."),
            sort_targets,
            lambda seq_len, vocab: vocab,
            _token_name,
        ),
        Task(
            "histogram",
            Said("Output how many times this position's token occurs in the whole sequence."),
            histogram_targets,
            lambda seq_len, vocab: seq_len + 1,  # counts 1 .. seq_len (class 0 never occurs)
            lambda index, vocab: f"×{index}",
        ),
        Task(
            "shift",
            Said("Output the previous token; the first position outputs 'none'."),
            shift_targets,
            lambda seq_len, vocab: vocab + 1,  # every token, plus 'none' for position 0
            lambda index, vocab: "none" if index == vocab else str(index),
        ),
        WordTask(
            "masked",
            Said(
                "Output the hidden words of a sentence from the bundled corpus: 15% of its words "
                "are chosen, most become [MASK]; the loss counts only those."
            ),
            lambda inputs, vocab: inputs,  # (sample draws the targets with the masks)
            lambda seq_len, vocab: len(masked.word_vocabulary()),
            lambda index, vocab: _word_names()[index],
        ),
    )
}


GUESS_SAMPLES = 20_000  # sequences to choose each position's guess from, and as many to score it


@cache
def guessing_accuracy(name: str, seq_len: int, vocab: int) -> float:
    """What a model that never reads its input scores on task `name`: the share of tokens right
    when each position gets its most common answer (0.1 for reversing 10 symbols; about 0.48
    for a histogram of 8 of 10, where most tokens occur once). Measured with a fixed seed: the
    answers are chosen on GUESS_SAMPLES sequences and scored on as many others, so the number
    is not flattered by the sequences it was chosen on. A run whose accuracy stays there has
    learned nothing from its input. (The masked task: always its most frequent word,
    WordTask.guessing.)"""
    return get_task(name).guessing(seq_len, vocab)


def _guessing_by_position(task: Task, seq_len: int, vocab: int) -> float:
    generator = torch.Generator().manual_seed(0)
    classes = task.num_classes(seq_len, vocab)
    _, chosen_on = task.sample(GUESS_SAMPLES, seq_len, vocab, generator)  # [N, T]
    _, scored_on = task.sample(GUESS_SAMPLES, seq_len, vocab, generator)  # [N, T]
    guesses = torch.nn.functional.one_hot(chosen_on, classes).sum(dim=0).argmax(dim=-1)  # [T]
    return round((scored_on == guesses).float().mean().item(), 3)


def get_task(name: str) -> Task:
    """The task called `name`; ValueError listing the known names otherwise."""
    if name not in TASKS:
        raise ValueError(Said("task={name!r} is not one of {names}", name=name, names=tuple(TASKS)))
    return TASKS[name]
