"""Heads across a corpus, computed once per model and corpus and kept in the shared byte budget."""

from __future__ import annotations

import hashlib
import json

import streamlit as st

from app.i18n import _
from app.memory import CACHE
from app.runs import Run
from encoder.inspect.corpus import (
    BATCH_SIZE,
    MAX_TOKENS,
    Corpus,
    CorpusStats,
    corpus_of,
    corpus_statistics,
)
from encoder.io.tokenize import tokenize
from encoder.web.scatter import scatter_data

BYTES_PER_VALUE = 4


def corpus_for(run: Run, sentences: list[str]) -> Corpus:
    """The corpus as `run`'s model reads it; ValueError for a model that reads a toy task's
    symbols, not English."""
    source = run.source
    if source is None or source.check is not None or run.task_model is not None:
        raise ValueError(
            _(
                "Heads across a corpus reads English sentences; this model reads a toy task's "
                "symbols. Pick MiniLM or random weights with MiniLM's vocabulary."
            )
        )
    return corpus_of(tokenize(sentences, source.reader, min(MAX_TOKENS, run.cfg.max_len)))


BYTES_PER_TOKEN = 160  # a token's id and text as Python objects in the list of lists, at most


def _corpus_bytes(corpus: Corpus) -> int:
    return BYTES_PER_TOKEN * corpus.token_count


def _reserve(run: Run, corpus: Corpus) -> int:
    """The pass's peak: one batch's trace (q, k, v, attention), and every token's q and k."""
    cfg = run.cfg
    T = max(len(ids) for ids in corpus.ids)
    batch = BATCH_SIZE * cfg.num_layers * (4 * T * cfg.d_model + 3 * cfg.num_heads * T * T)
    kept = 2 * corpus.token_count * cfg.num_layers * cfg.d_model
    return BYTES_PER_VALUE * (batch + 2 * kept)


def _digest(sentences: list[str]) -> str:
    return hashlib.sha256("\n".join(sentences).encode()).hexdigest()


def stats_for(run: Run, sentences: list[str]) -> tuple[Corpus, CorpusStats]:
    """Every head's behaviour over `sentences` for `run`'s model, with a progress bar the first
    time; cached on (config, source, device, corpus)."""
    digest = _digest(sentences)
    corpus = CACHE.get_or_build(  # tokenized once, not on every rerun (~10 ms)
        ("corpus tokens", run.key.source, run.cfg.max_len, digest),
        lambda: corpus_for(run, sentences),
        _corpus_bytes,
        # at most a token a character, and the two special tokens
        reserve=BYTES_PER_TOKEN * sum(len(sentence) + 2 for sentence in sentences),
        what=_("The corpus' {count} sentences as tokens", count=len(sentences)),
        tag=run.source.tag,
    )
    model = run.model()

    def build() -> CorpusStats:
        bar = st.progress(
            0.0, text=_("Reading {count} sentences with every head…", count=len(sentences))
        )

        def report(done: int, total: int) -> None:
            bar.progress(
                done / total,
                text=_("Reading the corpus: {done} of {total} sentences", done=done, total=total),
            )

        try:
            return corpus_statistics(model, corpus, progress=report)
        finally:
            bar.empty()

    stats = CACHE.get_or_build(
        ("corpus", run.cfg, run.key.source, run.device, digest),
        build,
        lambda found: found.nbytes,
        reserve=_reserve(run, corpus),
        what=_("Heads across {count} sentences", count=len(sentences)),
        tag=run.source.tag,
    )
    return corpus, stats


BYTES_PER_POINT = 120  # a query's or a key's entry in the scatter's JSON, at most


def scatter_for(run: Run, corpus: Corpus, stats: CorpusStats, layer: int, head: int) -> bytes:
    """head_scatter.js's data for head (layer, head) over the corpus (stats_for's) as JSON bytes,
    without words: the scatter speaks the page's language (encoder/web/shared.js's PAGE_SPEECH).
    Built and serialised once and kept, so that a rerun which changes nothing here, and a
    language switch, send the same bytes again (as a reference) and serialise nothing (the
    scatter of MiniLM's corpus: about 300 kB of JSON)."""

    def build() -> bytes:
        return json.dumps(scatter_data(stats, corpus.sentences, layer, head)).encode()

    return CACHE.get_or_build(
        ("head scatter", run.cfg, run.key.source, run.device, _digest(corpus.sentences))
        + (layer, head),
        build,
        len,
        reserve=BYTES_PER_POINT * len(stats.points) * 2,
        what=_("Heads across {count} sentences", count=len(corpus.sentences)),
        tag=run.source.tag,
    )
