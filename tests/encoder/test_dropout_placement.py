"""Dropout placement: each place (attention weights, sublayer outputs before the residual add, the
feed-forward's hidden layer) has its own rate; each zeroes what it claims, read back through the
hooks in train mode with a fixed seed; at rate 0 every placement is the model without dropout."""

from __future__ import annotations

import json

import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.core import hooks
from encoder.core.config import DROPOUT_PLACES
from tests.encoder.helpers import padded_batch

# T = 6 tokens <= dk = 16 and d_ff = 16 <= d_model = 32, so the hooks determine what was dropped.
SMALL = dict(vocab_size=50, d_model=32, num_heads=2, num_layers=2, d_ff=16, seed=4)
RATE = 0.5


def traced(cfg: EncoderConfig, train: bool, seed: int = 7):
    model = TransformerEncoder(cfg).train(train)
    ids, mask = padded_batch([6, 4], vocab_size=50)
    torch.manual_seed(seed)
    return model, model.trace(ids, mask)


def dropped(kept: torch.Tensor, full: torch.Tensor, rate: float) -> torch.Tensor:
    """Where `kept` is 0 although `full` is not: what dropout at `rate` zeroed. Elsewhere kept
    must be full / (1 - rate): dropout scales what it keeps."""
    zero = kept.abs() < 1e-5
    torch.testing.assert_close(kept[~zero], full[~zero] / (1 - rate), atol=1e-4, rtol=1e-3)
    return zero & (full.abs() > 1e-5)


def attention_weights_used(trace, index: int) -> torch.Tensor:
    """The weights that multiplied V, solved from z = weights @ v: [B, H, T, T]."""
    a = hooks.block(index).attn
    return trace[a.z] @ torch.linalg.pinv(trace[a.v])


def hidden_used(model, trace, index: int) -> torch.Tensor:
    """The hidden layer linear2 read, solved from mlp.hook_out: [B, T, F]."""
    linear2 = model.layers[index].linear2
    return (trace[hooks.block(index).mlp.out] - linear2.bias) @ torch.linalg.pinv(linear2.weight.T)


def places_dropped(model, trace) -> dict[str, float]:
    """The share of numbers each place zeroed, over both blocks (0 where it left all)."""
    found = {place: [] for place in DROPOUT_PLACES}
    rate = model.cfg.dropout_rates()
    for index in range(model.cfg.num_layers):
        names = hooks.block(index)
        found["attention"].append(
            dropped(
                attention_weights_used(trace, index), trace[names.attn.pattern], rate["attention"]
            )
        )
        stream_in = trace.hidden_states[index]  # pre-norm: resid_mid = x + dropout1(attn out)
        mixed_in = trace[names.resid_mid] - stream_in
        found["residual"].append(dropped(mixed_in, trace[names.attn.out], rate["residual"]))
        hidden = hidden_used(model, trace, index)
        found["ffn"].append(dropped(hidden, trace[names.mlp.post], rate["ffn"]))
    return {place: torch.cat([z.flatten() for z in zs]).float().mean().item()
            for place, zs in found.items()}  # fmt: skip


def test_dropout_keeps_torchs_placement_and_each_place_takes_its_own_rate() -> None:
    assert EncoderConfig(dropout=0.1).dropout_rates() == dict.fromkeys(DROPOUT_PLACES, 0.1)
    cfg = EncoderConfig(dropout=0.1, attention_dropout=0.0, ffn_dropout=0.3)
    assert cfg.dropout_rates() == {"attention": 0.0, "residual": 0.1, "ffn": 0.3}
    block = TransformerEncoder(EncoderConfig(**SMALL, residual_dropout=0.2)).layers[0]
    rates = [block.self_attn.attn_dropout.p, block.dropout1.p, block.dropout2.p, block.dropout.p]
    assert rates == [0.0, 0.2, 0.2, 0.0]


@pytest.mark.parametrize("name", ["attention_dropout", "residual_dropout", "ffn_dropout"])
def test_a_rate_outside_0_1_is_refused_by_name(name: str) -> None:
    with pytest.raises(ValueError, match=f"{name}=1.0 must be in \\[0, 1\\)"):
        EncoderConfig(**{name: 1.0})
    with pytest.raises(ValueError, match=f"{name}='x' must be a number"):
        EncoderConfig(**{name: "x"})


@pytest.mark.parametrize("place", [*DROPOUT_PLACES, "all"])
def test_at_rate_zero_every_placement_is_the_model_without_dropout(place: str) -> None:
    rates = dict(dropout=0.0) if place == "all" else {f"{place}_dropout": 0.0}
    _, plain = traced(EncoderConfig(**SMALL), train=False)
    _, trained = traced(EncoderConfig(**SMALL, **rates), train=True)
    torch.testing.assert_close(trained.output, plain.output, rtol=0, atol=0)


@pytest.mark.parametrize("place", DROPOUT_PLACES)
def test_in_train_mode_each_placement_zeroes_what_it_claims(place: str) -> None:
    rates = {f"{p}_dropout": RATE if p == place else 0.0 for p in DROPOUT_PLACES}
    model, trace = traced(EncoderConfig(**SMALL, **rates), train=True)
    shares = places_dropped(model, trace)
    assert 0.3 < shares[place] < 0.7, shares  # about RATE of what it sees
    assert all(shares[other] == 0 for other in DROPOUT_PLACES if other != place), shares
    _, again = traced(EncoderConfig(**SMALL, **rates), train=True)  # fixed seed: same drops
    torch.testing.assert_close(again.output, trace.output, rtol=0, atol=0)


def test_torchs_placement_drops_in_every_place() -> None:
    model, trace = traced(EncoderConfig(**SMALL, dropout=RATE), train=True)
    shares = places_dropped(model, trace)
    assert all(0.3 < share < 0.7 for share in shares.values()), shares


def test_the_train_command_takes_each_placements_rate(capsys) -> None:
    from encoder.cli import main

    argv = ["train", "--steps", "3", "--threads", "1", "--ffn-dropout", "0.2", "--json"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "dropout attention 0, residual 0, ffn 0.2" in out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["dropout"] == {"attention": 0.0, "residual": 0.0, "ffn": 0.2}
    assert main(["train", "--steps", "3", "--attention-dropout", "1.5"]) == 2
    assert "attention_dropout=1.5 must be in [0, 1)" in capsys.readouterr().err
