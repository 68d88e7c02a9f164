"""Which sentences a model finds alike: the closest pair of a batch (whose likeness the page
says), and the lesson's closing question ("which of these sentences is closest to the first?"),
its truth from a cosine matrix of the model's own sentence embeddings
(encoder.inspect.similarity), as a Prediction (encoder.inspect.predictions: the stored options
and truth are the sentences themselves).

The question's sentences set a trap on purpose: one says the first's words in another order
(and another meaning), one says the first's meaning in other words. A model that pools its
words without reading them (random weights) finds the reordered one closest; a model trained
for meaning may not.
"""

from __future__ import annotations

import numpy as np

from encoder.core.said import Quoted, Said, formatted
from encoder.inspect.predictions import Prediction

CLOSEST_SENTENCES = (  # no full stops: each is quoted inside a sentence of its own
    "The dog chased the cat across the garden",
    "The cat chased the dog across the garden",
    "A puppy ran after a kitten in the yard",
    "The bank raised its interest rates today",
)


def closest_pair(similarity: np.ndarray) -> tuple[int, int, float]:
    """(a, b, cosine) of the two different sentences with the largest cosine; similarity: [B, B]
    (B >= 2)."""
    matrix = np.array(similarity, dtype=np.float64)
    if matrix.shape[0] < 2:
        raise ValueError(Said("one sentence has no pair: type two or more, one a line"))
    np.fill_diagonal(matrix, -np.inf)
    a, b = np.unravel_index(int(matrix.argmax()), matrix.shape)
    a, b = sorted((int(a), int(b)))
    return a, b, float(matrix[a, b])


def closest_to_first(similarity: np.ndarray, sentences: list[str]) -> Prediction:
    """Which of sentences[1:] has the largest cosine with sentences[0]; similarity: [B, B] of
    the model's sentence embeddings at its output (B >= 3: two options at least)."""
    if len(sentences) < 3:
        raise ValueError(f"the question needs three sentences at least, not {len(sentences)}")
    row = np.asarray(similarity, dtype=np.float64)[0]
    options = tuple(sentences[1:])
    best = 1 + int(row[1:].argmax())
    cosine = {text: float(row[i]) for i, text in enumerate(sentences) if i}
    said = Said(
        "the model's closest to {first} is {best}: cosine {cosine}, the farthest {far}",
        first=Quoted(sentences[0]),
        best=Quoted(sentences[best]),
        cosine=formatted(row[best], ".3f"),
        far=formatted(min(cosine.values()), ".3f"),
    )

    def explain(guess: str) -> Said:
        if guess not in cosine:
            return Said("You skipped: {said}.", said=said)
        if guess == sentences[best]:
            return Said("Right: {said}.", said=said)
        return Said(
            "Not quite: {said}; yours has {cosine}.",
            said=said,
            cosine=formatted(cosine[guess], ".3f"),
        )

    return Prediction(
        "closest_to_first",
        Said(
            "Which of these sentences does the model find closest to {first}?",
            first=Quoted(sentences[0]),
        ),  # fmt: skip
        "choice",
        options,
        sentences[best],
        float(row[best]),
        explain,
    )
