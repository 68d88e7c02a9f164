"""The Training view through AppTest: the sidebar's architecture trained, stopped, compared.

In AppTest a run_every fragment does not fire by itself, so each `at.run()` trains one chunk
(about CHUNK_SECONDS) -- the same steps a browser's timer drives.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.lesson.steps import STEPS
from app.lesson.steps.training import RACE, RACE_PRESET, TINY_PRESET, TRAIN_ONE
from app.page.training import COMPARISON_RUNS, JOB_NAMES, JOB_RUNS, PLACEMENT_RUNS, RACE_RUNS
from app.settings import D_FF_CHOICES, D_MODEL_CHOICES
from app.sources import pretrained_config
from app.views.training.lab import MAX_STEPS
from app.views.training.plan import plan
from encoder import EncoderConfig
from encoder.tasks.classifier import TokenClassifier
from encoder.train.config import TrainConfig, trainable
from encoder.train.duration import (
    MAX_TRAINING_SECONDS,
    affordable_steps,
    duration_text,
    measured_scale,
    nearest_fitting,
    training_seconds,
)
from encoder.train.findings import placement_findings, race_findings, race_sizes, window_sentence
from encoder.train.jobs import DROPOUT_PLACEMENTS, RACE_NAMES, comparison_configs, race_configs
from encoder.train.presets import TRAINING_PRESETS
from tests.app.helpers import (
    architecture_said,
    assert_no_exception,
    assert_numbers_written_in,
    go,
    open_page,
    train_to_the_end,
)

MAX_CHUNKS = 60
TINY = {"d_model": "32", "num_heads": "4", "num_layers": "1", "d_ff": "64"}  # the sidebar's


@pytest.fixture
def at() -> AppTest:
    app = open_page(view="Training", **TINY)
    assert_no_exception(app)
    return app


def values(array) -> list:
    """A plotly JSON array: a plain list, or a typed array {"dtype": ..., "bdata": base64}."""
    if isinstance(array, dict):
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def chart_titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def kept_models(at: AppTest) -> dict:
    return at.session_state["_session_models"]


def test_train_uses_the_sidebars_architecture_and_keeps_the_model(at: AppTest) -> None:
    at.radio(key="activation").set_value("relu").run()
    at.number_input(key="train_steps").set_value(20).run()
    at.button(key="train_start").click().run()
    train_to_the_end(at, MAX_CHUNKS)
    job = at.session_state["_training_lab"].job
    result = job.results["pre-norm"]
    assert isinstance(result.model, TokenClassifier)
    assert len(result.history) == 20 and not result.stopped
    cfg = result.config
    model = cfg.model
    assert (model.num_layers, model.d_model, model.num_heads, model.d_ff) == (1, 32, 4, 64)
    assert (model.activation, model.positional, model.norm_type) == (
        "relu",
        "sinusoidal",
        "layernorm",
    )
    titles = chart_titles(at)
    assert titles[0] == "Training curves"
    curves = json.loads(at.get("plotly_chart")[0].proto.spec)
    loss, accuracy = curves["data"][:2]
    assert values(loss["x"]) == values(accuracy["x"]) == list(range(1, 21))
    assert values(loss["y"]) == [round(row["loss"], 5) for row in result.history]
    assert at.button(key="train_stop").disabled is True
    assert not at.error
    # the model is a model source now, and the next estimate uses this machine's measured speed
    (model,) = kept_models(at).values()
    assert model.encoder is result.model.encoder
    assert model.label in at.radio(key="source").options  # the sidebar offers it at once
    assert at.session_state["_training_lab"].scale == measured_scale(cfg, 20, job.seconds)
    assert any("scaled by this session's last training" in c.value for c in at.caption)


def test_stop_keeps_the_partly_trained_model(at: AppTest) -> None:
    at.number_input(key="train_steps").set_value(5000).run()
    at.button(key="train_start").click().run()
    assert at.session_state["_training_lab"].job.running
    assert at.button(key="train_stop").disabled is False
    at.button(key="train_stop").click().run()
    assert_no_exception(at)
    result = at.session_state["_training_lab"].job.results["pre-norm"]
    assert result.stopped and 1 <= len(result.history) < 5000
    assert "Training curves" in chart_titles(at)
    (model,) = kept_models(at).values()
    assert f"{len(result.history)} steps" in model.label


def test_pre_vs_post_trains_four_runs_and_each_opens_in_the_views(at: AppTest) -> None:
    at.slider(key="num_layers").set_value(2).run()
    at.number_input(key="train_steps").set_value(8).run()
    at.button(key="train_compare").click().run()
    train_to_the_end(at, MAX_CHUNKS)
    job = at.session_state["_training_lab"].job
    names = ["pre-norm", "pre-norm + warmup 2", "post-norm", "post-norm + warmup 2"]
    assert list(job.trainers) == names
    batches = [t.held_out_inputs for t in job.trainers.values()]
    assert all((b == batches[0]).all() for b in batches)  # same seed, same data
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    curves = specs[chart_titles(at).index("Training curves")]
    assert {trace["name"] for trace in curves["data"] if trace.get("name")} == set(names)
    init = specs[chart_titles(at).index("Gradient norm of each block at initialisation")]
    assert [trace["name"] for trace in init["data"]] == ["pre-norm", "post-norm"]
    for trace, name in zip(init["data"], ["pre-norm", "post-norm"], strict=True):
        expected = [round(g, 5) for g in job.init_grad_norms[name]]
        assert values(trace["y"]) == pytest.approx(expected)  # one bar per layer
    assert len(at.dataframe[0].value) == 4  # results table: one row per run
    assert_numbers_written_in(at, "en")  # each to the digits shown, as the run's numbers
    assert len(kept_models(at)) == 4
    for index, name in enumerate(names):
        at.button(key=f"train_open_{index}").click().run()
        assert_no_exception(at)
        model = kept_models(at)[at.session_state["source"]]
        assert model.encoder is job.results[name].model.encoder
        assert architecture_said(at).startswith(name.split("-")[0] + "-norm, ")
        assert ("warmup 2" in model.label) == ("warmup" in name)
        assert at.session_state["view"] == "Attention" and not at.error
        go(at, "Training")


def test_preset_fills_the_training_controls_and_the_sidebar(at: AppTest) -> None:
    name = "pre vs post: deep, high lr"
    at.selectbox(key="train_preset").set_value(name).run()
    assert_no_exception(at)
    preset = TRAINING_PRESETS[name]
    assert at.slider(key="num_layers").value == preset.model.num_layers == 6
    assert at.select_slider(key="d_ff").value == preset.model.d_ff
    assert at.select_slider(key="d_model").value == preset.model.d_model
    assert at.radio(key="positional").value == preset.model.positional
    assert at.select_slider(key="train_lr").value == 1e-2
    assert at.selectbox(key="train_task").value == "sort"
    assert at.number_input(key="train_steps").value == preset.steps


def test_a_session_keeps_its_last_eight_models_and_the_one_in_use() -> None:
    def keep_ten() -> None:
        import streamlit as st

        from app.controls import session_models
        from encoder.io.checkpoints import Checkpoint
        from encoder.io.task_model import TaskModel
        from encoder.tasks.classifier import TokenClassifier
        from encoder.tasks.task_tokenizer import task_tokenizer
        from encoder.train.config import TrainConfig

        cfg = TrainConfig().with_model(d_model=16, num_layers=1)
        model = TaskModel(TokenClassifier(cfg.model, 10), task_tokenizer(10), "reverse", 8)
        checkpoint = Checkpoint(model.encoder, model.tokenizer, model)
        nbytes = session_models.checkpoint_bytes(checkpoint)
        shelf = session_models.session_models()
        ids = []
        for _ in range(10):
            in_use = [ids[0] if ids else "random"]
            ids.append(
                shelf.add("trained", lambda _: "same", lambda: checkpoint, "m", nbytes, 0, in_use)
            )
        st.session_state["added"] = ids

    app = AppTest.from_function(keep_ten).run()
    assert not app.exception
    added = app.session_state["added"]
    kept = app.session_state["_session_models"]
    assert list(kept) == [added[0], *added[3:]]  # the oldest go first, but not the one in use
    labels = [m.label for m in kept.values()]
    assert labels[0] == "same" and len(set(labels)) == 8  # each label names one model


def test_long_histories_are_thinned_but_keep_the_last_step() -> None:
    from app.charts.training import MAX_POINTS, thin, training_curves

    history = [{"step": i + 1, "loss": 2.0 / (i + 1), "accuracy": 0.5} for i in range(1000)]
    frame = thin(history)
    assert len(frame) <= MAX_POINTS + 1 and frame["step"].iloc[-1] == 1000
    fig = training_curves({"run": history}, 1000, chance_loss=math.log(10))
    low, high = fig.layout.yaxis.range  # log10 of the loss axis ends
    assert 10**low < 2.0 / 1000 and 10**high > math.log(10)


def test_dropout_placement_trains_each_place_side_by_side_and_says_what_it_showed(
    at: AppTest,
) -> None:
    at.number_input(key="train_steps").set_value(4).run()
    at.select_slider(key="train_dropout_rate").set_value(0.5).run()
    at.button(key="train_placements").click().run()
    train_to_the_end(at, MAX_CHUNKS)
    job = at.session_state["_training_lab"].job
    names = list(DROPOUT_PLACEMENTS)
    assert list(job.trainers) == names and job.dropout_rate == 0.5
    rates = [t.cfg.model.dropout_rates() for t in job.trainers.values()]
    assert [r["attention"] for r in rates] == [0.0, 0.5, 0.0, 0.0, 0.5]
    assert [r["ffn"] for r in rates] == [0.0, 0.0, 0.0, 0.5, 0.5]
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    curves = specs[chart_titles(at).index("Training curves")]
    assert {trace["name"] for trace in curves["data"] if trace.get("name")} == set(names)
    bars = specs[chart_titles(at).index("Held-out accuracy with dropout 0.5 in each place")]
    assert values(bars["data"][0]["y"]) == pytest.approx(
        [round(job.results[name].held_out_accuracy, 4) for name in names]
    )
    assert [m.value for m in at.info] == [placement_findings(job.results)]
    assert "In this run of 4 steps" in at.info[0].value
    assert len(at.dataframe[0].value) == len(names)


BUTTONS = {
    1: "train_start",
    RACE_RUNS: "train_race",
    COMPARISON_RUNS: "train_compare",
    PLACEMENT_RUNS: "train_placements",
}


@pytest.mark.parametrize(
    ("query", "model"),
    [
        ({}, "this architecture"),  # the sidebar's default random architecture
        ({"source": "pretrained"}, "MiniLM's architecture"),
    ],
)
def test_opened_on_a_default_every_button_trains_the_nearest_architecture_that_fits(
    query: dict, model: str
) -> None:
    """Opened directly, on either default: each button is on, and trains the nearest
    architecture that fits the limit for its number of runs; one sentence says so, with the
    estimates; pressing Train starts that training."""
    at = open_page(view="Training", **query)
    assert_no_exception(at)
    architecture = pretrained_config() if query else random_config(DEFAULTS)
    cfg = TrainConfig(model=trainable(architecture))
    assert training_seconds(cfg) > MAX_TRAINING_SECONDS  # the defaults do not fit as they are
    fitting = {
        runs: nearest_fitting(
            architecture, cfg, runs, 1.0, MAX_TRAINING_SECONDS, D_MODEL_CHOICES, D_FF_CHOICES
        )
        for runs in JOB_RUNS
    }
    parts = []
    for runs, shrunk in fitting.items():
        seconds = training_seconds(cfg, runs, architecture=shrunk)
        assert seconds <= MAX_TRAINING_SECONDS
        parts.append(
            f"**{JOB_NAMES[runs]}**{'' if runs == 1 else f' ({runs} runs)'} trains a "
            f"{shrunk.num_layers}-layer, d_model {shrunk.d_model} copy ({shrunk.num_heads} heads, "
            f"d_ff {shrunk.d_ff}) in {duration_text(seconds)}"
        )
        assert at.button(key=BUTTONS[runs]).disabled is False
    assert at.info[0].value == (
        f"Training {model} once would take {duration_text(training_seconds(cfg))} here, and "
        f"training is limited to {MAX_TRAINING_SECONDS // 60} min on this server: "
        f"{'; '.join(parts)}."
    )
    assert not at.warning and not at.error
    said = [e.value for e in (*at.caption, *at.info, *at.markdown)]
    assert not [text for text in said if "ENCODER_EXPLORER" in text]  # the log's, not theirs
    at.button(key="train_start").click().run()
    assert_no_exception(at)
    job = at.session_state["_training_lab"].job
    assert job.running
    (trainer,) = job.trainers.values()
    trained = trainer.cfg.model
    shrunk = fitting[1]
    assert (trained.num_layers, trained.d_model, trained.num_heads, trained.d_ff) == (
        shrunk.num_layers, shrunk.d_model, shrunk.num_heads, shrunk.d_ff,
    )  # fmt: skip
    assert (trained.norm_first, trained.activation) == (
        architecture.norm_first, architecture.activation,
    )  # fmt: skip
    assert (trainer.cfg.steps, trainer.cfg.task) == (cfg.steps, cfg.task)
    at.button(key="train_stop").click().run()
    assert_no_exception(at)


@pytest.mark.parametrize(
    ("step", "preset", "runs"),
    [  # the comparison's four runs: a second link, in the slow lane
        (TRAIN_ONE, TINY_PRESET, 1),
        pytest.param(RACE, RACE_PRESET, COMPARISON_RUNS, marks=pytest.mark.slow),
    ],
)
def test_each_lesson_link_to_training_starts_its_job_as_it_is(step, preset, runs) -> None:
    """Lesson steps 12 and 13 link to the Training view on a preset that fits the time limit as
    it is: the step's button (Train; Pre vs post, the race) is on, and pressing it trains the
    preset's runs, not a smaller copy."""
    cfg = TRAINING_PRESETS[preset]
    assert training_seconds(cfg, runs) <= MAX_TRAINING_SECONDS
    at = open_page(lesson=str(STEPS.index(step) + 1))
    at.button(key="lesson_open_0").click().run()
    assert_no_exception(at)
    assert at.session_state["view"] == "Training"
    assert at.button(key=BUTTONS[runs]).disabled is False
    shrunk = [i.value for i in at.info if "limited to" in i.value]  # what the limit changed
    assert not any(f"**{JOB_NAMES[runs]}**" in sentence for sentence in shrunk)
    at.button(key=BUTTONS[runs]).click().run()
    assert_no_exception(at)
    job = at.session_state["_training_lab"].job
    assert job.running
    expected = comparison_configs(cfg) if runs == COMPARISON_RUNS else {"pre-norm": cfg}
    assert {name: t.cfg for name, t in job.trainers.items()} == expected
    at.button(key="train_stop").click().run()
    assert_no_exception(at)


def test_past_even_the_smallest_architecture_a_button_trains_fewer_steps() -> None:
    small = EncoderConfig(vocab_size=10, d_model=16, num_heads=2, num_layers=1, d_ff=64)
    cfg = TrainConfig(model=trainable(small), steps=MAX_STEPS)
    runs = PLACEMENT_RUNS
    smallest = D_MODEL_CHOICES[0], D_FF_CHOICES[0]
    assert (small.d_model, small.d_ff) == smallest  # nothing smaller to offer
    assert training_seconds(cfg, runs) > MAX_TRAINING_SECONDS
    planned = plan(cfg, small, runs, 1.0)
    assert planned.cfg == dataclasses.replace(
        cfg, steps=affordable_steps(cfg, runs, 1.0, MAX_TRAINING_SECONDS)
    )
    assert 1 <= planned.cfg.steps < MAX_STEPS
    assert planned.seconds == training_seconds(planned.cfg, runs) <= MAX_TRAINING_SECONDS
    slow = plan(cfg, small, runs, 1e9)  # a machine where not even one step fits
    assert slow.cfg is None and slow.seconds == training_seconds(cfg, runs, 1e9)


def test_bert_vs_modernbert_races_both_at_one_size_and_says_who_got_where(at: AppTest) -> None:
    at.slider(key="num_layers").set_value(4).run()
    at.number_input(key="train_seq_len").set_value(12).run()
    at.number_input(key="train_steps").set_value(4).run()
    assert_no_exception(at)
    at.button(key="train_race").click().run()
    train_to_the_end(at, MAX_CHUNKS)
    job = at.session_state["_training_lab"].job
    trained = {name: t.cfg for name, t in job.trainers.items()}
    assert list(trained) == list(RACE_NAMES)
    bert = trained["BERT-style"]
    assert trained == race_configs(bert)  # BERT-style is the sidebar's size as it is
    assert (bert.model.num_layers, bert.model.d_model, bert.model.num_heads) == (4, 32, 4)
    assert bert.model.d_ff == 64
    said = " ".join(c.value for c in at.caption)
    assert race_sizes(trained) in said and window_sentence(trained["ModernBERT-style"]) in said
    assert "masks 56 of the 144 query-key pairs" in said  # |q - k| > 4 at length 12: 2 x 28
    assert [m.value for m in at.info] == [race_findings(job.results)]
    init = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert [trace["name"] for trace in init["data"]] == list(RACE_NAMES)
    assert len(at.dataframe[0].value) == 2 and len(kept_models(at)) == 2
    at.button(key="train_open_1").click().run()  # ModernBERT-style, read in every view
    assert_no_exception(at)
    model = kept_models(at)[at.session_state["source"]]
    assert model.encoder is job.results["ModernBERT-style"].model.encoder
    for view in ("Attention", "Attention steps", "LayerNorm", "Activations", "Shapes"):
        go(at, view)
        assert_no_exception(at)
        assert not at.error, [e.value for e in at.error]
