"""The table of architecture options: key values <-> config, link parsing with errors that name
the value, the sentences that name a setup, and a command-line flag for every option."""

from __future__ import annotations

import dataclasses
import re

import pytest

from encoder import EncoderConfig
from encoder.cli import build_parser
from encoder.cli.model import random_config
from encoder.core.options import (
    ARCHITECTURE_FIELDS,
    BY_KEY,
    OPTIONS,
    config_values,
    key_values,
)

BERT_SHAPE = EncoderConfig(
    d_model=768, num_heads=12, num_layers=12, d_ff=3072, activation="relu", norm_first=False,
    positional="learned", norm_type="rmsnorm", seed=7,
)  # fmt: skip


def test_every_option_is_one_config_field_with_its_own_key_and_flag() -> None:
    fields = {f.name for f in dataclasses.fields(EncoderConfig)}
    assert {option.field for option in OPTIONS} <= fields
    for attribute in ("field", "key", "flag"):
        values = [getattr(option, attribute) for option in OPTIONS]
        assert len(set(values)) == len(values), attribute
    assert "seed" not in ARCHITECTURE_FIELDS and "norm_first" in ARCHITECTURE_FIELDS


def test_key_values_and_config_values_are_inverse() -> None:
    values = key_values(BERT_SHAPE)
    assert values["norm"] == "post" and values["num_heads"] == 12
    rebuilt = EncoderConfig(**config_values(values))
    assert all(getattr(rebuilt, o.field) == getattr(BERT_SHAPE, o.field) for o in OPTIONS)


def test_a_setup_in_a_sentence() -> None:
    said = ", ".join(BY_KEY[key].say(value) for key, value in key_values(BERT_SHAPE).items())
    assert said == (
        "post-norm, d_model 768, 12 heads, 12 layers, d_ff 3072, ReLU, RMSNorm, "
        "learned positions, RoPE base 10000, linear biases on, norm biases on, window 0, "
        "global every 0 layers, embedding size 0, separate weights per layer, seed 7"
    )
    assert [BY_KEY["norm"].label_of(p) for p in ("pre", "post")] == [
        "Pre-norm: x + f(LN(x))",
        "Post-norm: LN(x + f(x))",
    ]


@pytest.mark.parametrize(
    ("key", "raw", "expected"),
    [
        ("norm", "post", "post"),
        ("d_model", "512", 512),
        ("seed", "0", 0),
        ("norm_type", "rmsnorm", "rmsnorm"),
    ],
)
def test_a_link_value_is_parsed(key: str, raw: str, expected: object) -> None:
    assert BY_KEY[key].parse(raw) == expected


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        ("norm", "sandwich", "norm='sandwich' is not one of pre, post"),
        ("activation", "ReLU", "activation='ReLU' is not one of relu, gelu"),
        ("d_model", "wide", "d_model='wide' is not a whole number"),
        ("num_layers", "99", "num_layers=99 is outside 1..24"),
        ("seed", "-1", "seed=-1 is outside 0..2147483647"),
    ],
)
def test_a_bad_link_value_is_named(key: str, raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        BY_KEY[key].parse(raw)


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.named and o.holds_config_value])
def test_the_config_accepts_every_choice_and_names_any_other(option) -> None:
    for choice in option.choices:
        assert getattr(EncoderConfig(**{option.field: choice}), option.field) == choice
    with pytest.raises(ValueError, match=re.escape(f"{option.field}='nope' must be one of")):
        EncoderConfig(**{option.field: "nope"})


@pytest.mark.parametrize("command", ["trace", "profile"])
def test_every_option_has_its_flag_and_the_flags_build_the_config(command: str) -> None:
    argv = [command, "text"]
    for key, value in key_values(BERT_SHAPE).items():
        argv += [BY_KEY[key].flag, str(value)]
    args = build_parser().parse_args(argv)
    assert random_config(args, BERT_SHAPE.vocab_size) == BERT_SHAPE


def test_a_flag_outside_its_choices_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["trace", "text", "--norm-type", "batchnorm"])
    assert "invalid choice: 'batchnorm'" in capsys.readouterr().err
