"""Encoder Explorer's library: a configurable, fully instrumented Transformer encoder.

Each module that makes a decision an operator needs (a checkpoint loaded or refused, a training
started, stopped or done) logs it to `logging.getLogger(__name__)`; nothing is shown unless
the program using the library configures logging (the app does, at the level its environment
variable names).
"""

import logging

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder, available_devices
from encoder.io.checkpoints import load_pretrained

logging.getLogger(__name__).addHandler(logging.NullHandler())  # silent until configured

__all__ = [
    "EncoderConfig",
    "hooks",
    "Trace",
    "TransformerEncoder",
    "available_devices",
    "load_pretrained",
]
