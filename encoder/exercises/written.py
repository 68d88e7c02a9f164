"""A number in an exercise's sentence, with the digits the library chose for it.

    Said("Not yet: your answer is {answer}.", answer=Written(-0.3, "−0.3"))

`Written` is a `float` (a front end that writes a bare number in the reader's language treats it
as one: "−0,3" in Spanish) whose `str` and `repr` are the English text it was given, so the
English sentence stays exactly what the f-string gave ("−0.3", "0.0078", "1.2e-05").
"""

from __future__ import annotations


class Written(float):
    """A float that writes itself as `text`."""

    text: str

    def __new__(cls, value: float, text: str) -> Written:
        made = super().__new__(cls, value)
        made.text = text
        return made

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__

    def __getnewargs__(self) -> tuple[float, str]:  # pickled (a cache, a process pool) as made
        return (float(self), self.text)


def general(value: float, significant: int) -> Written:
    """`value` to `significant` digits, as f"{value:.{significant}g}" writes it."""
    return Written(value, f"{value:.{significant}g}")
