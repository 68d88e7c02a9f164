"""EncoderConfig: each invalid value raises a ValueError whose message names it."""

from __future__ import annotations

import re

import pytest

from encoder.core.config import EncoderConfig
from encoder.core.options import NORM_PLACEMENTS, norm_first_of, placement_of

WHOLE_POSITIVE = ["vocab_size", "d_model", "num_heads", "num_layers", "d_ff", "max_len"]


def test_defaults_are_valid_and_head_dim_splits_d_model() -> None:
    cfg = EncoderConfig(d_model=96, num_heads=3)
    assert cfg.head_dim == 32
    assert cfg.to_dict()["num_heads"] == 3


@pytest.mark.parametrize("name", WHOLE_POSITIVE)
@pytest.mark.parametrize("value", [0, -3])
def test_sizes_must_be_at_least_one(name: str, value: int) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{name}={value} must be at least 1")):
        EncoderConfig(**{name: value})


@pytest.mark.parametrize("name", WHOLE_POSITIVE)
@pytest.mark.parametrize("value", [2.5, "4", True])
def test_sizes_must_be_whole_numbers(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{name}={value!r} must be a whole number")):
        EncoderConfig(**{name: value})


def test_heads_must_divide_d_model() -> None:
    with pytest.raises(ValueError, match=r"d_model=30 is not divisible by num_heads=4"):
        EncoderConfig(d_model=30, num_heads=4)


def test_sinusoidal_positions_need_even_d_model() -> None:
    with pytest.raises(ValueError, match=r"d_model=9 must be even for positional='sinusoidal'"):
        EncoderConfig(d_model=9, num_heads=3)
    assert EncoderConfig(d_model=9, num_heads=3, positional="learned").head_dim == 3
    message = r"embedding_size=7 must be even for positional='sinusoidal'"
    with pytest.raises(ValueError, match=message):  # the table is as wide as the embeddings
        EncoderConfig(embedding_size=7)
    assert EncoderConfig(d_model=9, num_heads=3, embedding_size=8).embedding_width == 8


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("activation", "tanh", "activation='tanh' must be one of ('relu', 'gelu', 'gelu_tanh',"),
        ("positional", "rotary", "positional='rotary' must be one of ('sinusoidal', 'learned',"),
        ("norm_type", "batchnorm", "norm_type='batchnorm' must be one of"),
        ("norm_first", 1, "norm_first=1 must be True (pre-norm) or False"),
        ("dropout", 1.0, "dropout=1.0 must be in [0, 1)"),
        ("dropout", -0.1, "dropout=-0.1 must be in [0, 1)"),
        ("layer_norm_eps", 0.0, "layer_norm_eps=0.0 must be positive"),
        ("layer_norm_eps", -1e-5, "layer_norm_eps=-1e-05 must be positive"),
        ("layer_norm_eps", float("inf"), "layer_norm_eps=inf must be positive and finite"),
        ("layer_norm_eps", "1e-5", "layer_norm_eps='1e-5' must be a number"),
        ("dropout", "0.1", "dropout='0.1' must be a number"),
        ("dropout", False, "dropout=False must be a number"),
        ("scale_embeddings", "false", "scale_embeddings='false' must be True or False"),
        ("embedding_norm", 0, "embedding_norm=0 must be True or False"),
        ("type_vocab_size", 1.5, "type_vocab_size=1.5 must be a whole number"),
        ("type_vocab_size", True, "type_vocab_size=True must be a whole number"),
        ("type_vocab_size", -1, "type_vocab_size=-1 must be 0 or more"),
        ("seed", -1, "seed=-1 must be a whole number >= 0"),
        ("seed", 0.5, "seed=0.5 must be a whole number >= 0"),
        ("seed", False, "seed=False must be a whole number >= 0"),
    ],
)
def test_invalid_choice_names_the_value(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        EncoderConfig(**{field: value})


def test_norm_placement_converts_to_norm_first_and_back() -> None:
    assert NORM_PLACEMENTS == ("pre", "post")
    assert [norm_first_of(p) for p in NORM_PLACEMENTS] == [True, False]
    assert [placement_of(f) for f in (True, False)] == ["pre", "post"]
    assert EncoderConfig(norm_first=norm_first_of("post")).norm_first is False


@pytest.mark.parametrize("placement", ["Pre", "pre-norm", "", "sandwich"])
def test_unknown_norm_placement_is_named(placement: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"norm placement {placement!r} must be one of")):
        norm_first_of(placement)


def test_only_block_0_of_a_pre_norm_model_can_go_without_its_attention_norm() -> None:
    modernbert = EncoderConfig(first_attention_norm=False)
    assert [modernbert.has_attention_norm(i) for i in range(3)] == [False, True, True]
    post_norm = EncoderConfig(norm_first=False, first_attention_norm=False)  # its ln1 is after
    assert post_norm.has_attention_norm(0)
    assert EncoderConfig().has_attention_norm(0)
