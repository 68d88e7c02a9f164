"""The attention explorer's payload: one run's attention, sent to the browser once, compactly.

A payload is one bytes object, the same for every host (Streamlit's Custom Components v2 take raw
bytes, anywidget sends bytes without base64, an offline file inlines it as base64):

    b"AEX1" | uint32 little-endian header length | header (UTF-8 JSON) | padding to 8 | body

The header describes each setup (A, and B in compare mode): its name, tokens, layers, heads, the
heads stored at full resolution and, for long inputs, the block tiles of every head; and,
optionally, where the explorer opens ("start": layer, head, mode, query; see `with_start`), the one
way every host (the page, the offline file) sets it. The body holds
the weights as uint16: weight = value / 65535, so a weight read back is within 1/131070 (7.6e-6)
of the model's, well inside the 1e-3 a readout promises (uint8 would give 1/510, about 0.002,
which is not). B − A is computed in the browser from the two setups.

Size: every head at full resolution while it fits FULL_BYTES (MiniLM's 72 heads up to 128
tokens: 2.36 MB; 16 tokens: 37 kB); past it, every head as block tiles of at most TILE_MAX
tokens a side (within TILE_BYTES) plus the chosen heads at full resolution (MiniLM at 502 tokens:
332 kB of tiles + 504 kB per chosen head).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"AEX1"
SCALE = 65535  # uint16 steps over [0, 1]
MAX_TOKENS = 512
MAX_HEADS = 24 * 64  # layers x heads
FULL_BYTES = 2_500_000  # every head at full resolution while it fits this, per setup
TILE_BYTES = 600_000  # the block tiles of every head, per setup
TILE_MAX = 48  # tokens a side of a block tile (as the Plotly overview's blocks)
TOLERANCE = 1e-4  # softmax rounding: weights may stray this far outside [0, 1]
MODES = ("lines", "matrix", "heads")  # the explorer's views (attention_explorer.js)


@dataclass(frozen=True)
class Setup:
    """One setup's attention for one sentence, checked and quantised."""

    name: str  # "A" | "B" or any short label
    tokens: tuple[str, ...]
    layer_labels: tuple[int, ...]  # one per layer: the layers' numbers on the page
    heads: int
    full: tuple[tuple[int, int], ...]  # (layer, head) pairs at full resolution, body order
    full_weights: np.ndarray  # [len(full), n, n] uint16
    tile_starts: tuple[int, ...] = ()  # first token of each block; () when every head is full
    tile_weights: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint16))
    # [layers, heads, blocks, blocks] uint16 block weights (mean over a query block of the sum
    # over a key block), present only when some head is not at full resolution


def _as_array(attention) -> np.ndarray:
    if hasattr(attention, "detach"):  # a torch tensor
        attention = attention.detach().float().cpu().numpy()
    return np.asarray(attention, dtype=np.float32)


def check_attention(attention, tokens: Sequence[str]) -> np.ndarray:
    """[layers, heads, T, T] float32 weights of len(tokens) == T tokens, or a ValueError that
    names the shapes, the bound passed or where a weight is not a number."""
    weights = _as_array(attention)  # [layer, head, query, key]
    n = len(tokens)
    if weights.ndim != 4 or weights.shape[2] != weights.shape[3]:
        raise ValueError(
            f"attention needs the shape [layers, heads, T, T]; got {tuple(weights.shape)}"
        )
    layers, heads, t, _ = weights.shape
    if t != n:
        raise ValueError(
            f"attention of shape {tuple(weights.shape)} holds {t} tokens, but {n} tokens were given"
        )
    if n == 0 or layers == 0 or heads == 0:
        raise ValueError(f"attention of shape {tuple(weights.shape)} holds nothing to draw")
    if n > MAX_TOKENS:
        raise ValueError(f"{n} tokens is more than the explorer draws ({MAX_TOKENS})")
    if layers * heads > MAX_HEADS:
        raise ValueError(
            f"{layers} layers x {heads} heads is more than the explorer draws "
            f"({MAX_HEADS} heads, e.g. 24 layers x 64 heads)"
        )
    finite = np.isfinite(weights)
    if not finite.all():
        layer, head, query, key = np.argwhere(~finite)[0].tolist()
        raise ValueError(
            f"the attention of layer {layer} head {head} is not a number at query {query}, "
            f"key {key} (the model's weights give NaN or infinity): nothing to draw"
        )
    low, high = float(weights.min()), float(weights.max())
    if low < -TOLERANCE or high > 1 + TOLERANCE:
        raise ValueError(f"attention weights lie in [0, 1]; these span [{low:.4g}, {high:.4g}]")
    return weights


def quantise(weights: np.ndarray) -> np.ndarray:
    """Weights in [0, 1] as uint16 steps of 1/65535 (rounded: error at most 1/131070)."""
    return np.rint(np.clip(weights, 0.0, 1.0) * SCALE).astype(np.uint16)


def block_tiles(weights: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """[L, H, T, T] weights as [L, H, blocks, blocks] block weights of at most `size` blocks a
    side: the mean over a block of queries of the sum over a block of keys (rows still sum to 1).
    Returns (the blocks' first tokens, the block weights)."""
    n = weights.shape[-1]
    factor = math.ceil(n / size)
    starts = np.arange(0, n, factor)
    query_sizes = np.diff(np.append(starts, n))[:, None]  # [query block, 1]
    summed = np.add.reduceat(np.add.reduceat(weights, starts, axis=2), starts, axis=3)
    return starts, summed / query_sizes


def every_head_fits(layers: int, heads: int, n: int) -> bool:
    """True when every head of n tokens is sent at full resolution (the chosen heads do not
    matter then)."""
    return 2 * layers * heads * n * n <= FULL_BYTES


def tile_side(layers: int, heads: int, n: int) -> int:
    """Tokens a side of every head's tile: as many as TILE_BYTES holds, at most TILE_MAX."""
    fits = math.isqrt(TILE_BYTES // (2 * layers * heads))
    return max(1, min(n, TILE_MAX, fits))


def build_setup(
    attention,
    tokens: Sequence[str],
    *,
    name: str = "A",
    layer_labels: Iterable[int] | None = None,
    chosen: Iterable[tuple[int, int]] = ((0, 0),),
) -> Setup:
    """One setup from its [layers, heads, T, T] attention (one sentence, no padding) and tokens.
    Every head is stored at full resolution when they fit FULL_BYTES; otherwise the `chosen`
    (layer, head) pairs are, beside every head's block tiles."""
    weights = check_attention(attention, tokens)
    layers, heads, n, _ = weights.shape
    labels = tuple(range(layers)) if layer_labels is None else tuple(int(i) for i in layer_labels)
    if len(labels) != layers:
        raise ValueError(f"{len(labels)} layer labels for attention of {layers} layers")
    tokens = tuple(str(token) for token in tokens)
    if every_head_fits(layers, heads, n):
        pairs = tuple((layer, head) for layer in range(layers) for head in range(heads))
        full = quantise(weights.reshape(layers * heads, n, n))
        return Setup(name, tokens, labels, heads, pairs, full)
    pairs = tuple(dict.fromkeys((int(layer), int(head)) for layer, head in chosen))
    for layer, head in pairs:
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(
                f"layer {layer} head {head} is not in attention of {layers} layers x {heads} heads"
            )
    full = quantise(np.stack([weights[layer, head] for layer, head in pairs]))
    starts, tiles = block_tiles(weights, tile_side(layers, heads, n))
    return Setup(name, tokens, labels, heads, pairs, full, tuple(starts.tolist()), quantise(tiles))


def _header(setup: Setup, offset: int) -> dict:
    entry = {
        "name": setup.name,
        "tokens": list(setup.tokens),
        "layers": len(setup.layer_labels),
        "heads": setup.heads,
        "n": len(setup.tokens),
        "layer_labels": list(setup.layer_labels),
        "full": [list(pair) for pair in setup.full],
        "full_offset": offset,
        "tiles": None,
    }
    if setup.tile_starts:
        entry["tiles"] = {
            "starts": list(setup.tile_starts),
            "offset": offset + setup.full_weights.nbytes,
        }
    return entry


def start_at(layer: int = 0, head: int = 0, mode: str = "lines", query: int | None = None) -> dict:
    """Where an explorer opens, as the header's "start": `layer`, `head` (numbered from 0) in
    `mode` ("lines", "matrix" or "heads"), with the token `query` pinned if given."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of the explorer's views {MODES}")
    start = {"layer": int(layer), "head": int(head), "mode": mode}
    if query is not None:
        start["query"] = int(query)
    return start


def _join(header: dict, body: bytes) -> bytes:
    text = json.dumps(header, ensure_ascii=False).encode("utf-8")
    start = len(MAGIC) + 4 + len(text)
    padding = b" " * (-start % 8)  # the body starts 8-aligned: a Uint16Array can view it
    return b"".join([MAGIC, len(text + padding).to_bytes(4, "little"), text, padding, body])


def with_start(payload: bytes, start: dict | None) -> bytes:
    """The payload opening at `start` (start_at's dict; None: where the host says, else the first
    head in lines); the weights' bytes are unchanged."""
    header = decode_header(payload)
    header.pop("start", None)
    if start is not None:
        header["start"] = start_at(**start)
    body = payload[8 + int.from_bytes(payload[4:8], "little") :]
    return _join(header, body)


def encode(setups: Sequence[Setup], *, stretch: bool = False) -> bytes:
    """The payload's bytes: the header then every setup's uint16 weights (see the module doc).
    `stretch`: colours end at the largest weight drawn rather than at 1 (random weights spread
    attention almost evenly; stretching shows its structure)."""
    if not setups:
        raise ValueError("a payload needs at least one setup")
    entries, chunks, offset = [], [], 0
    for setup in setups:
        entries.append(_header(setup, offset))
        for array in (setup.full_weights, setup.tile_weights):
            data = np.ascontiguousarray(array, dtype="<u2").tobytes()
            chunks.append(data)
            offset += len(data)
    header = {
        "format": "attention-explorer",
        "version": 1,
        "dtype": "uint16",
        "scale": SCALE,
        "stretch": stretch,
        "setups": entries,
    }
    return _join(header, b"".join(chunks))


def decode_header(payload: bytes) -> dict:
    """The header of a payload (what the browser reads first); for tests and tools."""
    if payload[:4] != MAGIC:
        raise ValueError("not an attention explorer payload (it does not start with AEX1)")
    length = int.from_bytes(payload[4:8], "little")
    return json.loads(payload[8 : 8 + length].decode("utf-8"))


def decode_setup(
    payload: bytes, setup: int = 0
) -> tuple[dict, dict[tuple[int, int], np.ndarray], np.ndarray | None]:
    """What the browser reads of one setup (for tests and tools): its header entry, its heads at
    full resolution by (layer, head) as [n, n] weights in [0, 1], and its block tiles
    [layers, heads, blocks, blocks] (None when every head is full)."""
    header = decode_header(payload)
    entry = header["setups"][setup]
    body = 8 + int.from_bytes(payload[4:8], "little")
    n = entry["n"]
    words = np.frombuffer(payload, dtype="<u2", offset=body)
    full = {}
    for i, (layer, head) in enumerate(entry["full"]):
        start = entry["full_offset"] // 2 + i * n * n
        full[layer, head] = words[start : start + n * n].reshape(n, n) / header["scale"]
    tiles = None
    if entry["tiles"]:
        size = len(entry["tiles"]["starts"])
        start = entry["tiles"]["offset"] // 2
        shape = (entry["layers"], entry["heads"], size, size)
        tiles = words[start : start + math.prod(shape)].reshape(shape) / header["scale"]
    return entry, full, tiles


def payload(
    attention,
    tokens: Sequence[str],
    *,
    name: str = "A",
    chosen: Iterable[tuple[int, int]] = ((0, 0),),
) -> bytes:
    """One setup's payload in one call: `encode([build_setup(...)])`."""
    return encode([build_setup(attention, tokens, name=name, chosen=chosen)])


def full_weights(data: bytes, setup: int = 0) -> dict[tuple[int, int], np.ndarray]:
    """The heads a payload's setup holds at full resolution, {(layer, head): [n, n] float64
    weights}, as the browser reads them back; for tests and tools."""
    return decode_setup(data, setup)[1]
