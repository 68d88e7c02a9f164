"""What the controls offer and what they hand on: the settings types every layer reads.

The sidebar (app.controls) fills them in; app.main, the views and the lesson read them. Plain
values only (no Streamlit, no session), so views depend on this module and never on the controls.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.i18n import _, n_
from app.sources import LABELS as SOURCE_LABELS
from encoder import EncoderConfig
from encoder.core.options import BY_KEY, OPTIONS

# The architecture options' lists, all read from encoder.core.options' one table.
D_MODEL_CHOICES = list(BY_KEY["d_model"].choices)
D_FF_CHOICES = list(BY_KEY["d_ff"].choices)
LABELS = {  # how a control's value is named on the page
    **SOURCE_LABELS,
    **{
        value: option.label_of(value)
        for option in OPTIONS
        if option.named
        for value in option.choices
    },
}


def shown(text: str | None) -> str | None:
    """A control's English word (encoder.core.options' labels, helps, value names and phrases;
    the model sources' names: each marked N_ where it is defined) as this run's language says
    it; any other text (a model's own name), which no catalogue holds, as it is."""
    return _(text) if text else text  # "" is the catalogue's header to gettext


COUNTED = {  # the options said with the language's plural forms ("1 layer"), not their phrase
    "num_heads": lambda count: n_("{count} head", "{count} heads", count),
    "num_layers": lambda count: n_("{count} layer", "{count} layers", count),
}


def say(key: str, value: object) -> str:
    """An option's value in a sentence ("post-norm", "8 heads", "1 layer"), in this run's
    language."""
    if key in COUNTED:
        return COUNTED[key](int(value))
    option = BY_KEY[key]
    return shown(option.phrase).format(shown(option.name(value)))


LESSON_RULE_QUERY = -1  # lesson_query: the lesson's rule picks the query
ARCHITECTURE_KEYS = tuple(option.key for option in OPTIONS if option.architecture)


def architecture_values(cfg: EncoderConfig) -> dict[str, object]:
    """The architecture widgets' values that show `cfg`."""
    return {key: BY_KEY[key].value_of(cfg) for key in ARCHITECTURE_KEYS}


@dataclass(frozen=True)
class Setup:
    """One setup: its model source, its config (None when impossible: `error` says why) and the
    heads its run switches off (compare mode; otherwise the Attention view's own section)."""

    source: str
    cfg: EncoderConfig | None
    error: str = ""
    heads_off: str = ""  # "layer.head,..."


@dataclass
class Settings:
    """What the sidebar says for this run: the text, the device, setup A, and setup B in compare
    mode."""

    text: str
    device: str
    notices: list[str]
    a: Setup
    b: Setup | None = None  # None: compare mode is off

    @property
    def cfg(self) -> EncoderConfig | None:
        """Setup A's architecture; None when it is impossible (`error` says why)."""
        return self.a.cfg

    @property
    def error(self) -> str:
        return self.a.error
