"""Fixtures every test folder shares: MiniLM with its tokenizer (loaded once a session), and torch
on one thread; the imports' heap frozen once the tests are collected."""

from __future__ import annotations

from typing import NamedTuple

import pytest
import torch
from tokenizers import Tokenizer

from app.heap import freeze_startup_heap
from encoder import TransformerEncoder, load_pretrained
from encoder.core.capture import Trace
from encoder.io.tokenize import TokenizedBatch, tokenize
from encoder.train.trainer import torch_threads


class MiniLM(NamedTuple):
    """The bundled all-MiniLM-L6-v2 and its tokenizer (unpacks as `model, tokenizer`)."""

    model: TransformerEncoder
    tokenizer: Tokenizer

    def batch(self, *texts: str) -> TokenizedBatch:
        return tokenize(list(texts), self.tokenizer, self.model.cfg.max_len)

    def trace_of(self, text: str, **options) -> Trace:
        """The model's trace of one text; options go to `trace` (names, ablate_heads)."""
        batch = self.batch(text)
        return self.model.trace(batch.input_ids, batch.attention_mask, **options)

    def attention_of(self, text: str, ablate=()) -> tuple[torch.Tensor, list[str]]:
        """One text's attention [layer, head, T, T] and its tokens."""
        return self.trace_of(text, ablate_heads=ablate).attention[:, 0], self.batch(text).tokens[0]


def pytest_collection_finish(session: pytest.Session) -> None:
    """The tests' start, as the server's (app.heap.frozen_at_start): what the imports made frozen
    out of the collection every page asks for, before any test opens a page (a session)."""
    freeze_startup_heap()


@pytest.fixture(scope="session")
def minilm() -> MiniLM:
    """MiniLM, shared by the whole session: tests only read it."""
    return MiniLM(*load_pretrained())


@pytest.fixture
def one_thread():
    """One torch thread: as quick for tiny models, steadier times, and no stall while other
    processes use the shared cores. A module takes it with `pytest.mark.usefixtures`."""
    with torch_threads(1):
        yield
