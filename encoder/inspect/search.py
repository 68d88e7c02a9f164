"""Search a corpus by meaning: every line's sentence embedding at every depth, once per model and
corpus; a query ranked against them by cosine; and a token's nearest tokens in the corpus at a
layer (exBERT's search), each layer's token states built the first time it is asked for.

    index = corpus_index(model, tokenizer, bundled_corpus(), pooling_of(directory))
    index.search(index.embed(model, ["A cat sleeps."])[depth, 0], depth)   # best first

The index keeps no model: what still runs one (a query, a layer's token states) is given it, so a
cached index never holds a model its cache has let go.

The corpus goes through the model in chunks of similar length (CHUNK lines, padded with a mask),
so memory stays bounded whatever the corpus. A blank line is a ValueError naming it: a search
hit must be a line the reader gave.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import accumulate

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.core.said import Said
from encoder.inspect.similarity import Pooling, check_depth, embeddings_by_depth, states_at

CHUNK = 64  # lines per forward pass


@dataclass(frozen=True)
class Hit:
    line: int  # index in the corpus's lines
    text: str
    cosine: float


@dataclass(frozen=True)
class TokenHit:
    line: int
    position: int  # the token's position in its line's tokens
    token: str
    cosine: float


def _encoded(tokenizer: Tokenizer, lines: list[str], max_len: int) -> list[list[int]]:
    """Each line's ids, cut to max_len keeping a final special token ([SEP]) where there is one."""
    found = []
    for encoding in tokenizer.encode_batch(lines):
        ids = encoding.ids
        if len(ids) > max_len:
            tail = ids[-1:] if encoding.special_tokens_mask[-1] else []
            ids = ids[: max_len - len(tail)] + tail
        found.append(ids)
    return found


def _check_lines(lines: list[str]) -> None:
    if not lines:
        raise ValueError(Said("the corpus is empty: paste sentences, one a line"))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise ValueError(
                Said(
                    "line {number} of the corpus is empty: give one sentence a line", number=number
                )
            )


@dataclass
class CorpusIndex:
    """A corpus embedded by one model: `embeddings` [L+1, N, d] unit vectors, each line's ids and
    tokens; token states per layer, unit vectors of every real token, built when first asked."""

    cfg: EncoderConfig = field(repr=False)  # the model's that embedded it
    tokenizer: Tokenizer = field(repr=False)
    pooling: Pooling
    lines: list[str] = field(repr=False)
    ids: list[list[int]] = field(repr=False)
    tokens: list[list[str]] = field(repr=False)
    embeddings: torch.Tensor = field(repr=False)  # [L+1, N, d] float32 on the CPU, unit length
    seconds: float  # how long embedding the corpus took
    _token_states: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)

    def _runs(self, model: TransformerEncoder, ids: list[list[int]]):
        """Chunks of similar length through the model: (rows, trace, attention mask) each."""
        if model.cfg != self.cfg:
            raise ValueError(Said("this corpus was embedded by another model"))
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        device = model.device
        for first in range(0, len(order), CHUNK):
            rows = order[first : first + CHUNK]
            T = max(len(ids[i]) for i in rows)
            input_ids = torch.zeros(len(rows), T, dtype=torch.long)
            mask = torch.zeros(len(rows), T, dtype=torch.long)
            for r, i in enumerate(rows):
                input_ids[r, : len(ids[i])], mask[r, : len(ids[i])] = torch.tensor(ids[i]), 1
            trace = model.trace(input_ids.to(device), mask.to(device), names=())
            yield rows, trace, mask.to(device)

    def _embedded(self, model: TransformerEncoder, ids: list[list[int]]) -> torch.Tensor:
        out = None
        for rows, trace, mask in self._runs(model, ids):
            chunk = F.normalize(embeddings_by_depth(trace, mask, self.pooling), dim=-1).cpu()
            if out is None:
                out = torch.empty(chunk.shape[0], len(ids), chunk.shape[-1], dtype=chunk.dtype)
            out[:, rows] = chunk
        return out

    def embed(self, model: TransformerEncoder, lines: list[str]) -> torch.Tensor:
        """[L+1, B, d] unit embeddings of other lines (a query), as the corpus's were made by
        `model` (the one that embedded the corpus)."""
        _check_lines(lines)
        return self._embedded(model, _encoded(self.tokenizer, lines, self.cfg.max_len))

    @property
    def num_layers(self) -> int:
        return self.embeddings.shape[0] - 1

    def search(self, query_embedding: torch.Tensor, depth: int, top: int = 5) -> list[Hit]:
        """The `top` lines closest to a [d] query at `depth` (0..L), best first."""
        check_depth(depth, self.num_layers)
        query = F.normalize(query_embedding.float().cpu(), dim=-1)
        cosines = self.embeddings[depth] @ query  # [N]
        best = cosines.topk(min(top, len(self.lines)))
        return [
            Hit(int(i), self.lines[int(i)], float(c))
            for c, i in zip(best.values, best.indices, strict=True)
        ]

    def token_states(self, model: TransformerEncoder, layer: int) -> torch.Tensor:
        """[tokens, d] unit states of every real token of the corpus at `layer` (0..L, the depths
        of embeddings), line by line in order; run through the model the first time asked."""
        check_depth(layer, self.num_layers)
        if layer not in self._token_states:
            states = [None] * len(self.ids)
            for rows, trace, _ in self._runs(model, self.ids):
                stream = states_at(trace, layer)
                for r, i in enumerate(rows):
                    states[i] = stream[r, : len(self.ids[i])].cpu()
            self._token_states[layer] = F.normalize(torch.cat(states), dim=-1)
        return self._token_states[layer]

    def nearest_tokens(
        self, model: TransformerEncoder, state: torch.Tensor, layer: int, top: int = 5
    ) -> list[TokenHit]:
        """The `top` corpus tokens whose state at `layer` is closest to a [d] state, best first."""
        states = self.token_states(model, layer)
        cosines = states @ F.normalize(state.float().cpu(), dim=-1)
        best = cosines.topk(min(top, len(cosines)))
        starts = list(accumulate((len(ids) for ids in self.ids), initial=0))
        hits = []
        for c, i in zip(best.values, best.indices, strict=True):
            line = bisect_right(starts, int(i)) - 1
            position = int(i) - starts[line]
            hits.append(TokenHit(line, position, self.tokens[line][position], float(c)))
        return hits

    @property
    def nbytes(self) -> int:
        """Bytes held: the embeddings and the token states built so far."""
        held = [self.embeddings, *self._token_states.values()]
        return sum(t.numel() * t.element_size() for t in held)


def corpus_index(
    model: TransformerEncoder,
    tokenizer: Tokenizer,
    lines: list[str],
    pooling: Pooling,
    device: str = "cpu",
) -> CorpusIndex:
    """Embed every line at every depth on `device` (where the model must be: a shared model is
    never moved here); ValueError for no lines or a blank one."""
    _check_lines(lines)
    if model.device != torch.device(device):
        raise ValueError(
            Said("the model is on {where}, not {device}", where=str(model.device), device=device)
        )
    start = time.perf_counter()
    ids = _encoded(tokenizer, lines, model.cfg.max_len)
    tokens = [[tokenizer.id_to_token(i) for i in line] for line in ids]
    index = CorpusIndex(
        model.cfg, tokenizer, pooling, list(lines), ids, tokens, torch.empty(0), 0.0
    )
    index.embeddings = index._embedded(model, ids)
    index.seconds = time.perf_counter() - start
    return index
