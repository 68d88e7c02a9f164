"""Encoder Explorer's library: a configurable, fully instrumented Transformer encoder."""

from encoder import hooks
from encoder.capture import Trace
from encoder.config import EncoderConfig
from encoder.model import TransformerEncoder, available_devices
from encoder.pretrained import load_pretrained

__all__ = [
    "EncoderConfig",
    "hooks",
    "Trace",
    "TransformerEncoder",
    "available_devices",
    "load_pretrained",
]
