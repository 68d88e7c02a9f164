"""The Attention view's explorer sends every head's q and k only once its neuron view was opened
in the session (the `neuron` key its glue reports): before, its payload is the attention alone."""

from __future__ import annotations

import numpy as np

from encoder.inspect.neuron import qk_vectors
from encoder.web.payload import decode_header
from tests.app.helpers import assert_no_exception, open_page
from tests.shared import SENTENCE


def qk_of(data: bytes) -> np.ndarray:
    """[heads, 2, n, dk] the q and k a payload's first setup holds, in its heads' order."""
    entry = decode_header(data)["setups"][0]
    n, dk, heads = entry["n"], entry["qk"]["dk"], entry["qk"]["heads"]
    offset = 8 + int.from_bytes(data[4:8], "little") + entry["qk"]["offset"]
    return np.frombuffer(data, "<f2", len(heads) * 2 * n * dk, offset).reshape(-1, 2, n, dk)


def test_q_and_k_travel_once_the_neuron_view_asks(minilm) -> None:
    at = open_page(view="Attention", source="pretrained", text=SENTENCE)
    assert_no_exception(at)
    before = at.get("bidi_component")[0].proto.bytes
    assert "qk" not in decode_header(before)["setups"][0]  # the attention alone, as before
    at.session_state["neuron"] = True  # what the explorer's glue reports as the view opens
    at.run()
    assert_no_exception(at)
    after = at.get("bidi_component")[0].proto.bytes
    header = decode_header(after)["setups"][0]
    assert header["qk"]["heads"] == [[layer, head] for layer in range(6) for head in range(12)]
    expected = qk_vectors(minilm.trace_of(SENTENCE), 0, header["n"]).reshape(72, 2, -1, 32)
    np.testing.assert_allclose(qk_of(after), expected, rtol=2e-3, atol=2e-3)
    print(f"explorer payload: {len(before) / 1000:.0f} kB, with q and k {len(after) / 1000:.0f} kB")
