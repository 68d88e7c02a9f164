"""The Training view's own defaults learn their task, and a run that does not learn says so from
its curve while it trains (encoder.train.stall), in the page's words."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.sources import pretrained_config
from app.views.training.plan import plan
from app.views.training.results import stall_said
from encoder.train.config import TrainConfig, trainable
from encoder.train.stall import FLAT_STEPS, LEARNED_ACCURACY, SMOOTHING, stalled
from encoder.train.trainer import Trainer
from tests.app.helpers import assert_no_exception, open_page, train_to_the_end

SOURCES = [({}, "random"), ({"source": "pretrained"}, "pretrained")]
MAX_CHUNKS = 2000


def default_plan(source: str) -> TrainConfig:
    """What the view's Train trains, opened on `source` with every control at its default."""
    architecture = pretrained_config() if source == "pretrained" else random_config(DEFAULTS)
    planned = plan(TrainConfig(model=trainable(architecture)), architecture, 1, 1.0).cfg
    assert planned is not None
    return planned


def flat_since(losses: list[float]) -> int:
    """The reference: the step at which the first 10-step mean within 10 % of the lowest ends."""
    means = [sum(losses[i - SMOOTHING : i]) / SMOOTHING for i in range(SMOOTHING, len(losses) + 1)]
    return SMOOTHING + next(i for i, m in enumerate(means) if m <= min(means) / 0.9)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize(  # MiniLM's shrunk copy: a second training, in the slow lane
    ("query", "source"), [SOURCES[0], pytest.param(*SOURCES[1], marks=pytest.mark.slow)]
)
def test_the_default_train_learns_its_task_in_a_tenth_of_its_steps(query, source) -> None:
    """The architecture and settings the view's Train trains by default (MiniLM's shrunk to a
    4-layer copy on `pretrained`), in a tenth of the default steps: it reaches the accuracy a run
    must reach to have learned, and its curve is never said not to learn."""
    cfg = default_plan(source)
    assert cfg.steps == TrainConfig().steps == 600
    short = replace(cfg, steps=cfg.steps // 10)
    trainer = Trainer(short)
    trainer.run()
    result = trainer.result()
    assert result.held_out_accuracy >= LEARNED_ACCURACY, result.summary()
    assert all(stalled(short, result.history[:step]) is None for step in range(1, 61))


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("query", "source"), SOURCES)
def test_the_default_train_learns_its_task_as_the_page_runs_it(query, source) -> None:
    """Opened on a default source, every control as it is, press Train and let it end: the
    trained model reaches the target on held-out sequences, and no warning says it did not
    learn."""
    at = open_page(view="Training", **query)
    assert_no_exception(at)
    at.button(key="train_start").click().run()
    train_to_the_end(at, MAX_CHUNKS)
    result = at.session_state["_training_lab"].job.results[
        "post-norm" if source == "pretrained" else "pre-norm"
    ]
    assert result.config == default_plan(source)
    assert result.held_out_accuracy >= LEARNED_ACCURACY, result.summary()
    assert result.held_out_sequence_accuracy >= LEARNED_ACCURACY / 2, result.summary()
    said = [w.value for w in at.warning]  # (a memory warning may stand for another button)
    assert not [s for s in said if "not learning" in s], said


def test_before_training_the_view_says_what_train_will_do() -> None:
    at = open_page(view="Training")
    assert_no_exception(at)
    cfg = default_plan("random")
    said = [i.value for i in at.info]
    assert (
        f"Press **Train** to train on the {cfg.task} task, {cfg.steps} steps: the curves are "
        "drawn here as it trains." in said
    )
    assert not [s for s in said if "Choose a task" in s]  # a task is chosen already


def test_a_run_that_does_not_learn_says_so_as_soon_as_its_curve_shows_it() -> None:
    """A learning rate too small to move the weights: from the chunk in which the loss has been
    flat for FLAT_STEPS steps the page says so, with the step it has been flat since (computed
    here from the curve) and the reverse task's chance, 1 in 10; before, it says nothing."""
    at = open_page(view="Training", d_model="32", num_heads="4", num_layers="1", d_ff="64")
    at.number_input(key="train_steps").set_value(SMOOTHING + FLAT_STEPS + 30).run()
    at.select_slider(key="train_lr").set_value(1e-4).run()
    at.button(key="train_start").click().run()
    said_at = {}  # step -> the warnings drawn with it
    for _ in range(MAX_CHUNKS):
        (trainer,) = at.session_state["_training_lab"].job.trainers.values()
        said_at[trainer.step] = [w.value for w in at.warning]
        if not at.session_state["_training_lab"].job.running:
            break
        at.run()
    assert_no_exception(at)
    losses = [row["loss"] for row in trainer.history]
    since = flat_since(losses)
    assert since == SMOOTHING  # flat from the first mean on
    for step, warnings in said_at.items():
        assert bool(warnings) == (step >= since + FLAT_STEPS), (step, warnings)
    (warning,) = at.warning
    stall = stalled(trainer.cfg, trainer.history)
    assert warning.value == stall_said(stall)
    assert f"since step {since}" in warning.value
    assert "is about what guessing without reading the input scores on the reverse task (0.1)" in (
        warning.value
    )
    assert "Try a larger learning rate: 0.0003 instead of 0.0001." in warning.value
    assert "warmup" not in warning.value  # a warmup would only make its steps smaller still
