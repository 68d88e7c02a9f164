"""The race: BERT's architecture against ModernBERT's at one size, its parameter counts (from the
models themselves), what the local window masks (against an explicit count) and a short run's
sentence (against the runs' own numbers)."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from encoder import TransformerEncoder
from encoder.train.config import TrainConfig
from encoder.train.findings import race_findings, race_sizes, window_masked_pairs, window_sentence
from encoder.train.jobs import RACE_NAMES, race_configs, race_job
from encoder.train.presets import TRAINING_PRESETS

pytestmark = pytest.mark.usefixtures("one_thread")

RACE_PRESET = "BERT vs ModernBERT: 6 layers, sequences of 16"
TOLERANCE = 0.01  # the two encoders' parameter counts agree within 1% (race_configs)


def counted(cfg: TrainConfig) -> int:
    """The parameters of the encoder the run trains, counted on the model itself."""
    return sum(p.numel() for p in TransformerEncoder(cfg.model).parameters())


@pytest.mark.parametrize(
    "cfg",
    [TRAINING_PRESETS[RACE_PRESET], TrainConfig().with_model(num_layers=4, d_model=128, d_ff=512)],
)
def test_the_two_architectures_share_the_size_and_differ_in_each_choice(cfg: TrainConfig) -> None:
    runs = race_configs(cfg)
    assert tuple(runs) == RACE_NAMES
    bert, modern = runs.values()
    for run in (bert, modern):
        assert (run.task, run.seed, run.seq_len) == (cfg.task, cfg.seed, cfg.seq_len)
        assert (run.model.num_layers, run.model.d_model, run.model.num_heads) == (
            cfg.model.num_layers, cfg.model.d_model, cfg.model.num_heads,
        )  # fmt: skip
    bert, modern = bert.model, modern.model  # their encoders
    assert (bert.norm_first, bert.positional, bert.activation, bert.d_ff) == (
        False, "learned", "gelu", cfg.model.d_ff,
    )  # fmt: skip
    assert bert.linear_bias and bert.norm_bias and bert.attention_window == 0
    assert (modern.norm_first, modern.positional, modern.activation) == (True, "rope", "geglu")
    assert not modern.linear_bias and not modern.norm_bias
    assert modern.attention_window > 0 and modern.global_every == 3
    # GeGLU's linear1 is twice as wide, so the matched d_ff is about two thirds of BERT's
    assert modern.d_ff < bert.d_ff
    a, b = (counted(run) for run in runs.values())
    assert abs(b / a - 1) <= TOLERANCE
    # no other d_ff comes closer
    closest = min(
        range(modern.d_ff - 3, modern.d_ff + 4),
        key=lambda d_ff: abs(counted(runs["ModernBERT-style"].with_model(d_ff=d_ff)) - a),
    )
    assert closest == modern.d_ff
    sentence = race_sizes(runs)
    assert f"BERT-style has {a:,} encoder parameters (d_ff {bert.d_ff})" in sentence
    assert f"ModernBERT-style {b:,} with d_ff {modern.d_ff}" in sentence
    assert f"{abs(b / a - 1):.2%} {'more' if b > a else 'fewer'}" in sentence


@pytest.mark.parametrize(("seq_len", "window"), [(16, 8), (8, 8), (5, 8), (12, 4)])
def test_the_window_sentence_counts_the_masked_pairs(seq_len: int, window: int) -> None:
    modern = race_configs(TrainConfig(seq_len=seq_len).with_model(num_layers=6))["ModernBERT-style"]
    modern = modern.with_model(attention_window=window)
    masked = sum(
        abs(query - key) > window // 2 for query, key in itertools.product(range(seq_len), repeat=2)
    )
    assert window_masked_pairs(modern) == masked
    sentence = window_sentence(modern)
    if masked:
        assert f"masks {masked} of the {seq_len * seq_len} query-key pairs" in sentence
        assert "in layers 1, 2, 4 and 5; layers 0 and 3 stay global." in sentence
    else:
        assert f"At sequence length {seq_len}, the window of {window}" in sentence
        assert "masks nothing" in sentence


def test_a_short_race_trains_both_on_the_same_batches_and_says_who_got_where() -> None:
    cfg = TrainConfig(task="sort", seq_len=8).with_model(
        num_layers=3, d_model=32, num_heads=2, d_ff=64
    )
    cfg = replace(cfg, steps=6, batch_size=16, held_out_examples=50)
    job = race_job(cfg)
    assert set(job.init_grad_norms) == set(RACE_NAMES)
    assert all(len(norms) == 3 for norms in job.init_grad_norms.values())
    while job.running:
        job.advance(5.0)
    bert, modern = (job.results[name] for name in RACE_NAMES)
    held_out = [t.held_out_inputs for t in job.trainers.values()]
    assert (held_out[0] == held_out[1]).all()  # one seed: the same data
    assert len(bert.history) == len(modern.history) == 6
    assert len(modern.elapsed) == 6 and modern.elapsed == sorted(modern.elapsed)
    assert modern.elapsed[-1] == pytest.approx(modern.seconds)
    sentence = job.findings(job.results)
    assert sentence == race_findings(job.results)
    for name, result in job.results.items():
        assert (
            f"{name} reached a training loss of {result.final_loss:.3f} after 6 steps in "
            f"{result.seconds:.1f} s" in sentence
        )
    leader, other = sorted(job.results, key=lambda name: job.results[name].final_loss)
    assert f"{leader} ends lower." in sentence
    led = job.results[leader]
    first = next(row["step"] for row in led.history if row["loss"] <= job.results[other].final_loss)
    assert (
        f"{leader} first got down to {other}'s final loss at step {first}, after "
        f"{led.elapsed[first - 1]:.1f} s." in sentence
    )


@pytest.mark.parametrize(
    ("num_layers", "ending"),
    [
        (3, "in layers 1 and 2; layer 0 stays global."),
        (4, "in layers 1 and 2; layers 0 and 3 stay global."),
    ],
)
def test_the_window_sentence_says_one_global_layer_in_the_singular(num_layers, ending) -> None:
    modern = race_configs(TrainConfig(seq_len=16).with_model(num_layers=num_layers))[
        "ModernBERT-style"
    ]
    assert window_sentence(modern).endswith(ending)
