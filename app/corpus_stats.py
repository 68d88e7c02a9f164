"""Heads across a corpus, computed once per model and corpus and kept in the shared byte budget."""

from __future__ import annotations

import hashlib

import streamlit as st

from app import runs, session_models
from app.memory import CACHE
from encoder.inspect.corpus import (
    BATCH_SIZE,
    MAX_TOKENS,
    Corpus,
    CorpusStats,
    corpus_statistics,
    tokenize_corpus,
)

BYTES_PER_VALUE = 4


def corpus_for(run: runs.Run, sentences: list[str]) -> Corpus:
    """The corpus as `run`'s model reads it; ValueError for a model that reads a toy task's
    symbols, not English."""
    session_model = session_models.find(run.key.source)
    if session_model is not None and session_model.task_model is None:
        reader = session_model.tokenizer
    elif session_model is None and run.cfg.vocab_size == runs.tokenizer().get_vocab_size():
        reader = runs.tokenizer()
    else:
        raise ValueError(
            "Heads across a corpus reads English sentences; this model reads a toy task's "
            "symbols. Pick MiniLM or random weights with MiniLM's vocabulary."
        )
    return tokenize_corpus(sentences, reader, min(MAX_TOKENS, run.cfg.max_len))


def _reserve(run: runs.Run, corpus: Corpus) -> int:
    """The pass's peak: one batch's trace (q, k, v, attention), and every token's q and k."""
    cfg = run.cfg
    T = max(len(ids) for ids in corpus.ids)
    batch = BATCH_SIZE * cfg.num_layers * (4 * T * cfg.d_model + 3 * cfg.num_heads * T * T)
    kept = 2 * corpus.token_count * cfg.num_layers * cfg.d_model
    return BYTES_PER_VALUE * (batch + 2 * kept)


def stats_for(run: runs.Run, sentences: list[str]) -> tuple[Corpus, CorpusStats]:
    """Every head's behaviour over `sentences` for `run`'s model, with a progress bar the first
    time; cached on (config, source, device, corpus)."""
    corpus = corpus_for(run, sentences)
    config_json, source, device = run.key.config_json, run.key.source, run.key.device
    digest = hashlib.sha256("\n".join(sentences).encode()).hexdigest()
    model = runs.model_for(config_json, source, device)

    def build() -> CorpusStats:
        bar = st.progress(0.0, text=f"Reading {len(sentences)} sentences with every head…")

        def report(done: int, total: int) -> None:
            bar.progress(done / total, text=f"Reading the corpus: {done} of {total} sentences")

        try:
            return corpus_statistics(model, corpus, progress=report)
        finally:
            bar.empty()

    stats = CACHE.get_or_build(
        ("corpus", config_json, source, device, digest),
        build,
        lambda found: found.nbytes,
        reserve=_reserve(run, corpus),
        what=f"Heads across {len(sentences)} sentences",
        tag=runs._tag(source),
    )
    return corpus, stats
