"""encoder.inspect.closest: the closest pair of a cosine matrix, and the lesson's closing question
(which sentence is closest to the first), its truth and explanations from the matrix."""

from __future__ import annotations

import numpy as np
import pytest

from encoder.inspect.closest import CLOSEST_SENTENCES, closest_pair, closest_to_first

SIMILARITY = np.array(
    [
        [1.0, 0.2, 0.7, -0.1],
        [0.2, 1.0, 0.3, 0.9],
        [0.7, 0.3, 1.0, 0.0],
        [-0.1, 0.9, 0.0, 1.0],
    ]
)


def test_the_closest_pair_leaves_the_diagonal_out() -> None:
    assert closest_pair(SIMILARITY) == (1, 3, pytest.approx(0.9))
    with pytest.raises(ValueError, match="one sentence has no pair"):
        closest_pair(np.ones((1, 1)))


def test_the_question_offers_the_others_and_its_truth_is_the_largest_cosine_with_the_first():
    sentences = list(CLOSEST_SENTENCES)
    asked = closest_to_first(SIMILARITY, sentences)
    assert asked.kind == "choice" and asked.options == tuple(sentences[1:])
    assert asked.truth == sentences[2] and asked.value == pytest.approx(0.7)
    assert asked.explain(sentences[2]).startswith("Right: the model's closest to “")
    wrong = asked.explain(sentences[3])
    assert wrong.startswith("Not quite:") and wrong.endswith("yours has -0.100.")
    assert "the farthest -0.100" in str(asked.explain(""))
    assert asked.explain("").startswith("You skipped")
    with pytest.raises(ValueError):
        closest_to_first(SIMILARITY[:2, :2], sentences[:2])
