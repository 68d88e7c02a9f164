"""A sentence the library says to a reader, in English, that keeps its template and values so
that a front end can say it in the reader's language.

    raise ValueError(Said("d_model={d_model} is not divisible by num_heads={heads}", ...))
    Said.plural("after {count} step", "after {count} steps", len(history))

`Said(...)` is a `str` (the English sentence), so every caller that prints, logs or compares
it is unchanged; `Said.template` is the message a catalogue translates (the app's `told`
looks it up) and `Said.values` what goes into its named placeholders. A sentence that counts
(`Said.plural`) keeps its plural template too, and its count in `values["count"]`: English says
the singular for 1, a front end asks its language's plural forms. A value may be another Said (told
in the language too), a `Written` number (the digits the library chose), a `Quoted` token (the
reader's own text, in the language's quotation marks) or a `Listed` tuple of them.
The library imports no translation machinery: marking is all it does. A word it names rather
than a sentence it says (an option's label, a table's column) is marked `N_("...")` where it is
defined, and the front end translates it where it shows it (gettext's convention).
"""

from __future__ import annotations


class Said(str):
    """The English sentence, with the template and values it was made from."""

    template: str
    values: dict[str, object]
    plural_template: str | None = None  # a sentence that counts: its plural form

    def __new__(cls, template: str, /, **values: object) -> Said:
        made = super().__new__(cls, _english(template, values))
        made.template = template
        made.values = values
        return made

    @classmethod
    def plural(cls, singular: str, plural: str, count: int, /, **values: object) -> Said:
        """A sentence that counts `count` (in its {count} placeholder): in English `singular`
        for 1 and `plural` otherwise; a front end says its language's form for `count`."""
        values = {"count": count, **values}
        made = str.__new__(cls, _english(singular if count == 1 else plural, values))
        made.template, made.plural_template, made.values = singular, plural, values
        return made

    def __reduce__(self) -> tuple:  # pickled (a process pool, a cache) as it was made
        return (_remade, (self.template, self.values, self.plural_template))


def _english(template: str, values: dict[str, object]) -> str:
    """The template with its values put in."""
    return template.format(**values) if values else template


def _remade(template: str, values: dict[str, object], plural: str | None = None) -> Said:
    if plural is None:
        return Said(template, **values)
    values = dict(values)
    return Said.plural(template, plural, values.pop("count"), **values)


class Written(float):
    """A number in a sentence with the digits the library chose for it: a `float` (a front end
    writes it in the reader's language: "−0,3" in Spanish, "53,3 %" for a text ending in "%")
    whose `str` and `repr` are the English `text`, so the English sentence stays exactly what
    the f-string gave ("−0.3", "0.0078", "1.2e-05", "53.3%")."""

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


def formatted(value: float, spec: str) -> Written:
    """`value` as format(value, spec) writes it ("{:.3f}", "{:,}", "{:.1%}"), a number still."""
    return Written(value, format(value, spec))


class Listed(tuple):
    """Things listed in a sentence ("1, 2", "none 0.950, ffn 0.900"), written with ", " between;
    a front end writes each item in the reader's language."""

    def __str__(self) -> str:
        return ", ".join(map(str, self))


class Quoted(str):
    """A token the reader typed, named in a sentence: “token” in English, in the reader's
    language's quotation marks in a front end; `text` is the token itself, never translated."""

    text: str

    def __new__(cls, text: str) -> Quoted:
        made = super().__new__(cls, f"“{text}”")
        made.text = text
        return made

    def __getnewargs__(self) -> tuple[str]:
        return (self.text,)


def N_(message: str) -> str:
    """`message` as it is: an English word the library names, marked for the catalogue."""
    return message


def said_of(error: BaseException) -> str:
    """The sentence an error was raised with: its Said (template and values kept, for a front end
    to say it in the reader's language) when it was raised with one, else `str(error)`."""
    if len(error.args) == 1 and isinstance(error.args[0], Said):
        return error.args[0]
    return str(error)
