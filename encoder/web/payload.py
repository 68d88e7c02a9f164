"""The attention explorer's payload: one run's attention, sent to the browser once, compactly.

A payload is one bytes object, the same for every host (Streamlit's Custom Components v2 take raw
bytes, anywidget sends bytes without base64, an offline file inlines it as base64):

    b"AEX1" | uint32 little-endian header length | header (UTF-8 JSON) | padding to 8 | body

The header describes each setup (A, and B in compare mode): its name, tokens, layers, heads, the
heads stored at full resolution and, for long inputs, the block tiles of every head; optionally two
more readings of them (the explorer's modes "moves" and "rollout"): each full head's value norms
||f(x_j)|| (norm-weighted attention, encoder.inspect.moves: the browser multiplies a head's weights
by its keys' norms, as the library does) and the attention rollout after each layer
(encoder.inspect.rollout; only after the last layer when every layer's would pass ROLLOUT_BYTES);
the local attention window of each layer ("windows": 0 = global; w > 0 = a query sees only the keys
within w // 2 positions of it, as encoder.core.config's attention_window: the explorer marks the
other cells as masked); and, optionally, where the explorer opens ("start": layer, head, mode,
query; see `with_start`), the one way every host (the page, the offline file) sets it, and
"large_text" (presenter mode: `with_large_text`), and "lang", "words" and "direction" (the page's
language, the browser's messages in it and its direction: `with_words`). The body holds the
weights and the rollout as uint16: weight = value / 65535, so a weight read back is within
1/131070 (7.6e-6) of the model's, well inside the 1e-3 a readout promises (uint8 would give
1/510, about 0.002, which is not); the norms as float32. Every chunk of the body starts
8-aligned. B − A is computed in the browser from the two setups. Optionally, each head's query
and key vectors as its scores use them (RoPE's turned ones; encoder.inspect.neuron.qk_vectors) as
float16, for the neuron view ("qk": the heads in body order, each [2, n, dk]): every head's while
they fit QK_BYTES (MiniLM at 16 tokens: 147 kB), else the chosen heads'.

Size: every head at full resolution while it fits FULL_BYTES (MiniLM's 72 heads up to 128
tokens: 2.36 MB; 16 tokens: 37 kB); past it, every head as block tiles of at most TILE_MAX
tokens a side (within TILE_BYTES) plus the chosen heads at full resolution (MiniLM at 502 tokens:
332 kB of tiles + 504 kB per chosen head, + 504 kB for the last layer's rollout, + 2 kB of
norms).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"AEX1"
SCALE = 65535  # uint16 steps over [0, 1]
MAX_TOKENS = 512
MAX_HEADS = 24 * 64  # layers x heads
FULL_BYTES = 2_500_000  # every head at full resolution while it fits this, per setup
TILE_BYTES = 600_000  # the block tiles of every head, per setup
ROLLOUT_BYTES = 600_000  # the rollout after every layer while it fits this, else the last only
QK_BYTES = 2_500_000  # every head's q and k while they fit this, per setup
TILE_MAX = 48  # tokens a side of a block tile (as the Plotly overview's blocks)
TOLERANCE = 1e-4  # softmax rounding: weights may stray this far outside [0, 1]
MODES = ("lines", "matrix", "heads", "moves", "rollout", "neuron")  # the explorer's views (JS)


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
    norms: np.ndarray | None = None  # [len(full), n] float32 value norms of the full heads' keys
    rollout_layers: tuple[int, ...] = ()  # the layers (indexes) whose rollout is stored
    rollout: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint16))
    # [len(rollout_layers), n, n] uint16: the rollout after each of those layers
    windows: tuple[int, ...] = ()  # one per layer: its local window (0 = global); () = all global
    qk_heads: tuple[tuple[int, int], ...] = ()  # (layer, head) pairs whose q and k are sent
    qk: np.ndarray | None = None  # [len(qk_heads), 2, n, dk] float16 q (0) and k (1)


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
            f"the attention of layer {layer}, head {head} is not a number at query {query}, "
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


def qk_fit(layers: int, heads: int, n: int, head_dim: int) -> bool:
    """True when every head's q and k of n tokens are sent (QK_BYTES)."""
    return 2 * 2 * layers * heads * n * head_dim <= QK_BYTES


def tile_side(layers: int, heads: int, n: int) -> int:
    """Tokens a side of every head's tile: as many as TILE_BYTES holds, at most TILE_MAX."""
    fits = math.isqrt(TILE_BYTES // (2 * layers * heads))
    return max(1, min(n, TILE_MAX, fits))


def check_readings(norms, rollout, layers: int, heads: int, n: int):
    """The value norms [layers, heads, n] (>= 0) and the rollout [layers, n, n] (in [0, 1]) as
    float32 arrays (None stays None), or a ValueError that names the shapes or the values."""
    checked = []
    for name, array, shape in (
        ("value norms", norms, (layers, heads, n)),
        ("rollout", rollout, (layers, n, n)),
    ):
        if array is None:
            checked.append(None)
            continue
        values = _as_array(array)
        if values.shape != shape:
            raise ValueError(f"{name} need the shape {shape}; got {tuple(values.shape)}")
        if not np.isfinite(values).all():
            raise ValueError(f"the {name} hold NaN or infinity: nothing to draw")
        high = 1 + TOLERANCE if name == "rollout" else np.inf
        if values.min() < -TOLERANCE or values.max() > high:
            raise ValueError(f"the {name} lie outside [0, {high:g}]")
        checked.append(values)
    return checked


def check_windows(windows: Sequence[int] | None, layers: int) -> tuple[int, ...]:
    """Each layer's local window as a tuple of whole numbers >= 0 (() when none is local), or a
    ValueError that names the values."""
    if windows is None:
        return ()
    found = tuple(windows)
    if len(found) != layers:
        raise ValueError(f"{len(found)} windows for attention of {layers} layers")
    for window in found:
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
            raise ValueError(f"window {window!r} must be a whole number >= 0 (0 = global)")
    return tuple(int(window) for window in found) if any(found) else ()


def layer_windows(cfg) -> list[int]:
    """Each layer's local window of a model with config `cfg` (an EncoderConfig; 0 = global):
    build_setup's `windows`."""
    return [cfg.attention_window if cfg.is_local(layer) else 0 for layer in range(cfg.num_layers)]


def rollout_kept(layers: int, n: int) -> tuple[int, ...]:
    """The layers whose rollout a payload stores: every one while they fit ROLLOUT_BYTES, else
    the last."""
    return tuple(range(layers)) if 2 * layers * n * n <= ROLLOUT_BYTES else (layers - 1,)


def build_setup(
    attention,
    tokens: Sequence[str],
    *,
    name: str = "A",
    layer_labels: Iterable[int] | None = None,
    chosen: Iterable[tuple[int, int]] = ((0, 0),),
    norms=None,
    rollout=None,
    windows: Sequence[int] | None = None,
    qk=None,
) -> Setup:
    """One setup from its [layers, heads, T, T] attention (one sentence, no padding) and tokens.
    Every head is stored at full resolution when they fit FULL_BYTES; otherwise the `chosen`
    (layer, head) pairs are, beside every head's block tiles. `norms`: [layers, heads, T] value
    norms ||f(x_j)|| (the "moves" mode, of the heads stored in full); `rollout`: [layers, T, T]
    the rollout after each layer (the "rollout" mode; see rollout_kept); `windows`: each layer's
    local attention window (0 = global; None: every layer global); `qk`: [layers, heads, 2, n,
    dk] every head's q and k (neuron.qk_vectors), sent for every head when qk_fit, else for the
    `chosen`."""
    weights = check_attention(attention, tokens)
    layers, heads, n, _ = weights.shape
    norms, rollout = check_readings(norms, rollout, layers, heads, n)
    extras = {"windows": check_windows(windows, layers)}
    if qk is not None:
        qk = _as_array(qk)
        if qk.shape[:4] != (layers, heads, 2, n) or not np.isfinite(qk).all():
            raise ValueError(f"q and k need the shape {(layers, heads, 2, n)} + (dk,), finite")
        every = qk_fit(layers, heads, n, qk.shape[-1])
        kept = [(lh // heads, lh % heads) for lh in range(layers * heads)] if every else chosen
        extras["qk_heads"] = tuple(dict.fromkeys((int(a), int(b)) for a, b in kept))
        extras["qk"] = np.stack([qk[pair] for pair in extras["qk_heads"]]).astype(np.float16)
    labels = tuple(range(layers)) if layer_labels is None else tuple(int(i) for i in layer_labels)
    if len(labels) != layers:
        raise ValueError(f"{len(labels)} layer labels for attention of {layers} layers")
    tokens = tuple(str(token) for token in tokens)
    if rollout is not None:
        kept = rollout_kept(layers, n)
        extras |= {"rollout_layers": kept, "rollout": quantise(rollout[list(kept)])}
    if every_head_fits(layers, heads, n):
        pairs = tuple((layer, head) for layer in range(layers) for head in range(heads))
        full = quantise(weights.reshape(layers * heads, n, n))
        if norms is not None:
            extras["norms"] = norms.reshape(layers * heads, n)
        return Setup(name, tokens, labels, heads, pairs, full, **extras)
    pairs = tuple(dict.fromkeys((int(layer), int(head)) for layer, head in chosen))
    for layer, head in pairs:
        if not (0 <= layer < layers and 0 <= head < heads):
            raise ValueError(
                f"layer {layer}, head {head} is not in attention of {layers} layers x {heads} heads"
            )
    full = quantise(np.stack([weights[layer, head] for layer, head in pairs]))
    if norms is not None:
        extras["norms"] = np.stack([norms[layer, head] for layer, head in pairs])
    starts, tiles = block_tiles(weights, tile_side(layers, heads, n))
    blocks = {"tile_starts": tuple(starts.tolist()), "tile_weights": quantise(tiles)}
    return Setup(name, tokens, labels, heads, pairs, full, **blocks, **extras)


def _chunks(setup: Setup) -> dict[str, np.ndarray]:
    """A setup's arrays in body order, by the header's name for each (empty ones left out)."""
    found = {
        "full": setup.full_weights.astype("<u2"),
        "tiles": setup.tile_weights.astype("<u2"),
        "rollout": setup.rollout.astype("<u2"),
        "norms": np.zeros(0, "<f4") if setup.norms is None else setup.norms.astype("<f4"),
        "qk": np.zeros(0, "<f2") if setup.qk is None else setup.qk.astype("<f2"),
    }
    return {name: array for name, array in found.items() if array.size}


def _header(setup: Setup, offsets: dict[str, int]) -> dict:
    """A setup's header entry; `offsets`: each chunk's byte offset in the body (_chunks)."""
    entry = {
        "name": setup.name,
        "tokens": list(setup.tokens),
        "layers": len(setup.layer_labels),
        "heads": setup.heads,
        "n": len(setup.tokens),
        "layer_labels": list(setup.layer_labels),
        "full": [list(pair) for pair in setup.full],
        "full_offset": offsets["full"],
        "tiles": None,
        "rollout": None,
        "norms": None,
        "windows": list(setup.windows) or [0] * len(setup.layer_labels),
    }
    if setup.tile_starts:
        entry["tiles"] = {"starts": list(setup.tile_starts), "offset": offsets["tiles"]}
    if setup.rollout_layers:
        entry["rollout"] = {"layers": list(setup.rollout_layers), "offset": offsets["rollout"]}
    if setup.norms is not None:
        entry["norms"] = {"offset": offsets["norms"]}  # [len(full), n] float32, body order
    if setup.qk is not None:  # [len(heads), 2, n, dk] float16, body order
        heads = [list(pair) for pair in setup.qk_heads]
        entry["qk"] = {"offset": offsets["qk"], "dk": setup.qk.shape[-1], "heads": heads}
    return entry


def start_at(
    layer: int = 0,
    head: int = 0,
    mode: str = "lines",
    query: int | None = None,
    key: int | None = None,
) -> dict:
    """Where an explorer opens, as the header's "start": `layer`, `head` (numbered from 0) in
    `mode` (one of MODES), with the token `query` pinned if given (and, in the neuron view, the
    token `key`; none: the query's largest weight)."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of the explorer's views {MODES}")
    start = {"layer": int(layer), "head": int(head), "mode": mode}
    if query is not None:
        start["query"] = int(query)
    if key is not None:
        start["key"] = int(key)
    return start


def _join(header: dict, body: bytes) -> bytes:
    text = json.dumps(header, ensure_ascii=False).encode("utf-8")
    start = len(MAGIC) + 4 + len(text)
    padding = b" " * (-start % 8)  # the body starts 8-aligned: a Uint16Array can view it
    return b"".join([MAGIC, len(text + padding).to_bytes(4, "little"), text, padding, body])


def _with_header(payload: bytes, change: Callable[[dict], None]) -> bytes:
    """The payload with its header changed in place by `change`; the body's bytes unchanged."""
    header = decode_header(payload)
    change(header)
    body = payload[8 + int.from_bytes(payload[4:8], "little") :]
    return _join(header, body)


def with_start(payload: bytes, start: dict | None) -> bytes:
    """The payload opening at `start` (start_at's dict; None: where the host says, else the first
    head in lines); the weights' bytes are unchanged."""

    def change(header: dict) -> None:
        header.pop("start", None)
        if start is not None:
            header["start"] = start_at(**start)

    return _with_header(payload, change)


def with_large_text(payload: bytes, large: bool = True) -> bytes:
    """The payload drawn with large text (presenter mode: every label at least 16 px)."""
    return _with_header(payload, lambda header: header.update(large_text=bool(large)))


def with_words(payload: bytes, lang: str, words: dict | None, direction: str = "ltr") -> bytes:
    """The payload drawn in language `lang` (a BCP 47 tag: "es", "ar") with `words`, the
    browser's messages in it ({English: translation, or for a plural message {CLDR category:
    form}}, app.i18n.browser), written in `direction` ("rtl": right to left, as app.i18n.direction
    says); English (no words) leaves the header without any of them, as before."""
    spoken = ("lang", "words", "direction")

    def change(header: dict) -> None:
        for name in spoken:
            header.pop(name, None)
        if words or lang != "en":
            header.update(lang=lang, words=dict(words or {}), direction=direction)

    if not words and lang == "en" and not set(spoken) & decode_header(payload).keys():
        return payload  # English as it was: the same bytes, no copy
    return _with_header(payload, change)


def encode(setups: Sequence[Setup], *, stretch: bool = False) -> bytes:
    """The payload's bytes: the header then every setup's uint16 weights (see the module doc).
    `stretch`: colours end at the largest weight drawn rather than at 1 (random weights spread
    attention almost evenly; stretching shows its structure)."""
    if not setups:
        raise ValueError("a payload needs at least one setup")
    entries, chunks, offset = [], [], 0
    for setup in setups:
        offsets = {}
        for name, array in _chunks(setup).items():
            offsets[name] = offset
            data = np.ascontiguousarray(array).tobytes()
            data += b"\0" * (-len(data) % 8)  # every chunk starts 8-aligned
            chunks.append(data)
            offset += len(data)
        entries.append(_header(setup, offsets | {"full": offsets.get("full", offset)}))
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


def decode_readings(
    payload: bytes, setup: int = 0
) -> tuple[dict[tuple[int, int], np.ndarray], dict[int, np.ndarray]]:
    """The two more readings a payload's setup holds, as the browser computes them (for tests and
    tools): norm-weighted attention {(layer, head): [n, n]} of each full head (its weights times
    its keys' value norms), and the rollout {layer: [n, n]} after each stored layer."""
    header = decode_header(payload)
    entry, full, _ = decode_setup(payload, setup)
    body = 8 + int.from_bytes(payload[4:8], "little")
    n = entry["n"]
    moved = {}
    if entry["norms"]:
        offset = body + entry["norms"]["offset"]
        norms = np.frombuffer(payload, "<f4", len(entry["full"]) * n, offset).reshape(-1, n)
        moved = {pair: full[pair] * norms[i][None, :] for i, pair in enumerate(full)}
    rolled = {}
    if entry["rollout"]:
        layers = entry["rollout"]["layers"]
        offset = body + entry["rollout"]["offset"]
        words = np.frombuffer(payload, "<u2", len(layers) * n * n, offset)
        for i, layer in enumerate(layers):
            rolled[layer] = words[i * n * n : (i + 1) * n * n].reshape(n, n) / header["scale"]
    return moved, rolled


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
