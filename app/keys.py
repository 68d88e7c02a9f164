"""Session keys as the page's modules declare them: one `Key` each, beside the widget it names.

A view declares its own keys (its widgets' and what it selects) next to its drawing code, the
sidebar its setup's, the lesson and the class theirs; app.registry gathers every one of them and
app.controls.state serves them. Plain values only (no Streamlit), so every layer may import it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from encoder.core.options import BY_KEY, parse_value

MAX_LAYERS = BY_KEY["num_layers"].bounds[1]  # the layer slider's top (a checkpoint may have more)
LAYER_BOUNDS = (0, MAX_LAYERS - 1)  # a layer picker's values in a link
MAX_HEADS = 64  # head counts the sidebar offers
HEAD_BOUNDS = (0, MAX_HEADS - 1)
MAX_TOKENS = 512  # positions per sentence (the models' max_len)
POSITION_BOUNDS = (0, MAX_TOKENS - 1)

# How a selected value is brought within a run (app.controls.state.selection): a layer or a
# head of the largest setup, a position of the chosen sentence (a token: None or past the end
# is its first word; a query: past the end is the lesson's rule), or as it is.
FITS_LAYER, FITS_HEAD, FITS_POSITION, FITS_TOKEN, FITS_QUERY = (
    "layer",
    "head",
    "position",
    "token",
    "query",
)


@dataclass(frozen=True)
class Key:
    """One session key. in_url: a URL parameter of the same name; choices / bounds: what a URL
    value may be (a key whose default is True or False is a switch, 1 or 0 in the URL); follows:
    setup B's key that takes the value of setup A's key of that name unless B overrides it;
    selects: a field of the views' Selection, brought within the run as `fits` says; fills: the
    other keys a link's value sets (a training preset's controls); labels: a set of tabs' key
    (st.tabs keyed, whose value is the open tab's label), their labels in the run's language, so
    that the open tab is named again when the language changes (app.controls.state.put_again);
    unlisted: values a link may carry besides `choices` that the page never offers (a message
    about a value it cannot use names `choices` alone), such as the tests' pseudo-language."""

    name: str
    default: object = None
    in_url: bool = False
    choices: tuple = ()
    bounds: tuple[int, int] | None = None
    follows: str | None = None
    selects: bool = False
    fits: str | None = None
    fills: Callable[[object], dict[str, object]] | None = None
    labels: Callable[[], Sequence[str]] | None = None
    unlisted: tuple = ()

    def parse(self, raw: str) -> object:
        """A URL value, checked; ValueError with a sentence for the page when it cannot be used."""
        if isinstance(self.default, bool):  # a switch: 1 / 0 (true / false)
            if raw.lower() not in ("1", "0", "true", "false"):
                raise ValueError(f"{self.name}={raw!r} is not 1 (on) or 0 (off)")
            return raw.lower() in ("1", "true")
        if raw in self.unlisted:
            return raw
        # text, device, heads to switch off: returned as they are, checked where they are used
        return parse_value(self.name, raw, self.choices, self.bounds)


# What every view may select: the sentence of the batch, and the Attention view's layer and head
# (the explorer's settled head; the lesson's "Open in" buttons and the pairs' "Head off" read it).
SHARED_KEYS = (
    Key("sentence", 0, selects=True),
    Key("layer", 0, in_url=True, bounds=LAYER_BOUNDS, selects=True, fits=FITS_LAYER),
    Key("head", 0, in_url=True, bounds=HEAD_BOUNDS, selects=True, fits=FITS_HEAD),
)


class Selection:
    """What the user picked inside the views, within the run's sizes: one attribute per key a
    view declares with `selects` (its default where the session has none). Read-only."""

    def __init__(self, values: dict[str, object]) -> None:
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> object:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no view selects {name!r}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Selection is read-only: use with_values()")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Selection) and self._values == other._values

    def __repr__(self) -> str:
        return f"Selection({self._values})"

    def values(self) -> dict[str, object]:
        return dict(self._values)

    def with_values(self, **values: object) -> Selection:
        unknown = set(values) - set(self._values)
        if unknown:
            raise AttributeError(f"no view selects {sorted(unknown)}")
        return Selection({**self._values, **values})
