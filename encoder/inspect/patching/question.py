"""The pair a page patches by default and the lesson's question about it.

one_word_changed: the clean sentence with one word changed, said: the lesson's "too tired" ->
"too wide" (either way) where the sentence has it, else the last word of three letters or more
(not a small common word) swapped for the first candidate that keeps the token count (patching
needs the same count): a word of CANDIDATES, then another word of the sentence itself (a toy
task's symbols).

deciding_token: "where does the model decide what 'it' refers to?" as a Prediction
(encoder.inspect.predictions, kind "token"): at the middle layer, which token's stream restored
from the clean sentence brings back the most of its output; the truth read from the live
model's residual grid (Patching.residual)."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from encoder.core.said import Quoted, Said, formatted
from encoder.inspect.predictions import Prediction, _position, token_label, token_named

SWAPS = {"tired": "wide", "wide": "tired"}
CANDIDATES = ("dog", "cat", "car", "big", "small", "old", "new", "red", "cold", "wide", "tired")
SMALL = frozenset(["the", "and", "was", "were", "for", "with", "that", "this", "are", "but", "not"])
WORD = re.compile(r"[^\W\d_]{3,}")


def one_word_changed(text: str, count: Callable[[str], int]) -> tuple[str, Said] | None:
    """(the changed sentence, what changed) or None where no swap keeps `count` (tokens)."""
    words = [m for m in WORD.finditer(text) if m.group().lower() not in SMALL]
    own = [m.group() for m in words]
    wanted = count(text)
    swaps = [m for m in words if m.group().lower() in SWAPS]
    for m in [*swaps[-1:], *reversed(words)]:
        word = m.group()
        others = [SWAPS.get(word.lower(), ""), *CANDIDATES, *own]
        for other in dict.fromkeys(o for o in others if o and o.lower() != word.lower()):
            changed = text[: m.start()] + other + text[m.end() :]
            if count(changed) == wanted:
                return changed, Said("{old} changed to {new}", old=Quoted(word), new=Quoted(other))
    return None


def deciding_token(residual: np.ndarray, tokens: list[str]) -> Prediction:
    """residual: Patching.residual [L+1, T] of the clean and corrupted sentences; the question
    is asked at the middle layer (L // 2), where the stream enters block L // 2."""
    layer = (residual.shape[0] - 1) // 2
    row = np.asarray(residual[layer], dtype=np.float64)  # [T]
    best = int(row.argmax())
    options = tuple(token_label(i, t) for i, t in enumerate(tokens))
    truth = Said(
        "restoring the stream of {token} at layer {layer} brings back {value} of the clean "
        "output, the most of any token",
        token=token_named(tokens, best),
        layer=layer,
        value=formatted(row[best], ".2f"),
    )

    def explain(guess: str) -> Said:
        picked = _position(guess, len(tokens))
        if picked is None:
            return Said("You skipped: {said}.", said=truth)
        if picked == best:
            return Said("Right: {said}.", said=truth)
        return Said(
            "Not quite: {said}; your {token} brings back {value}.",
            said=truth,
            token=Quoted(str(tokens[picked])),
            value=formatted(row[picked], ".2f"),
        )

    it = "it" in [t.lower() for t in tokens]
    question = (
        Said(
            "Where does the model decide what {it} refers to? At layer {layer}, which token's "
            "stream, restored from the clean sentence, brings back the most of its output?",
            it=Quoted(next(t for t in tokens if t.lower() == "it")),
            layer=layer,
        )
        if it
        else Said(
            "At layer {layer}, which token's stream, restored from the clean sentence, brings "
            "back the most of its output?",
            layer=layer,
        )
    )
    return Prediction(
        f"deciding_token:{layer}", question, "token", options, options[best], float(row[best]),
        explain,
    )  # fmt: skip
