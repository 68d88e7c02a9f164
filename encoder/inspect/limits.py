"""Bounds on the work one run may do, checked from the config before anything is built.

The numbers are estimates a page can quote ("about 1.9 GB; the limit is 1.5 GB") before it
allocates a single weight.
"""

from __future__ import annotations

import math

from encoder.core import block, hooks
from encoder.core.config import EncoderConfig
from encoder.core.said import Said

MAX_SENTENCES = 16  # sentences per batch; further lines are dropped, and the page says so
MAX_PARAMETERS = 150_000_000  # 600 MB of float32 weights
MAX_ACTIVATION_BYTES = 1_500_000_000  # every captured intermediate of one run
BYTES_PER_VALUE = 4  # float32


class RunTooLarge(ValueError):
    """The requested model or run is beyond this machine's bounds; the message says by how much."""


def block_values(cfg: EncoderConfig, batch: int, tokens: int) -> int:
    """Values of every tensor one block's hooks capture for a [batch, tokens] input."""
    return sum(op.values for op in block.block_ops(cfg, 0, batch, tokens))


def estimate_activation_bytes(cfg: EncoderConfig, batch: int, tokens: int) -> int:
    """Bytes of every tensor a trace captures for a [batch, tokens] input."""
    return BYTES_PER_VALUE * sum(op.values for op in block.model_ops(cfg, batch, tokens))


def estimate_trace_bytes(
    cfg: EncoderConfig, batch: int, tokens: int, keep: hooks.NameFilter
) -> int:
    """Peak bytes of `model.trace(..., names=keep)` on a [batch, tokens] input: the kept hooks,
    the attention weights (captured, then stacked), the residual stream, and one block's
    intermediates alive at a time."""
    shapes = block.shapes(cfg, batch, tokens)
    kept = sum(math.prod(shape) for name, shape in shapes.items() if keep(name))
    attention = 2 * cfg.num_layers * batch * cfg.num_heads * tokens * tokens
    stream = (cfg.num_layers + 1) * batch * tokens * cfg.d_model
    return BYTES_PER_VALUE * (kept + attention + stream + block_values(cfg, batch, tokens))


def check_run(cfg: EncoderConfig, batch: int, tokens: int) -> None:
    """Raise RunTooLarge when the model or this batch would exceed the machine's bounds."""
    params = block.parameters(cfg)
    if params > MAX_PARAMETERS:
        raise RunTooLarge(
            Said(
                "This model would have about {count} million parameters ({size} GB of weights); "
                "the limit is {limit} million. Use fewer layers, a smaller d_model or d_ff.",
                count=format(params / 1e6, ",.0f"),
                size=round(params * BYTES_PER_VALUE / 1e9, 1),  # as f"{:.1f}" writes it
                limit=format(MAX_PARAMETERS / 1e6, ",.0f"),
            )
        )
    if batch > MAX_SENTENCES:
        raise RunTooLarge(
            Said(
                "{count} sentences is more than the limit of {limit}.",
                count=batch,
                limit=MAX_SENTENCES,
            )
        )
    activations = estimate_activation_bytes(cfg, batch, tokens)
    if activations > MAX_ACTIVATION_BYTES:
        raise RunTooLarge(
            Said(
                "This run would hold about {size} GB of intermediate tensors ({sentences} "
                "sentence(s) x {tokens} tokens, {layers} layers x {heads} heads); the limit is "
                "{limit} GB. Use shorter or fewer sentences, or fewer layers or heads.",
                size=round(activations / 1e9, 1),  # as f"{:.1f}" writes it
                sentences=batch,
                tokens=tokens,
                layers=cfg.num_layers,
                heads=cfg.num_heads,
                limit=round(MAX_ACTIVATION_BYTES / 1e9, 1),
            )
        )
