"""Cached runs: where the page runs a model's forward pass. Runs are cached under the config
itself (a frozen EncoderConfig), the source's id, the device, the text, the hooks and the heads
off (app.runs.RunKey), in the one cache bounded in bytes (app.memory.CACHE;
ENCODER_EXPLORER_MEMORY_BUDGET, default 2 GB) shared by every browser session of the server, next
to their models (app.models). A run keeps only the hooks the open view reads (`names`, a function
of the config and the selection), plus the attention weights and the residual stream that every
trace returns. A session model's runs are tagged with its id and leave the cache with it. Entries
a page gets inside `CACHE.holding()` (app.main) are not evicted while the page draws them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import replace

import streamlit as st

from app.i18n import _, told
from app.jobs import cost_job
from app.memory import CACHE
from app.models import model_for, model_key
from app.runs import RUN_OVERHEAD_BYTES, Run, RunKey
from app.sources import ModelSource, built_in, pretrained_config
from encoder import EncoderConfig, TransformerEncoder
from encoder.core import block
from encoder.inspect.limits import MAX_SENTENCES, check_run, estimate_trace_bytes
from encoder.io.tokenize import TokenizedBatch, tokenize
from encoder.measure.timing import synchronize


def split_lines(text: str) -> tuple[list[str], int]:
    """The non-blank lines to run (at most MAX_SENTENCES) and how many lines there were."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[:MAX_SENTENCES], len(lines)


def _run_bytes(run: Run) -> int:
    return run.trace.nbytes + RUN_OVERHEAD_BYTES


def tokenize_for(source: ModelSource, cfg: EncoderConfig, sentences: list[str]) -> TokenizedBatch:
    """The batch the source's model reads, with the source's tokenizer. A task model first
    checks every sequence: a symbol it does not know or a length it was not trained on is a
    ValueError naming the sequence."""
    if source.check is not None:
        for number, sentence in enumerate(sentences, 1):
            try:
                source.check(sentence)
            except ValueError as error:
                raise ValueError(
                    _("Sequence {number}: {error}.", number=number, error=told(error))
                ) from None
    return tokenize(sentences, source.reader, cfg.max_len)


def _build_run(key: RunKey, source: ModelSource, batch, model: TransformerEncoder) -> Run:
    input_ids = batch.input_ids.to(key.device)
    attention_mask = batch.attention_mask.to(key.device)
    start = time.perf_counter()
    trace = model.trace(input_ids, attention_mask, names=key.names, ablate_heads=key.ablate)
    synchronize(key.device)  # a GPU's queued work, so the clock measures the pass
    forward_ms = (time.perf_counter() - start) * 1000
    trace = trace.to("cpu")
    cfg, names = key.cfg, key.names
    return Run(
        key=key,
        cfg=cfg,
        tokens=batch.tokens,
        padded_tokens=batch.padded_tokens(),
        input_ids=trace.input_ids.numpy(),
        attention_mask=trace.attention_mask.numpy(),
        attention=trace.attention.numpy(),
        trace=trace,
        load_weights=lambda: model_for(cfg, source, key.device).state_dict(),
        truncations=batch.truncations,
        forward_ms=forward_ms,
        heads_off=lambda heads: run_for(
            cfg, source, key.device, list(key.sentences), names, ablate=heads
        ),
        variant=lambda **changes: _variant(key, source, replace(cfg, **changes)),
        task_model=source.task_model,
        measure_cost=lambda budget_s: cost_job(
            cfg, source, key.device, batch.input_ids, batch.attention_mask, budget_s
        ),
        source=source,
        reading=lambda sentences: run_for(cfg, source, key.device, sentences),
    )


def _variant(key: RunKey, source: ModelSource, cfg: EncoderConfig) -> Run:
    """The run of `key` with another config of the same weights, keeping the hooks of `key`
    that exist in `cfg` (a post-norm model has no final norm)."""
    names = set(block.hook_names(cfg)).intersection(key.names)
    return run_for(cfg, source, key.device, list(key.sentences), names)


def run_key(
    cfg: EncoderConfig,
    source: ModelSource,
    device: str,
    sentences: list[str],
    names: Iterable[str] | None = (),
    ablate: Iterable[tuple[int, int]] = (),
) -> RunKey:
    """What a run is cached under: its config, weights, device, sentences, the hooks it keeps
    (None: every hook) and the heads switched off, each in one canonical order."""
    kept = tuple(sorted(block.hook_names(cfg) if names is None else set(names)))
    return RunKey(cfg, source.id, device, tuple(sentences), kept, tuple(sorted(set(ablate))))


def run_for(
    cfg: EncoderConfig,
    source: ModelSource,
    device: str,
    sentences: list[str],
    names: Iterable[str] | None = (),
    ablate: Iterable[tuple[int, int]] = (),
) -> Run:
    """The cached run keeping `names` (None: every hook) on a device the controls have checked;
    raises RunTooLarge / ValueError with a message for the page (a task model's ValueError
    quotes the text: show it literally)."""
    key = run_key(cfg, source, device, sentences, names, ablate)
    batch = tokenize_for(source, cfg, list(sentences))
    B, T = batch.input_ids.shape
    check_run(cfg, B, T)
    wanted = set(key.names)
    model = model_for(cfg, source, device)
    return CACHE.get_or_build(
        ("run", key),
        lambda: _build_run(key, source, batch, model),
        _run_bytes,
        reserve=estimate_trace_bytes(cfg, B, T, wanted.__contains__),
        what=_(
            "This run ({sentences} sentence(s) x {tokens} tokens, {layers} layers)",
            sentences=B,
            tokens=T,
            layers=cfg.num_layers,
        ),
        keep=(model_key(cfg, source, device),),
        tag=source.tag,
    )


@st.cache_resource(show_spinner=False)
def warm_landing(text: str) -> threading.Thread:
    """Once per process, on its first page: MiniLM's run of the landing page's `text`, every hook
    kept (the Lesson's), built in the background into the shared cache, so that a room opening
    the student link at once finds it there instead of each waiting on a forward pass."""
    cfg = pretrained_config()
    sentences, _count = split_lines(text)
    thread = threading.Thread(
        target=run_for,
        args=(cfg, built_in("pretrained", cfg), "cpu", sentences, None),
        name="warm-landing-run",
        daemon=True,
    )
    thread.start()
    return thread
