"""The sidebar's keys: the text, what a setup is (its source, architecture, seed, heads off), the
device, the developer's timings, compare mode and setup B, and what the sidebar keeps for itself."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from app.i18n import LANGUAGES, PSEUDO
from app.keys import Key
from app.sources import BUILT_IN
from encoder import EncoderConfig
from encoder.core.options import OPTIONS, key_values

ASSETS = Path(__file__).resolve().parent.parent / "assets"
EXAMPLES: list[dict] = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
ARCHITECTURE_PRESETS: list[dict] = json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))
SOURCES = BUILT_IN  # and found models ("disk:NAME"), and models trained or uploaded here

_DEFAULTS = key_values(EncoderConfig())
SETUP_A_KEYS: tuple[Key, ...] = (  # what a setup is: its source, architecture, seed, heads off
    Key("source", "random", in_url=True, choices=SOURCES),
    *(  # every architecture option and the seed, from encoder.core.options' table
        Key(
            option.key,
            _DEFAULTS[option.key],
            in_url=True,
            choices=option.choices if option.named else (),
            bounds=option.bounds,
        )
        for option in OPTIONS
    ),
    Key("ablate", "", in_url=True),  # the Attention view's, in single mode
)
SETUP_KEYS = tuple(key.name for key in SETUP_A_KEYS)
B_PREFIX = "b_"


def b_key(name: str) -> str:
    """Setup B's key for setup A's key `name` ("b_norm" for "norm")."""
    return B_PREFIX + name


KEYS: tuple[Key, ...] = (
    Key("text", EXAMPLES[0]["text"], in_url=True),
    *SETUP_A_KEYS,
    Key("device", "cpu", in_url=True),
    Key("timing", False, in_url=True),  # the developer's status line under each page (timing=1)
    # the page's language (None: the browser's, if the page speaks it); a link carries it, and
    # the tests' pseudo-language too, which the page never offers
    Key("lang", None, in_url=True, choices=tuple(LANGUAGES), unlisted=(PSEUDO,)),
    Key("_language"),  # the sidebar's language control
    # presenter mode on every view: large type, no views bar (app.charts.common.presenting)
    Key("present", False, in_url=True),
    # setup B: on or off, and each of A's keys (absent: it follows A)
    Key("compare", False, in_url=True),
    *(replace(key, name=b_key(key.name), default=None, follows=key.name) for key in SETUP_A_KEYS),
    Key("_b_overrides"),  # {setup key: value}: where setup B differs from setup A
    # pickers that fill in other keys
    Key("preset"),  # the sidebar's architecture preset
    Key("example"),  # the sidebar's example sentences
    Key("_saved_architecture"),  # the user's own, while a trained model's is shown
    Key("_saved_text"),  # the user's own, while a task model's sequences are shown
    Key("_session_models"),  # session_models.ModelShelf: {id: SessionModel}, in the budget
    Key("_upload_round", 0),  # a fresh (empty) uploader after each upload
    Key("_upload_error"),  # the last upload's message (markdown), shown once
    Key("_source_error"),  # why a found model could not be loaded (markdown), shown once
)
DEFAULTS = {key.name: key.default for key in KEYS}
