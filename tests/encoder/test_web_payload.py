"""The attention explorer's payload: what the browser reads back equals the model's weights."""

from __future__ import annotations

import numpy as np
import pytest

from encoder import EncoderConfig
from encoder.web.hosts import EXPLORER, joined
from encoder.web.payload import (
    build_setup,
    decode_header,
    decode_setup,
    encode,
    layer_windows,
    payload,
    with_start,
)
from tests.encoder.helpers import softmax_attention


def read_back(data: bytes, setup: int = 0) -> tuple[dict, dict, np.ndarray | None]:
    """What the browser reads (the body starts 8-aligned, so a Uint16Array can view it)."""
    assert (8 + int.from_bytes(data[4:8], "little")) % 8 == 0
    return decode_setup(data, setup)


def test_a_short_sentence_sends_every_head_in_full_within_the_readouts_precision() -> None:
    attention = softmax_attention(6, 12, 16)
    tokens = [f"t{i}" for i in range(16)]
    data = payload(attention, tokens)
    entry, full, tiles = read_back(data)
    assert (entry["layers"], entry["heads"], entry["n"], entry["tokens"]) == (6, 12, 16, tokens)
    assert tiles is None and len(full) == 72
    error = max(np.abs(full[l, h] - attention[l, h].numpy()).max() for l, h in full)  # noqa: E741
    assert error <= 1 / 131070 + 1e-7  # uint16 rounding, far inside the readout's 1e-3
    assert len(data) < 385_000 / 3  # a third of the Plotly page's bytes for 16 tokens


def test_a_long_sentence_sends_block_tiles_and_the_chosen_head_in_full() -> None:
    attention = softmax_attention(6, 12, 502)
    data = payload(attention, ["w"] * 502, chosen=[(2, 1)])
    assert len(data) <= 3_000_000
    entry, full, tiles = read_back(data)
    assert list(full) == [(2, 1)]
    assert np.abs(full[2, 1] - attention[2, 1].numpy()).max() <= 1 / 131070 + 1e-7
    starts = entry["tiles"]["starts"]
    assert starts == list(range(0, 502, 11))  # ceil(502 / 48) tokens a block
    # block (i, j): the mean over query block i of the weights summed over key block j
    edges = starts + [502]
    blocks = list(zip(edges[:-1], edges[1:], strict=True))
    weights = attention[4, 7].numpy()
    expected = np.array(
        [[weights[a:b, c:d].sum(axis=1).mean() for c, d in blocks] for a, b in blocks]
    )
    np.testing.assert_allclose(tiles[4, 7], expected, atol=1e-4)
    np.testing.assert_allclose(tiles.sum(axis=-1), 1, atol=1e-3)  # rows still sum to 1


def test_compare_carries_both_setups_in_one_payload() -> None:
    tokens = ["a", "b", "c"]
    a, b = softmax_attention(2, 2, 3, seed=1), softmax_attention(2, 2, 3, seed=2)
    data = encode([build_setup(a, tokens, name="A"), build_setup(b, tokens, name="B")])
    assert [s["name"] for s in decode_header(data)["setups"]] == ["A", "B"]
    _, full_b, _ = read_back(data, setup=1)
    assert np.abs(full_b[1, 1] - b[1, 1].numpy()).max() <= 1 / 131070 + 1e-7


def test_user_text_travels_as_data_and_the_header_is_utf8() -> None:
    tokens = ["<script>alert(1)</script>", "שלום", "😴"]
    data = payload(softmax_attention(1, 1, 3), tokens)
    assert decode_header(data)["setups"][0]["tokens"] == tokens
    assert "<script>" not in joined(EXPLORER)  # the explorer as its hosts load it


def test_bounds_24_layers_by_64_heads_fit_in_tiles() -> None:
    data = payload(softmax_attention(24, 64, 64), ["x"] * 64)
    entry, full, tiles = read_back(data)
    assert tiles.shape[:2] == (24, 64) and list(full) == [(0, 0)]
    assert len(data) < 1_000_000


@pytest.mark.parametrize(
    ("attention", "tokens", "message"),
    [
        (np.full((2, 3, 4, 4), 0.25), ["a"] * 5, r"shape \(2, 3, 4, 4\) holds 4 tokens, but 5"),
        (np.full((3, 4, 4), 0.25), ["a"] * 4, r"\[layers, heads, T, T\]; got \(3, 4, 4\)"),
        (
            np.full((1, 1, 513, 513), 1 / 513),
            ["a"] * 513,
            r"513 tokens is more than the explorer draws \(512\)",
        ),
        (np.full((25, 64, 2, 2), 0.5), ["a"] * 2, "25 layers x 64 heads is more"),
        (np.full((1, 1, 2, 2), 1.5), ["a"] * 2, r"lie in \[0, 1\]"),
    ],
)
def test_bad_attention_is_refused_with_a_message(attention, tokens, message) -> None:
    with pytest.raises(ValueError, match=message):
        payload(attention, tokens)


def test_nan_names_where_it_is() -> None:
    attention = softmax_attention(3, 2, 4)
    attention[2, 1, 3, 0] = float("nan")
    with pytest.raises(ValueError, match="layer 2, head 1 is not a number at query 3, key 0"):
        payload(attention, list("abcd"))


def test_a_chosen_head_outside_the_model_is_refused() -> None:
    with pytest.raises(ValueError, match="layer 6, head 0 is not in attention of 6 layers"):
        payload(softmax_attention(6, 12, 160), ["x"] * 160, chosen=[(6, 0)])


def test_a_start_in_the_header_leaves_the_weights_as_they_were() -> None:
    attention = softmax_attention(2, 3, 5, seed=4)
    plain = payload(attention, list("abcde"))
    start = {"layer": 1, "head": 2, "mode": "matrix", "query": 4}
    started = with_start(plain, start)
    assert decode_header(started)["start"] == start
    assert "start" not in decode_header(plain)
    for pair, weights in decode_setup(started)[1].items():
        np.testing.assert_array_equal(weights, decode_setup(plain)[1][pair])
    assert with_start(started, None) == plain  # one start at most; None takes it away
    with pytest.raises(ValueError, match="mode='sankey' is not one of the explorer's views"):
        with_start(plain, {"mode": "sankey"})


def test_each_layers_window_travels_in_the_header_from_the_config() -> None:
    cfg = EncoderConfig(d_model=32, num_heads=2, num_layers=5, d_ff=64, attention_window=8,
                        global_every=3)  # fmt: skip
    windows = layer_windows(cfg)
    assert windows == [0, 8, 8, 0, 8]  # layers 0 and 3 global, as global_every=3 says
    attention = softmax_attention(5, 2, 6)
    data = encode([build_setup(attention, list("abcdef"), windows=windows)])
    assert decode_header(data)["setups"][0]["windows"] == windows
    plain = encode([build_setup(attention, list("abcdef"))])  # no window: every layer global
    assert decode_header(plain)["setups"][0]["windows"] == [0] * 5
    with pytest.raises(ValueError, match="4 windows for attention of 5 layers"):
        build_setup(attention, list("abcdef"), windows=[0, 8, 8, 0])
    with pytest.raises(ValueError, match=r"window -2 must be a whole number >= 0"):
        build_setup(attention, list("abcdef"), windows=[0, -2, 8, 0, 8])


def read_qk(data: bytes, setup: int = 0) -> dict[tuple[int, int], np.ndarray]:
    """The heads' q and k a payload's setup holds ({(layer, head): [2, n, dk]}), read as the
    browser reads them: float16 from the body at the header's offset."""
    entry = decode_header(data)["setups"][setup]
    body = 8 + int.from_bytes(data[4:8], "little")
    n, dk, heads = entry["n"], entry["qk"]["dk"], entry["qk"]["heads"]
    offset = body + entry["qk"]["offset"]
    assert offset % 8 == 0
    values = np.frombuffer(data, "<f2", len(heads) * 2 * n * dk, offset).reshape(-1, 2, n, dk)
    return {(layer, head): values[i].astype(np.float64) for i, (layer, head) in enumerate(heads)}


def test_every_heads_q_and_k_travel_as_float16_while_they_fit(monkeypatch) -> None:
    from encoder.web import payload as module

    tokens = [f"t{i}" for i in range(16)]
    qk = np.random.default_rng(0).normal(0, 2, (6, 12, 2, 16, 32)).astype(np.float32)
    data = encode([build_setup(softmax_attention(6, 12, 16), tokens, qk=qk)])
    read = read_qk(data)
    assert sorted(read) == [(layer, head) for layer in range(6) for head in range(12)]
    for (layer, head), vectors in read.items():
        np.testing.assert_allclose(vectors, qk[layer, head], rtol=2**-11, atol=2**-24)
    grown = len(data) - len(encode([build_setup(softmax_attention(6, 12, 16), tokens)]))
    body = 6 * 12 * 2 * 16 * 32 * 2  # MiniLM's shape at 16 tokens: 147 kB, and the heads' list
    assert body < grown < body + 1_000
    monkeypatch.setattr(module, "QK_BYTES", 100_000)  # too many: the chosen head's alone
    data = encode([build_setup(softmax_attention(6, 12, 16), tokens, chosen=[(4, 7)], qk=qk)])
    assert list(read_qk(data)) == [(4, 7)]
    with pytest.raises(ValueError, match="q and k need the shape"):
        build_setup(softmax_attention(6, 12, 16), tokens, qk=qk[:, :, :, :15])
