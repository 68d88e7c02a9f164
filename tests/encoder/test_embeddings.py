"""The embedding output (trace.hidden_states[0]) against references written out in the test.

The sinusoidal table is compared with the closed form of "Attention Is All You Need", computed
entry by entry in tests/encoder/helpers.py; token and position embeddings with a lookup done by hand
from the model's own weights.
"""

from __future__ import annotations

import math

import pytest
import torch

from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from tests.encoder.helpers import padded_batch, sinusoidal_table

# float32 holds an angle near 511 rad to about 3e-5, so the longest positions differ by that much
SINUSOID_TOLERANCE = 1e-4
TOLERANCE = 1e-6  # float32 rounding, absolute and relative


def embedding_model(**overrides: object) -> TransformerEncoder:
    values = dict(vocab_size=100, d_model=24, num_heads=4, num_layers=1, d_ff=40, max_len=32)
    return TransformerEncoder(EncoderConfig(**{**values, **overrides})).eval()


def weight(model: TransformerEncoder, name: str) -> torch.Tensor:
    """A weight by its checkpoint key (the same tensor as the model's, not a copy)."""
    return model.state_dict()[name]


def embedding_output(model: TransformerEncoder, input_ids, mask) -> torch.Tensor:
    return model.trace(input_ids, mask).hidden_states[0].double()  # [B, T, d]


@pytest.mark.parametrize(("d_model", "max_len"), [(6, 40), (24, 32), (64, 512)])
def test_sinusoidal_positions_follow_the_closed_form(d_model: int, max_len: int) -> None:
    model = embedding_model(d_model=d_model, num_heads=2, max_len=max_len)
    with torch.no_grad():
        weight(model, "embed.token.weight").zero_()  # the output is then the position table alone
    input_ids, mask = padded_batch([max_len, 3], seed=1)
    actual = embedding_output(model, input_ids, mask)
    expected = sinusoidal_table(max_len, d_model)  # [T, d]
    for sentence in actual:  # padding has positions too: every row gets the table
        torch.testing.assert_close(sentence, expected, atol=SINUSOID_TOLERANCE, rtol=0)
    assert expected[1, :2].tolist() == [math.sin(1.0), math.cos(1.0)]  # i = 0: the angle is pos


@pytest.mark.parametrize("scale_embeddings", [True, False], ids=["scaled", "unscaled"])
def test_token_embeddings_are_scaled_by_sqrt_d_model(scale_embeddings: bool) -> None:
    d_model = 24
    model = embedding_model(scale_embeddings=scale_embeddings)
    input_ids, mask = padded_batch([9, 5], seed=2)
    actual = embedding_output(model, input_ids, mask)
    scale = math.sqrt(d_model) if scale_embeddings else 1.0
    tokens = weight(model, "embed.token.weight").double()  # [vocab, d]
    positions = sinusoidal_table(input_ids.shape[1], d_model)  # [T, d]
    for b, row in enumerate(input_ids.tolist()):
        for t, token_id in enumerate(row):
            expected = tokens[token_id] * scale + positions[t]
            torch.testing.assert_close(actual[b, t], expected, atol=TOLERANCE, rtol=TOLERANCE)


def test_learned_positions_add_the_row_of_each_position() -> None:
    model = embedding_model(positional="learned", scale_embeddings=False)
    with torch.no_grad():  # rows far apart, so a position off by one cannot pass
        position_weight = weight(model, "embed.position.weight")  # [max_len, d]
        position_weight.copy_(torch.arange(32.0)[:, None] + torch.linspace(0, 0.5, 24))
    input_ids, mask = padded_batch([7, 4], seed=3)
    actual = embedding_output(model, input_ids, mask)
    tokens = weight(model, "embed.token.weight").double()  # [vocab, d]
    for b, row in enumerate(input_ids.tolist()):
        for t, token_id in enumerate(row):
            expected = tokens[token_id] + position_weight[t].double()
            torch.testing.assert_close(actual[b, t], expected, atol=TOLERANCE, rtol=TOLERANCE)
