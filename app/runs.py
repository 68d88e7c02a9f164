"""Cached models and cached runs: the only place the page touches torch.

Models are cached per (config, device) and runs per (model, sentences) with
`st.cache_resource`, so switching back to a setup or a text is instant. Both are shared by every
browser session of the server, so they are read-only: models sit in eval mode and runs hold
numpy arrays and DataFrames that nobody mutates (a run only fills in its lazily computed tables,
the same for every session).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd
import streamlit as st
import tokenizers
import torch

from encoder import EncoderConfig, Trace, TransformerEncoder, analysis, load_pretrained
from encoder.limits import MAX_SENTENCES, check_run
from encoder.tokenize import Truncation, load_tokenizer, tokenize

# One torch thread per forward pass. The page streams to the browser while the script runs, so
# on a small machine Chromium draws while torch computes, and two torch threads then wait on
# each other: measured rerun at 6 x 8 heads, d_model 512, 33 tokens, 0.52 s -> 0.43 s.
torch.set_num_threads(1)


@st.cache_resource(show_spinner="Loading the MiniLM tokenizer…")
def tokenizer() -> tokenizers.Tokenizer:
    return load_tokenizer()


@st.cache_resource(show_spinner="Loading the pretrained MiniLM checkpoint…")
def pretrained_model() -> tuple[TransformerEncoder, tokenizers.Tokenizer]:
    return load_pretrained()


@st.cache_resource(max_entries=8, show_spinner="Building the model…")
def _model(config_json: str, source: str, device: str) -> TransformerEncoder:
    """One model per (config, source, device), in eval mode, never trained or mutated."""
    if source == "pretrained":
        # A copy for other devices: moving the shared CPU model would move it for everyone.
        model = pretrained_model()[0]
        return model if device == "cpu" else copy.deepcopy(model).to(device)
    return TransformerEncoder(EncoderConfig(**json.loads(config_json))).eval().to(device)


@dataclass
class Run:
    """Everything the views draw, computed once per (model, sentences)."""

    cfg: EncoderConfig
    device: str
    sentences: list[str]
    tokens: list[list[str]]  # each sentence's real tokens
    padded_tokens: list[list[str]]  # each sentence's tokens padded with [PAD] to T
    input_ids: np.ndarray  # [B, T]
    attention_mask: np.ndarray  # [B, T]
    attention: np.ndarray  # [L, B, H, T, T] float32
    # The part of the trace the lazily computed tables read: norms, residual stream, attention.
    kept_trace: Trace = field(repr=False)
    norm_parameters: pd.DataFrame
    ledger: pd.DataFrame
    parameter_counts: pd.DataFrame
    cost: dict
    block_shapes: dict[str, str]
    truncations: list[Truncation]
    forward_ms: float
    _head_metrics: dict[int, pd.DataFrame] = field(default_factory=dict, repr=False)

    def n_valid(self, sentence: int) -> int:
        return int(self.attention_mask[sentence].sum())

    # Computed on first use: a view pays only for the tables it shows.
    @cached_property
    def layernorm_stats(self) -> pd.DataFrame:
        return analysis.layernorm_stats(self.kept_trace)

    @cached_property
    def residual_norms(self) -> pd.DataFrame:
        return analysis.residual_norms(self.kept_trace)

    def head_metrics(self, sentence: int) -> pd.DataFrame:
        """Every head's metrics over one sentence's real tokens."""
        if sentence not in self._head_metrics:
            self._head_metrics[sentence] = analysis.head_metrics(self.kept_trace, sentence)
        return self._head_metrics[sentence]


def keep_for_tables(trace: Trace) -> Trace:
    """The trace without the tensors no table reads (q, k, v, scores, mlp, ...): only the norms'
    tensors, the residual stream and the attention weights stay in the cache."""
    norms = {
        name.removesuffix(".hook_mean") for name in trace.tensors if name.endswith("hook_mean")
    }
    return replace(
        trace,
        tensors={n: t for n, t in trace.tensors.items() if n.rsplit(".", 1)[0] in norms},
    )


def shape_text(tensor: torch.Tensor) -> str:
    return "[" + ", ".join(str(n) for n in tensor.shape) + "]"


def block_shapes(trace, block: int = 0) -> dict[str, str]:
    """Live shapes on the edges of one block's diagram."""
    t = trace.tensors
    name = f"blocks.{block}"
    return {
        "input": shape_text(trace.hidden_states[block]),
        "qkv": shape_text(t[f"{name}.attn.hook_q"]),
        "scores": shape_text(t[f"{name}.attn.hook_scores"]),
        "attn_out": shape_text(t[f"{name}.attn.hook_out"]),
        "resid_mid": shape_text(t[f"{name}.hook_resid_mid"]),
        "mlp_hidden": shape_text(t[f"{name}.mlp.hook_pre"]),
        "mlp_out": shape_text(t[f"{name}.mlp.hook_out"]),
        "output": shape_text(t[f"{name}.hook_resid_post"]),
    }


def split_lines(text: str) -> tuple[list[str], int]:
    """The non-blank lines to run (at most MAX_SENTENCES) and how many lines there were."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[:MAX_SENTENCES], len(lines)


@st.cache_resource(max_entries=16, show_spinner=False)
def _run(config_json: str, source: str, device: str, sentences: tuple[str, ...]) -> Run:
    cfg = EncoderConfig(**json.loads(config_json))
    batch = tokenize(list(sentences), tokenizer(), cfg.max_len)
    check_run(cfg, *batch.input_ids.shape)
    model = _model(config_json, source, device)
    input_ids = batch.input_ids.to(device)
    attention_mask = batch.attention_mask.to(device)
    start = time.perf_counter()
    trace = model.trace(input_ids, attention_mask)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    forward_ms = (time.perf_counter() - start) * 1000
    trace = trace.to("cpu")
    return Run(
        cfg=cfg,
        device=device,
        sentences=list(sentences),
        tokens=batch.tokens,
        padded_tokens=batch.padded_tokens(),
        input_ids=trace.input_ids.numpy(),
        attention_mask=trace.attention_mask.numpy(),
        attention=trace.attention.numpy(),
        kept_trace=keep_for_tables(trace),
        norm_parameters=analysis.norm_parameters(model),
        ledger=analysis.shape_ledger(model, trace),
        parameter_counts=analysis.parameter_counts(model),
        cost=analysis.cost_summary(model, trace),
        block_shapes=block_shapes(trace),
        truncations=batch.truncations,
        forward_ms=forward_ms,
    )


def run_for(cfg: EncoderConfig, source: str, device: str, sentences: list[str]) -> Run:
    """The cached run on a device the controls have checked; raises RunTooLarge / ValueError
    with a message for the page."""
    return _run(json.dumps(cfg.to_dict(), sort_keys=True), source, device, tuple(sentences))
