"""Training: the loss falls, stopping works, the held-out set is unseen, any architecture trains;
on a GPU, the CPU's steps."""

from __future__ import annotations

import math
from dataclasses import fields, replace

import pytest
import torch

from encoder.core.config import EncoderConfig
from encoder.core.options import ARCHITECTURE_FIELDS
from encoder.tasks.classifier import TokenClassifier
from encoder.tasks.tasks import get_task
from encoder.train.config import TRAIN_MODEL, TrainConfig, trainable
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import (
    Trainer,
    gradient_norms_at_init,
    learning_rate,
    sample_trace,
    sequence_keys,
    torch_threads,
    train,
)
from tests.encoder.helpers import DEVICES, needs_cuda

pytestmark = pytest.mark.usefixtures("one_thread")


SMALL = dict(
    model=replace(TRAIN_MODEL, num_layers=1, d_model=32, num_heads=2, d_ff=64),
    batch_size=64,
    held_out_examples=200,
)


def test_a_short_run_lowers_the_loss_and_records_every_metric() -> None:
    cfg = TrainConfig(task="shift", steps=40, lr=1e-2, **SMALL)
    result = train(cfg)
    losses = [row["loss"] for row in result.history]
    assert len(losses) == 40 and not result.stopped
    assert losses[0] > 0.9 * math.log(cfg.num_classes)  # starts near chance: ln(11)
    assert sum(losses[-5:]) / 5 < 0.8 * losses[0]
    row = result.history[-1]
    assert set(row) == {"step", "loss", "accuracy", "lr", "grad_norm", "grad_norm_layer_0"}
    assert row["step"] == 40 and 0 <= row["accuracy"] <= 1 and row["grad_norm_layer_0"] > 0
    assert 0 <= result.held_out_accuracy <= 1 and result.held_out_examples == 200
    assert isinstance(result.model, TokenClassifier) and not result.model.training


def test_same_config_trains_to_the_same_numbers() -> None:
    cfg = TrainConfig(task="sort", steps=5, **SMALL)
    assert train(cfg).history == train(cfg).history


def test_on_step_returning_true_stops_training() -> None:
    seen = []

    def stop_at_three(metrics) -> bool:
        seen.append(metrics.step)
        return metrics.step == 3

    result = train(TrainConfig(task="reverse", steps=500, **SMALL), stop_at_three)
    assert seen == [1, 2, 3]
    assert len(result.history) == 3 and result.stopped
    assert result.summary()["steps"] == 3 and result.summary()["stopped"] is True


def test_trainer_advances_in_chunks_and_resumes() -> None:
    trainer = Trainer(TrainConfig(task="shift", steps=6, **SMALL))
    trainer.run(max_seconds=0)  # at least one step, then returns
    assert trainer.step == 1 and not trainer.done
    trainer.run()
    assert trainer.step == 6 and trainer.done and not trainer.result().stopped


def test_held_out_sequences_seen_in_training_are_not_counted() -> None:
    # vocab 2, 3 tokens: only 8 sequences exist, so training soon draws every held-out one
    cfg = TrainConfig(task="reverse", seq_len=3, vocab=2, steps=3, **SMALL)
    trainer = Trainer(cfg)
    assert trainer.held_out_seen.sum() == 0
    trainer.run()
    accuracy, sequence_accuracy, counted = trainer.held_out_accuracy()
    assert counted == 0 and math.isnan(accuracy) and math.isnan(sequence_accuracy)


def test_held_out_stream_differs_from_the_training_stream() -> None:
    trainer = Trainer(TrainConfig(task="sort", **SMALL))
    first_batch, _ = trainer.task.sample(64, 8, 10, torch.Generator().manual_seed(0))
    assert not torch.equal(trainer.held_out_inputs[:64], first_batch)


def test_sequence_keys_tell_sequences_apart() -> None:
    every = torch.cartesian_prod(*[torch.arange(3)] * 4)  # all 81 sequences of 4 tokens < 3
    assert sequence_keys(every, 3).unique().numel() == 81


def test_torch_threads_sets_and_restores_the_thread_count() -> None:
    before = torch.get_num_threads()
    with torch_threads(2):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before


def test_learning_rate_warms_up_linearly_then_decays_to_zero() -> None:
    cfg = TrainConfig(lr=1e-2, warmup_steps=10, steps=110)
    assert learning_rate(cfg, 0) == pytest.approx(1e-3)
    assert learning_rate(cfg, 9) == pytest.approx(1e-2)
    assert learning_rate(cfg, 60) == pytest.approx(5e-3)
    assert learning_rate(cfg, 110) == pytest.approx(0, abs=1e-12)
    flat = TrainConfig(lr=1e-2, steps=110, decay=False)
    assert learning_rate(flat, 0) == learning_rate(flat, 109) == 1e-2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"task": "nope"}, "task='nope'"),
        ({"d_model": 30, "num_heads": 4}, "d_model=30.*num_heads=4"),
        ({"steps": 0}, "steps=0"),
        ({"lr": 0.0}, "lr=0.0"),
        ({"lr": float("nan")}, "lr=nan"),
        ({"grad_clip": -1.0}, "grad_clip=-1.0"),
        ({"num_layers": 2.5}, "num_layers=2.5"),
        ({"device": "cuda:9"}, "device='cuda:9'"),
        ({"activation": "tanh"}, "activation='tanh'"),
    ],
)
def test_invalid_configs_raise_naming_the_values(changes: dict, message: str) -> None:
    own = {f.name for f in fields(TrainConfig)}  # the others are its model's
    with pytest.raises(ValueError, match=message):
        cfg = TrainConfig(**{k: v for k, v in changes.items() if k in own})
        cfg.with_model(**{k: v for k, v in changes.items() if k not in own})


def test_every_preset_is_a_valid_config() -> None:
    assert TRAINING_PRESETS["pre vs post: deep, high lr"].model.num_layers == 6
    for preset in TRAINING_PRESETS.values():
        vocab = get_task(preset.task).vocab_size(preset.vocab)  # a word task's: its own
        assert (preset.model.vocab_size, preset.model.max_len) == (vocab, preset.seq_len)


def test_gradient_norms_at_init_give_one_positive_norm_per_layer() -> None:
    cfg = TrainConfig(task="sort", **SMALL).with_model(num_layers=3)
    pre = gradient_norms_at_init(cfg)
    post = gradient_norms_at_init(cfg.with_model(norm_first=False))
    assert len(pre) == len(post) == 3
    assert all(g > 0 for g in pre + post)
    assert pre == gradient_norms_at_init(cfg)  # deterministic
    assert pre != post


def test_sample_trace_runs_the_trained_model_on_one_sequence() -> None:
    cfg = TrainConfig(task="reverse", steps=2, **SMALL)
    result = train(cfg)
    sample = sample_trace(result.model, cfg, seed=3)
    assert sample.trace.attention.shape == (1, 1, 2, 8, 8)  # [layers, batch, heads, T, T]
    assert sample.targets == sample.inputs[::-1]
    assert len(sample.predictions) == 8 and sample.token_labels == [str(t) for t in sample.inputs]
    logits = result.model(torch.tensor([sample.inputs]))
    assert logits.argmax(-1)[0].tolist() == sample.predictions


def test_a_trainable_architecture_trains_on_the_tasks_vocabulary() -> None:
    sidebar = EncoderConfig(
        vocab_size=30522, d_model=48, num_heads=3, num_layers=2, d_ff=96, activation="gelu",
        norm_first=False, positional="sinusoidal", norm_type="rmsnorm", max_len=512, seed=9,
    )  # fmt: skip
    cfg = TrainConfig(model=trainable(sidebar), task="shift", seq_len=6, vocab=7, seed=2)
    built = cfg.model
    for name in ARCHITECTURE_FIELDS:
        assert getattr(built, name) == getattr(sidebar, name), name
    assert (built.vocab_size, built.max_len, built.seed) == (7, 6, 2)  # the task's, the setting's
    model = TokenClassifier(built, cfg.num_classes)
    assert model.head.out_features == 8  # shift: 7 tokens + "none"
    assert model(torch.zeros(1, 6, dtype=torch.long)).shape == (1, 6, 8)


def test_token_classifier_weights_follow_config_and_seed() -> None:
    cfg = TrainConfig(**SMALL).model
    first, second = TokenClassifier(cfg, 5), TokenClassifier(cfg, 5)
    second_state = second.state_dict()
    for name, tensor in first.state_dict().items():
        assert torch.equal(tensor, second_state[name]), name
    other = TokenClassifier(replace(cfg, seed=1), 5)
    assert not torch.equal(first.head.weight, other.head.weight)


def test_summary_gives_the_sequence_length_and_vocabulary() -> None:
    result = train(TrainConfig(task="sort", steps=1, seq_len=5, vocab=7, **SMALL))
    summary = result.summary()
    assert (summary["seq_len"], summary["vocab"], summary["norm"]) == (5, 7, "pre")


@pytest.mark.parametrize("device", DEVICES)
def test_checkpointed_blocks_train_to_the_same_losses(device: str) -> None:
    """Gradient checkpointing recomputes each block in backward: the same numbers, step by step
    (the RNG state is preserved, so the data stream and any dropout do not move)."""
    cfg = TrainConfig(
        task="sort", steps=6, batch_size=32, held_out_examples=50, device=device
    ).with_model(num_layers=2, d_model=32, num_heads=2, d_ff=64)
    torch.manual_seed(123)
    plain = train(cfg)
    rng_after_plain = torch.get_rng_state()
    torch.manual_seed(123)
    checkpointed = train(replace(cfg, checkpoint_blocks=True))
    assert torch.equal(torch.get_rng_state(), rng_after_plain)
    assert len(checkpointed.history) == len(plain.history) == 6
    for before, after in zip(plain.history, checkpointed.history, strict=True):
        assert after["loss"] == pytest.approx(before["loss"], abs=1e-6)
        assert after["grad_norm"] == pytest.approx(before["grad_norm"], rel=1e-5)


@needs_cuda
def test_training_on_cuda_takes_the_steps_it_takes_on_the_cpu() -> None:
    """The same weights and batches: the first step's loss and gradient norm (before any update)
    within float32 rounding, the later steps' losses close, the model left on the GPU."""
    cfg = TrainConfig(task="sort", steps=4, lr=1e-2, **SMALL)
    on_cpu, on_cuda = train(cfg), train(replace(cfg, device="cuda:0"))
    assert all(p.is_cuda for p in on_cuda.model.parameters())
    first_cpu, first_cuda = on_cpu.history[0], on_cuda.history[0]
    assert first_cuda["loss"] == pytest.approx(first_cpu["loss"], rel=1e-5)
    assert first_cuda["grad_norm"] == pytest.approx(first_cpu["grad_norm"], rel=1e-4)
    for cpu_row, cuda_row in zip(on_cpu.history, on_cuda.history, strict=True):
        assert cuda_row["loss"] == pytest.approx(cpu_row["loss"], rel=1e-3), cuda_row["step"]
    assert on_cuda.history[-1]["loss"] < on_cuda.history[0]["loss"]
    assert on_cuda.held_out_accuracy == pytest.approx(on_cpu.held_out_accuracy, abs=0.02)
    sample = sample_trace(on_cuda.model, replace(cfg, device="cuda:0"), seed=3)
    assert sample.trace.output.device.type == "cpu"  # moved for drawing
    logits = on_cuda.model(torch.tensor([sample.inputs], device="cuda:0"))
    assert logits.argmax(-1)[0].tolist() == sample.predictions


def test_checkpoint_blocks_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="checkpoint_blocks='yes' must be True or False"):
        TrainConfig(checkpoint_blocks="yes")
