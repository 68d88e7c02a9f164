"""What each head does across many sentences (Clark et al. 2019, "What Does BERT Look At?"), and
one head's queries and keys from a whole corpus in one plane (Yeh et al., VIS 2023, AttentionViz).

One pass over the corpus, batched by length with a padding mask, gives for every head the mean
over every real query of every sentence of: its weight on the previous token, the next token,
itself, [CLS], [SEP] and punctuation, and the entropy of its row. Heads are grouped by the
behaviour they show most (GROUP_RULE). The same pass keeps every head's queries and keys, and
projects them to two dimensions (project_queries_keys).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd
import torch

from encoder.core import hooks
from encoder.core.model import TransformerEncoder
from encoder.core.said import Said
from encoder.inspect.lesson import BROAD_ENTROPY, CLEAR_SHARE
from encoder.inspect.measures import entropy
from encoder.inspect.moves import WEIGHT, ShareSums, value_norms
from encoder.inspect.token_kinds import PUNCTUATION, SINK_KINDS, WORD, token_kind

CORPUS_FILE = "corpus.txt"  # beside this module: one sentence a line, '#' lines name the source
MIN_SENTENCES = 2
MAX_SENTENCES = 1000
MAX_TOKENS = 64  # per sentence, [CLS] and [SEP] included; longer sentences are cut
MAX_CHARS = 200_000  # of pasted text, checked before anything is tokenized
BATCH_SIZE = 32

POSITIONAL = ("previous", "next", "self")
BEHAVIOURS = POSITIONAL + SINK_KINDS  # each a mean share of a query's attention
BROAD, MIXED = "broad", "mixed"
GROUPS = BEHAVIOURS + (BROAD, MIXED)
GROUP_RULE = Said(
    "A head belongs to the behaviour with its largest mean share when that share is above "
    "{share}; otherwise it is {broad} when its mean entropy is above {entropy} of an even "
    "spread's (ln n over a sentence's n tokens), else {mixed}.",
    share=format(CLEAR_SHARE, ".0%"),
    broad=BROAD,
    entropy=format(BROAD_ENTROPY, ".0%"),
    mixed=MIXED,
)
FINGERPRINT = BEHAVIOURS + ("spread",)  # the fingerprint grid's columns, each in [0, 1]

Progress = Callable[[int, int], None]  # (sentences done, sentences in all)


def bundled_corpus() -> list[str]:
    """The corpus shipped with the library: its sentences, without the '#' lines naming it."""
    text = resources.files(__package__).joinpath(CORPUS_FILE).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def bundled_corpus_source() -> str:
    """The '#' lines at the top of the bundled corpus: where it comes from, its licence."""
    text = resources.files(__package__).joinpath(CORPUS_FILE).read_text(encoding="utf-8")
    return " ".join(line.lstrip("# ").strip() for line in text.splitlines() if line[:1] == "#")


def parse_corpus(text: str) -> list[str]:
    """Pasted text -> its sentences, one a non-blank line. ValueError with the bound for text that
    is too long, empty, a single sentence or more than MAX_SENTENCES sentences."""
    if len(text) > MAX_CHARS:
        raise ValueError(
            Said(
                "the pasted corpus has {count} characters; the limit is {limit}: paste fewer "
                "sentences",
                count=format(len(text), ","),
                limit=format(MAX_CHARS, ","),
            )
        )
    sentences = [line.strip() for line in text.splitlines() if line.strip()]
    if not sentences:
        raise ValueError(Said("the corpus is empty: paste sentences, one a line"))
    if len(sentences) < MIN_SENTENCES:
        raise ValueError(
            Said(
                "one sentence is not a corpus: paste at least {least}, one a line (the Attention "
                "view looks at a single sentence)",
                least=MIN_SENTENCES,
            )
        )
    if len(sentences) > MAX_SENTENCES:
        raise ValueError(
            Said(
                "the corpus has {count} sentences; the limit is {limit}: paste fewer",
                count=format(len(sentences), ","),
                limit=format(MAX_SENTENCES, ","),
            )
        )
    return sentences


@dataclass(frozen=True)
class Corpus:
    """Sentences as token ids, each at most max_len tokens."""

    sentences: list[str]
    ids: list[list[int]]
    tokens: list[list[str]]
    truncated: int  # sentences cut to max_len tokens

    @property
    def token_count(self) -> int:
        return sum(len(sentence) for sentence in self.tokens)


def corpus_of(batch) -> Corpus:
    """The corpus of a tokenized batch (encoder.io.tokenize.tokenize's TokenizedBatch, each
    sentence cut to MAX_TOKENS or the model's max_len); ValueError when no sentence holds anything
    but special tokens."""
    ids = [row[:n].tolist() for row, n in zip(batch.input_ids, batch.lengths, strict=True)]
    if all(token_kind(t) not in (WORD, PUNCTUATION) for s in batch.tokens for t in s):
        raise ValueError(
            Said(
                "the corpus holds only special tokens ([CLS], [SEP], ...): give sentences with "
                "words"
            )
        )
    return Corpus(list(batch.sentences), ids, batch.tokens, len(batch.truncations))


@dataclass
class CorpusStats:
    """What corpus_statistics measured.

    table        one row per head: layer, head, BEHAVIOURS (mean shares), entropy (mean, nats),
                 spread (mean entropy / ln n, in [0, 1]), group (GROUP_RULE)
    shares       moves.ShareSums.table over the corpus: [CLS], [SEP], punctuation per head, for the
                 raw weights and the norm-weighted attention
    points       one row per real token of the corpus: sentence, position, token, kind
    projections  [L, H, 2, N, 2] float32: each head's queries (index 0) and keys (1) in the plane
    seconds      how long the pass took
    """

    table: pd.DataFrame
    shares: pd.DataFrame
    points: pd.DataFrame
    projections: np.ndarray
    seconds: float

    @property
    def nbytes(self) -> int:
        frames = (self.table, self.shares, self.points)
        return self.projections.nbytes + sum(int(f.memory_usage(deep=True).sum()) for f in frames)


class _Sums:
    """Running sums over real queries of each head's positional shares and entropies: [L, H]."""

    def __init__(self, L: int, H: int) -> None:
        names = (*POSITIONAL, "entropy", "spread")
        self.sums = {name: torch.zeros(L, H, dtype=torch.float64) for name in names}
        self.counts = dict.fromkeys(self.sums, 0)

    def add(self, attention: torch.Tensor, real: torch.Tensor) -> None:
        """attention [L, B, H, T, T], real [B, T] bool."""
        attention = attention.double()
        has_next = torch.zeros_like(real)
        has_next[:, :-1] = real[:, 1:]
        self._add("self", attention.diagonal(dim1=-2, dim2=-1), real)
        previous = attention.diagonal(offset=-1, dim1=-2, dim2=-1)  # query i -> key i - 1
        self._add("previous", previous, real[:, 1:])
        self._add("next", attention.diagonal(offset=1, dim1=-2, dim2=-1), has_next[:, :-1])
        row_entropy = entropy(attention)  # [L, B, H, T]
        self._add("entropy", row_entropy, real)
        n = real.sum(dim=1)  # [B]
        several = real & (n[:, None] >= 2)
        even = torch.log(n.clamp_min(2).double())[None, :, None, None]
        self._add("spread", row_entropy / even, several)

    def _add(self, name: str, values: torch.Tensor, where: torch.Tensor) -> None:
        """values [L, B, H, q], where [B, q] bool: add the values at the kept queries."""
        self.sums[name] += (values * where[None, :, None, :]).sum(dim=(1, 3))
        self.counts[name] += int(where.sum())

    def means(self) -> dict[str, torch.Tensor]:
        return {
            name: total / self.counts[name] if self.counts[name] else total * math.nan
            for name, total in self.sums.items()
        }


def group_of(row: pd.Series) -> str:
    """A head's group (GROUP_RULE) from its row of CorpusStats.table."""
    shares = row[list(BEHAVIOURS)].astype(float)
    if shares.max() > CLEAR_SHARE:
        return str(shares.idxmax())
    return BROAD if row["spread"] > BROAD_ENTROPY else MIXED


def project_queries_keys(queries: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One head's queries and keys [N, dk] each -> their points in one plane, [N, 2] each.

    As AttentionViz does: the keys are shifted so both clouds share their centre (adding the same
    vector to every key adds a constant to a query's scores, so the softmax is unchanged), each
    cloud is scaled about that centre to the same mean distance from it, then both are projected
    together on their first two principal components."""
    queries = queries.astype(np.float64)
    keys = keys.astype(np.float64)
    centre = queries.mean(axis=0)
    queries = queries - centre
    keys = keys - keys.mean(axis=0)
    for cloud in (queries, keys):
        size = np.linalg.norm(cloud, axis=1).mean()
        if size > 0:
            cloud /= size
    both = np.concatenate([queries, keys])  # [2N, dk]
    both -= both.mean(axis=0)
    # the principal axes: the right singular vectors of `both`, from its small [dk, dk] Gram
    # matrix (an SVD of the tall matrix itself is ~100x slower on a busy machine)
    _, vectors = np.linalg.eigh(both.T @ both)  # eigenvalues ascending
    axes = vectors[:, ::-1][:, :2].T  # [2, dk]
    plane = both @ axes.T  # [2N, 2]
    if plane.shape[1] < 2:  # a head of one dimension: a line
        plane = np.pad(plane, ((0, 0), (0, 2 - plane.shape[1])))
    n = len(queries)
    return plane[:n], plane[n:]


def _padded(sentences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids as one batch padded with 0 to the longest, and its attention mask: [B, T]."""
    T = max(len(ids) for ids in sentences)
    input_ids = torch.zeros(len(sentences), T, dtype=torch.long)  # [B, T]
    mask = torch.zeros(len(sentences), T, dtype=torch.long)  # [B, T]
    for r, ids in enumerate(sentences):
        input_ids[r, : len(ids)] = torch.tensor(ids)
        mask[r, : len(ids)] = 1
    return input_ids, mask


def _projections(queries: list[torch.Tensor], keys: list[torch.Tensor]) -> np.ndarray:
    """Every head's queries and keys (batches of [L, H, n, dk]) on its 2-D plane:
    [L, H, 2 (queries, keys), N, 2]."""
    all_q = torch.cat(queries, dim=2).numpy()  # [L, H, N, dk]
    all_k = torch.cat(keys, dim=2).numpy()
    L, H = all_q.shape[:2]
    projections = np.zeros((L, H, 2, all_q.shape[2], 2), dtype=np.float32)
    for layer in range(L):
        for head in range(H):
            q_plane, k_plane = project_queries_keys(all_q[layer, head], all_k[layer, head])
            projections[layer, head, 0], projections[layer, head, 1] = q_plane, k_plane
    return projections


def corpus_statistics(
    model: TransformerEncoder,
    corpus: Corpus,
    batch_size: int = BATCH_SIZE,
    progress: Progress | None = None,
) -> CorpusStats:
    """Every head's behaviour over the corpus (CorpusStats), in batches of similar length."""
    start = time.perf_counter()
    L, H = model.cfg.num_layers, model.cfg.num_heads
    blocks = hooks.blocks(L)
    keep = [name for b in blocks for name in (b.attn.q, b.attn.k)]
    sums, shares = _Sums(L, H), ShareSums(L, H)
    queries: list[torch.Tensor] = []  # each [L, H, n, dk] for a batch's n real tokens
    keys: list[torch.Tensor] = []
    order = sorted(range(len(corpus.ids)), key=lambda i: len(corpus.ids[i]))
    device = model.device
    for first in range(0, len(order), batch_size):
        rows = order[first : first + batch_size]
        input_ids, mask = _padded([corpus.ids[i] for i in rows])
        trace = model.trace(input_ids.to(device), mask.to(device), names=keep)
        attention = trace.attention.cpu()  # [L, B, H, T, T]
        real = mask.bool()
        sums.add(attention, real)
        tokens = [corpus.tokens[i] for i in rows]
        shares.add(attention, value_norms(trace, model).cpu(), mask, tokens)
        flat = real.flatten()  # the batch's real tokens, row by row
        for store, name in ((queries, "q"), (keys, "k")):
            stacked = torch.stack([trace[getattr(b.attn, name)] for b in blocks]).cpu()
            stacked = stacked.permute(0, 2, 1, 3, 4).flatten(2, 3)  # [L, H, B * T, dk]
            store.append(stacked[:, :, flat])
        if progress is not None:
            progress(min(first + batch_size, len(order)), len(order))

    means = sums.means()
    share_table = shares.table()
    raw = share_table[share_table["reading"] == WEIGHT].reset_index(drop=True)
    table = raw[["layer", "head"]].copy()
    for name in POSITIONAL:
        table[name] = means[name].flatten().numpy()
    for kind in SINK_KINDS:
        table[kind] = raw[kind]
    table["entropy"] = means["entropy"].flatten().numpy()
    table["spread"] = means["spread"].flatten().numpy()
    table["group"] = table.apply(group_of, axis=1)

    projections = _projections(queries, keys)
    points = pd.DataFrame(
        [
            {"sentence": i, "position": p, "token": token, "kind": token_kind(token)}
            for i in order
            for p, token in enumerate(corpus.tokens[i])
        ]
    )
    return CorpusStats(table, share_table, points, projections, time.perf_counter() - start)


def group_counts(table: pd.DataFrame) -> pd.DataFrame:
    """How many heads fall in each group (every group listed, zero included): group, heads."""
    counts = table["group"].value_counts()
    return pd.DataFrame({"group": list(GROUPS), "heads": [int(counts.get(g, 0)) for g in GROUPS]})


def fingerprint(table: pd.DataFrame) -> np.ndarray:
    """The fingerprint grid: one row per head (layer-major), one column per FINGERPRINT entry."""
    return table[list(FINGERPRINT)].to_numpy(dtype=np.float64)


def head_points(stats: CorpusStats, layer: int, head: int) -> pd.DataFrame:
    """One head's scatter: x, y, role (query | key), sentence, position, token, kind; queries
    first, then keys, each in CorpusStats.points' order."""
    L, H = stats.projections.shape[:2]
    if not (0 <= layer < L and 0 <= head < H):
        raise ValueError(f"no head ({layer}, {head}): layers 0..{L - 1}, heads 0..{H - 1}")
    frames = []
    for index, role in enumerate(("query", "key")):
        frame = stats.points.copy()
        plane = stats.projections[layer, head, index]
        frame.insert(0, "role", role)
        frame.insert(0, "y", plane[:, 1])
        frame.insert(0, "x", plane[:, 0])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
