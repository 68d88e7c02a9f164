"""Cached models: one model per (config, source, device), built once and shared read-only by
every browser session of the server (eval mode, never trained or mutated), in the cache bounded
in bytes (app.memory.CACHE). A session model's CPU weights count as what its session keeps
(app.controls.session_models); its copies on other devices are cached entries tagged with its id,
which leave the cache when the model leaves its session."""

from __future__ import annotations

import copy

import torch

from app.i18n import _
from app.memory import CACHE, tensor_bytes
from app.sources import ModelSource
from encoder import EncoderConfig, TransformerEncoder, load_pretrained
from encoder.core import block
from encoder.inspect.limits import BYTES_PER_VALUE

# One torch thread per forward pass. The page streams to the browser while the script runs, so
# on a small machine Chromium draws while torch computes, and two torch threads then wait on
# each other: measured rerun at 6 x 8 heads, d_model 512, 33 tokens, 0.52 s -> 0.43 s.
torch.set_num_threads(1)


def _build_model(cfg: EncoderConfig, source: ModelSource, device: str) -> TransformerEncoder:
    if source.encoder is not None:  # a copy for this device; the session keeps the CPU one
        return _same_weights(copy.deepcopy(source.encoder), cfg).to(device)
    if source.id == "pretrained":
        if device == "cpu":
            return _same_weights(load_pretrained()[0], cfg)
        # A copy per device: the CPU model is shared by every session.
        return copy.deepcopy(model_for(cfg, source, "cpu")).to(device)
    return TransformerEncoder(cfg).eval().to(device)


def _same_weights(model: TransformerEncoder, cfg: EncoderConfig) -> TransformerEncoder:
    """`model`'s weights in the block `cfg` describes: the same model, or with another
    activation or norm placement (a lesson question's other variant). Pre-norm's final norm,
    which a post-norm model lacks, starts as the identity LayerNorm; post-norm drops it."""
    if model.cfg == cfg:
        return model
    other = TransformerEncoder(cfg).eval()
    missing, _unexpected = other.load_state_dict(model.state_dict(), strict=False)
    if any(not name.startswith("norm.") for name in missing):
        raise ValueError(f"the model's weights do not fit {cfg}: {missing}")
    return other


def model_key(cfg: EncoderConfig, source: ModelSource, device: str) -> tuple:
    return ("model", cfg, source.id, device)


def model_for(cfg: EncoderConfig, source: ModelSource, device: str) -> TransformerEncoder:
    """One model per (config, source, device), in eval mode, never trained or mutated."""
    if source.encoder is not None and device == "cpu" and source.encoder.cfg == cfg:
        return source.encoder  # counted in the budget as what its session keeps
    return CACHE.get_or_build(
        model_key(cfg, source, device),
        lambda: _build_model(cfg, source, device),
        lambda model: tensor_bytes([model]),
        reserve=2 * BYTES_PER_VALUE * block.parameters(cfg),  # the model and its init
        what=_("This model"),
        tag=source.tag,
    )
