"""Training jobs: chunks that add up to one uninterrupted run, stop, and the pre-vs-post matrix."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest
import torch

from encoder.core.config import EncoderConfig
from encoder.tasks.classifier import TokenClassifier
from encoder.tasks.tasks import get_task
from encoder.train.config import TRAIN_MODEL, TrainConfig, trainable
from encoder.train.findings import placement_findings
from encoder.train.jobs import (
    DROPOUT_PLACEMENTS,
    comparison_configs,
    comparison_job,
    comparison_warmup,
    placement_configs,
    placement_job,
    run_name,
    single_job,
)
from encoder.train.trainer import train

SMALL = dict(
    model=replace(TRAIN_MODEL, num_layers=1, d_model=32, num_heads=2, d_ff=64),
    batch_size=32,
    held_out_examples=50,
)


pytestmark = pytest.mark.usefixtures("one_thread")


def differences(a: TrainConfig, b: TrainConfig) -> dict[str, tuple]:
    """field -> (a's value, b's value) for every field where the two configs differ."""
    first, second = ({**asdict(c), **asdict(c.model)} for c in (a, b))
    del first["model"], second["model"]
    return {name: (first[name], second[name]) for name in first if first[name] != second[name]}


def test_run_names_follow_the_norm_placement() -> None:
    assert run_name(TrainConfig().with_model(norm_first=True)) == "pre-norm"
    assert run_name(TrainConfig().with_model(norm_first=False)) == "post-norm"
    assert list(single_job(TrainConfig(**SMALL).with_model(norm_first=False)).trainers) == [
        "post-norm"
    ]


def test_a_job_trained_in_chunks_equals_one_uninterrupted_run() -> None:
    cfg = TrainConfig(task="shift", steps=7, **SMALL)
    job = single_job(cfg)
    chunks = 0
    while job.running:
        job.advance(0)  # the smallest chunk: one step per run
        chunks += 1
        assert job.steps_done == chunks
    assert chunks == 7 and job.steps_done == 7 and job.total_steps == 7
    (result,) = job.results.values()
    assert result.history == train(cfg).history  # same steps, same numbers
    assert not result.stopped and job.seconds > 0


def test_advance_trains_every_run_in_lockstep_and_collects_results_at_the_end() -> None:
    job = comparison_job(TrainConfig(task="sort", steps=4, **SMALL))
    job.advance(0)
    assert [t.step for t in job.trainers.values()] == [1, 1, 1, 1]
    assert job.results == {}  # nothing finished yet
    job.advance(60)  # far longer than the 3 remaining rounds take
    assert not job.running and [t.step for t in job.trainers.values()] == [4, 4, 4, 4]
    assert list(job.results) == list(job.trainers)
    assert all(len(r.history) == 4 and not r.stopped for r in job.results.values())


def test_stop_ends_every_run_and_keeps_what_was_trained() -> None:
    job = comparison_job(TrainConfig(task="reverse", steps=500, **SMALL))
    job.advance(0)
    job.advance(0)
    job.stop()
    assert not job.running
    assert [len(r.history) for r in job.results.values()] == [2, 2, 2, 2]
    assert all(r.stopped for r in job.results.values())
    results = job.results
    job.advance(1)  # a stopped job trains no further
    assert job.results is results and job.steps_done == 8


@pytest.mark.parametrize(("warmup", "expected"), [(0, 10), (7, 7)])
def test_comparison_has_four_configs_that_differ_only_in_placement_and_warmup(
    warmup: int, expected: int
) -> None:
    cfg = TrainConfig(task="sort", steps=40, warmup_steps=warmup, lr=1e-2, seed=5, **SMALL)
    assert comparison_warmup(cfg) == expected  # a quarter of 40 steps when cfg has none
    runs = comparison_configs(cfg)
    assert list(runs) == [
        "pre-norm",
        f"pre-norm + warmup {expected}",
        "post-norm",
        f"post-norm + warmup {expected}",
    ]
    wanted = {
        "pre-norm": (True, 0),
        f"pre-norm + warmup {expected}": (True, expected),
        "post-norm": (False, 0),
        f"post-norm + warmup {expected}": (False, expected),
    }
    for name, run in runs.items():
        norm_first, warmup_steps = wanted[name]
        assert (run.model.norm_first, run.warmup_steps) == (norm_first, warmup_steps)
        assert set(differences(cfg, run)) <= {"norm_first", "warmup_steps"}, name


def block_gradient_norms_by_hand(cfg: TrainConfig) -> list[float]:
    """Each block's gradient norm for cfg's untrained classifier on cfg's first training batch,
    computed here from the model's own parameters."""
    task = get_task(cfg.task)
    inputs, targets = task.sample(
        cfg.batch_size, cfg.seq_len, cfg.vocab, torch.Generator().manual_seed(cfg.seed)
    )
    model = TokenClassifier(cfg.model, cfg.num_classes).train()
    logits = model(inputs)  # [B, T, classes]
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
    return [
        torch.cat([p.grad.flatten() for p in block.parameters()]).norm().item()
        for block in model.encoder.layers
    ]


def test_comparison_job_draws_warmup_runs_dashed_and_measures_init_gradients() -> None:
    cfg = TrainConfig(task="sort", steps=8, **SMALL).with_model(num_layers=2)
    job = comparison_job(cfg)
    placement = {
        name: (t.cfg.model.norm_first, t.cfg.warmup_steps) for name, t in job.trainers.items()
    }
    assert placement == {
        "pre-norm": (True, 0),
        "pre-norm + warmup 2": (True, 2),
        "post-norm": (False, 0),
        "post-norm + warmup 2": (False, 2),
    }
    assert job.dashed == ("pre-norm + warmup 2", "post-norm + warmup 2")
    assert list(job.init_grad_norms) == ["pre-norm", "post-norm"]
    for name, norm_first in (("pre-norm", True), ("post-norm", False)):
        expected = block_gradient_norms_by_hand(cfg.with_model(norm_first=norm_first))
        assert job.init_grad_norms[name] == pytest.approx(expected, rel=1e-5)
    assert job.init_grad_norms["pre-norm"] != pytest.approx(job.init_grad_norms["post-norm"])
    first = [t.held_out_inputs for t in job.trainers.values()]
    assert all((inputs == first[0]).all() for inputs in first)  # one seed: the same data


def test_placement_runs_differ_only_in_where_dropout_sits() -> None:
    cfg = TrainConfig(task="sort", steps=3, **SMALL)
    runs = placement_configs(cfg, 0.25)
    assert list(runs) == list(DROPOUT_PLACEMENTS)
    rates = {name: run.model.dropout_rates() for name, run in runs.items()}
    assert rates == {
        "no dropout": {"attention": 0.0, "residual": 0.0, "ffn": 0.0},
        "attention weights": {"attention": 0.25, "residual": 0.0, "ffn": 0.0},
        "sublayer outputs": {"attention": 0.0, "residual": 0.25, "ffn": 0.0},
        "feed-forward hidden": {"attention": 0.0, "residual": 0.0, "ffn": 0.25},
        "all (torch's places)": {"attention": 0.25, "residual": 0.25, "ffn": 0.25},
    }
    assert [run.model.dropout for run in runs.values()] == [
        0.0,
        0.0,
        0.0,
        0.0,
        0.25,
    ]  # + embeddings
    dropout_fields = {"dropout", "attention_dropout", "residual_dropout", "ffn_dropout"}
    for run in runs.values():
        assert set(differences(cfg, run)) <= dropout_fields


def test_placement_job_trains_each_placement_on_the_same_data_and_says_what_it_showed() -> None:
    job = placement_job(TrainConfig(task="sort", steps=3, **SMALL), rate=0.5)
    assert job.dropout_rate == 0.5
    while job.running:
        job.advance(5)
    results = job.results
    batches = [t.held_out_inputs for t in job.trainers.values()]
    assert all((b == batches[0]).all() for b in batches)
    first_losses = {name: r.history[0]["loss"] for name, r in results.items()}
    assert len(set(first_losses.values())) == len(first_losses)  # dropout changes every step 1
    sentence = placement_findings(results)
    loss = {name: r.final_loss for name, r in results.items()}
    highest = max(loss, key=loss.get)
    assert sentence.startswith("In this run of 3 steps, ")
    assert f"highest with {highest} ({loss[highest]:.3f})" in sentence
    best = max(r.held_out_accuracy for r in results.values())
    assert f"{best:.3f}" in sentence


def test_placement_findings_say_when_every_placement_ties() -> None:
    job = placement_job(TrainConfig(task="sort", steps=1, **SMALL), rate=0.1)
    job.advance(5)
    tied = {name: replace(r, held_out_accuracy=1.0) for name, r in job.results.items()}
    assert "every placement reached 1.000 held-out accuracy" in placement_findings(tied)
    tied["attention weights"] = replace(tied["attention weights"], held_out_accuracy=0.5)
    sentence = placement_findings(tied)
    assert "no dropout and sublayer outputs and feed-forward hidden and all (torch's places) " in (
        sentence
    )
    assert "(attention weights 0.500)" in sentence


def test_a_trainable_architecture_carries_its_dropout_unless_changed() -> None:
    architecture = EncoderConfig(d_model=32, num_heads=2, d_ff=64, dropout=0.1, ffn_dropout=0.3)
    cfg = TrainConfig(model=trainable(architecture))
    assert cfg.model.dropout_rates() == {"attention": 0.1, "residual": 0.1, "ffn": 0.3}
    changed = cfg.with_model(dropout=0.0, attention_dropout=0.2)
    assert changed.model.dropout_rates() == {
        "attention": 0.2,
        "residual": 0.0,
        "ffn": 0.3,
    }
