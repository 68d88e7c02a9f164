"""A stand-in for a run, made of random numbers: what the floor page's views draw.

`floor_run` takes app.run_cache.run_for's arguments and returns an app.runs.Run with the text's real
tokens, and for the tensors a trace would hold, random arrays of the same shapes (attention rows
are softmaxes, padded keys get 0), made once per size and mask; the weights the tables read (norm
gains, attention projections) are random too. No model is built and no forward pass runs.
`plan(counts)` names the token counts of texts to come: their arrays are made with the first run,
so a timed rerun finds them.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from functools import cache, lru_cache

import torch

from app.run_cache import run_key, tokenize_for
from app.runs import Run, RunKey
from app.sources import ModelSource, built_in
from encoder import EncoderConfig, Trace, hooks
from encoder.core import block
from encoder.core.model import attention_path, norm_path
from encoder.inspect.limits import check_run

STAND_INS = 32  # stand-in runs kept (the app's cache keeps its runs too)
PLANNED_COUNTS: set[int] = set()  # token counts of single-sentence texts to come


def _generator(*seeds: int | str) -> torch.Generator:
    """A generator seeded by these numbers and texts (the same on every run of the page)."""
    return torch.Generator().manual_seed(zlib.crc32(repr(seeds).encode()))


@cache  # one per planned token count and setup: each is looked up every rerun
def random_trace(cfg: EncoderConfig, mask: tuple[tuple[int, ...], ...]) -> Trace:
    """A Trace of random numbers with every hook, for a config and an attention mask [B, T]."""
    attention_mask = torch.tensor(mask)  # [B, T]
    B, T = attention_mask.shape
    generator = _generator(B, T, repr(cfg))
    scores = torch.randn(cfg.num_layers, B, cfg.num_heads, T, T, generator=generator)
    padding = (attention_mask == 0)[None, :, None, None, :]  # [1, B, 1, 1, key]
    attention = scores.masked_fill(padding, float("-inf")).softmax(dim=-1)  # [L, B, H, T, T]
    tensors = {
        name: torch.randn(shape, generator=generator)
        for name, shape in block.shapes(cfg, B, T).items()
    }
    for norm in hooks.norms(cfg):  # what a norm divides by is positive
        tensors[norm.std] = tensors[norm.std].abs() + 0.5
    blocks = hooks.blocks(cfg.num_layers)
    for layer, names in enumerate(blocks):
        tensors[names.attn.pattern] = attention[layer]
    hidden = (tensors[hooks.embed().out],) + tuple(tensors[b.resid_post] for b in blocks)
    return Trace(
        output=hidden[-1],
        hidden_states=hidden,
        attention=attention,
        tensors=tensors,
        input_ids=torch.zeros(B, T, dtype=torch.long),
        attention_mask=attention_mask,
    )


@lru_cache(maxsize=4)
def random_weights(cfg: EncoderConfig) -> dict[str, torch.Tensor]:
    """The parameters the views' tables read (every norm's gain and bias, every attention
    projection), random."""
    generator = _generator(repr(cfg))
    d = cfg.d_model
    weights = {}
    for norm in hooks.norms(cfg):
        weights[f"{norm_path(norm)}.weight"] = 1 + 0.1 * torch.randn(d, generator=generator)
        if cfg.norm_type == "layernorm":
            weights[f"{norm_path(norm)}.bias"] = 0.1 * torch.randn(d, generator=generator)
    for layer in range(cfg.num_layers):
        shapes = {"in_proj_weight": (3 * d, d), "in_proj_bias": (3 * d,)}
        shapes |= {"out_proj.weight": (d, d), "out_proj.bias": (d,)}
        for name, shape in shapes.items():
            weights[f"{attention_path(layer)}.{name}"] = torch.randn(shape, generator=generator)
    return weights


def varied(trace: Trace, sentences: tuple[str, ...], kept: set[str]) -> Trace:
    """The precomputed arrays made this text's own, cheaply (as the app's numbers are): every
    number scaled by a factor, and the heads of each layer shuffled, both drawn from the text.
    Without it a new text of the same length would give Streamlit the same tables and figures
    as before, which it does not send again, and the floor would be too cheap."""
    generator = _generator(*sentences)
    scale = 1 + 0.2 * torch.rand(1, generator=generator).item()
    heads = torch.randperm(trace.attention.shape[2], generator=generator)
    attention = trace.attention[:, :, heads]  # [L, B, H, T, T]
    patterns = {b.attn.pattern: attention[b.index] for b in hooks.blocks(len(attention))}
    tensors = {
        name: patterns[name] if name in patterns else t * scale
        for name, t in trace.tensors.items()
        if name in kept
    }
    return Trace(
        output=trace.output * scale,
        hidden_states=tuple(h * scale for h in trace.hidden_states),
        attention=attention,
        tensors=tensors,
        input_ids=trace.input_ids,
        attention_mask=trace.attention_mask,
    )


def _no_heads_off(heads: tuple) -> Run:
    raise ValueError("The floor page has no model: heads cannot be switched off here.")


@lru_cache(maxsize=STAND_INS)
def floor_run_for(key: RunKey) -> Run:
    cfg = key.cfg
    source = built_in(key.source, cfg)
    batch = tokenize_for(source, cfg, list(key.sentences))
    check_run(cfg, *batch.input_ids.shape)
    mask = tuple(map(tuple, batch.attention_mask.tolist()))
    own = varied(random_trace(cfg, mask), key.sentences, set(key.names))
    trace = replace(own, input_ids=batch.input_ids)
    return Run(
        key=key,
        cfg=cfg,
        tokens=batch.tokens,
        padded_tokens=batch.padded_tokens(),
        input_ids=batch.input_ids.numpy(),
        attention_mask=batch.attention_mask.numpy(),
        attention=trace.attention.numpy(),
        trace=trace,
        load_weights=lambda: random_weights(cfg),
        truncations=batch.truncations,
        forward_ms=0.0,
        heads_off=_no_heads_off,
        source=source,
    )


def floor_run(
    cfg: EncoderConfig, source: ModelSource, device: str, sentences: list[str], names=(), ablate=()
) -> Run:
    """app.run_cache.run_for's stand-in: the same batch, random numbers instead of a forward pass
    (heads switched off change nothing in random numbers; they only name the stand-in)."""
    key = run_key(cfg, source, device, sentences, names, ablate)
    for count in PLANNED_COUNTS:  # made once per size; then a look-up
        random_trace(cfg, ((1,) * count,))
    return floor_run_for(key)


def plan(counts: str) -> None:
    """Token counts ("31,32,33") of the texts to come."""
    PLANNED_COUNTS.update(int(count) for count in counts.split(",") if count)
