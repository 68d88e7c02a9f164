"""The corpus benchmark times a first pass and a cached look, on a tiny model."""

from __future__ import annotations

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.corpus import MAX_TOKENS, bundled_corpus, corpus_of
from encoder.io.tokenize import load_tokenizer, tokenize
from tests.bench.corpus_speed import measure_corpus_speed


def test_the_corpus_benchmark_times_a_first_pass_and_a_cached_look() -> None:
    cfg = EncoderConfig(vocab_size=30522, d_model=16, num_heads=2, num_layers=1, d_ff=16)
    corpus = corpus_of(tokenize(bundled_corpus()[:20], load_tokenizer(), MAX_TOKENS))
    times = measure_corpus_speed(TransformerEncoder(cfg).eval(), corpus)
    assert times["first_s"] > 0 and times["held_mb"] > 0
    assert times["cached_s"] < times["first_s"]
