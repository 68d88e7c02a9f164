"""What the controls offer and what they hand on: the settings types every layer reads.

The sidebar (app.controls) fills them in; app.main, the views and the lesson read them. Plain
values only (no Streamlit, no session), so views depend on this module and never on the controls.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from app.sources import LABELS as SOURCE_LABELS
from encoder import EncoderConfig
from encoder.core.config import ACTIVATION_NAMES, ARCHITECTURE_FIELDS, NORM_TYPE_NAMES, placement_of

D_MODEL_CHOICES = [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
D_FF_CHOICES = [64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192]
LABELS = {  # how a control's value is named on the page
    **SOURCE_LABELS,
    "pre": "Pre-norm: x + f(LN(x))",
    "post": "Post-norm: LN(x + f(x))",
    **ACTIVATION_NAMES,
    **NORM_TYPE_NAMES,
    "sinusoidal": "Sinusoidal",
    "learned": "Learned",
}
LESSON_RULE_QUERY = -1  # lesson_query: the lesson's rule picks the query


def architecture_key(field: str) -> str:
    """The widget key of an EncoderConfig architecture field (the same name, but "norm", which
    says "pre" / "post", for norm_first)."""
    return "norm" if field == "norm_first" else field


ARCHITECTURE_KEYS = tuple(architecture_key(field) for field in ARCHITECTURE_FIELDS)


def architecture_values(cfg: EncoderConfig) -> dict[str, object]:
    """The architecture widgets' values that show `cfg`."""
    values = {architecture_key(field): getattr(cfg, field) for field in ARCHITECTURE_FIELDS}
    values["norm"] = placement_of(cfg.norm_first)
    return values


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


@dataclass(frozen=True)
class Selection:
    """What the user picked inside the views, within the run's sizes. Every view reads it; the
    Export view and the lesson read other views' choices from it."""

    sentence: int = 0
    layer: int = 0
    head: int = 0
    stretch: bool = False
    ablate: str = ""
    step_layer: int = 0
    step_head: int = 0
    step_query: int = 0
    ln_layer: int = 0
    act_layer: int = 0
    act_token: int | None = None  # None: the first word
    lesson: int = 1  # the lesson's step, 1-based
    lesson_query: int = LESSON_RULE_QUERY  # a position, or LESSON_RULE_QUERY: the rule's


SELECTION_KEYS = tuple(f.name for f in fields(Selection))
