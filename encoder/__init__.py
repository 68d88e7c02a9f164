"""Encoder Explorer's library: a configurable, fully instrumented Transformer encoder."""

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder, available_devices
from encoder.io.checkpoints import load_pretrained

__all__ = [
    "EncoderConfig",
    "hooks",
    "Trace",
    "TransformerEncoder",
    "available_devices",
    "load_pretrained",
]
