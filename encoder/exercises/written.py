"""A number in an exercise's sentence, with the digits the library chose for it
(encoder.core.said.Written):

    Said("Not yet: your answer is {answer}.", answer=Written(-0.3, "−0.3"))
"""

from __future__ import annotations

from encoder.core.said import Written

__all__ = ["Written", "general"]


def general(value: float, significant: int) -> Written:
    """`value` to `significant` digits, as f"{value:.{significant}g}" writes it."""
    return Written(value, f"{value:.{significant}g}")
