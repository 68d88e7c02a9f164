"""A sentence the library says to a reader, in English, that keeps its template and values so
that a front end can say it in the reader's language.

    raise ValueError(Said("d_model={d_model} is not divisible by num_heads={heads}", ...))

`Said(...)` is a `str` (the English sentence), so every caller that prints, logs or compares
it is unchanged; `Said.template` is the message a catalogue translates (the app's `told`
looks it up) and `Said.values` what goes into its named placeholders. The library imports no
translation machinery: marking is all it does. A word it names rather than a sentence it
says (an option's label, a table's column) is marked `N_("...")` where it is defined, and the
front end translates it where it shows it (gettext's convention).
"""

from __future__ import annotations


class Said(str):
    """The English sentence, with the template and values it was made from."""

    template: str
    values: dict[str, object]

    def __new__(cls, template: str, /, **values: object) -> Said:
        made = super().__new__(cls, template.format(**values) if values else template)
        made.template = template
        made.values = values
        return made

    def __reduce__(self) -> tuple:  # pickled (a process pool, a cache) as it was made
        return (_remade, (self.template, self.values))


def _remade(template: str, values: dict[str, object]) -> Said:
    return Said(template, **values)


def N_(message: str) -> str:
    """`message` as it is: an English word the library names, marked for the catalogue."""
    return message


def said_of(error: BaseException) -> str:
    """The sentence an error was raised with: its Said (template and values kept, for a front end
    to say it in the reader's language) when it was raised with one, else `str(error)`."""
    if len(error.args) == 1 and isinstance(error.args[0], Said):
        return error.args[0]
    return str(error)
