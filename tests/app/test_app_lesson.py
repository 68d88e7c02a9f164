"""The Lesson view driven as a teacher would (AppTest): the first visit, every step on every kind
of model, the query picker, and each step's "Open in" button reaching the same place a link does."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from safetensors.torch import save as save_safetensors
from streamlit.testing.v1 import AppTest

from app.controls.setup_keys import EXAMPLES
from app.lesson.steps import STEPS, TITLES
from app.lesson.steps.block import FEED_FORWARD
from app.lesson.steps.heads import HEADS_DIFFER
from app.lesson.steps.interventions import DECIDING
from app.lesson.steps.meaning import MEANING
from app.lesson.steps.training import RACE
from app.settings import LESSON_RULE_QUERY
from encoder.io.checkpoint_files import checkpoint_archive
from encoder.io.tokenize import bundled_model_dir
from encoder.train.config import TrainConfig
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import train
from encoder.web.payload import decode_header
from tests.app.helpers import (
    architecture_said,
    assert_no_exception,
    explorer,
    open_page,
    tokens_of,
    upload,
)
from tests.app.lesson_runs import MODERN

SENTENCE = EXAMPLES[0]["text"]
NUMBERS_COLUMNS = ["number", "value", "in the text"]


def step_title(at: AppTest) -> str:
    return at.header[0].value


def skip_the_question(at: AppTest) -> None:
    """Past a step's question (predict, then reveal) to the step itself."""
    at.button(key="predict_skip").click().run()
    assert_no_exception(at)


def asks(number: int, gated: bool = False, symbols: bool = False) -> bool:
    """Whether lesson step `number` asks a question before it shows itself (the feed-forward's
    ReLU-or-GELU question is not asked of a gated feed-forward, nor the closing step's which
    sentence is closest or the patching step's where it is decided of a model that reads a toy
    task's symbols)."""
    step = STEPS[number - 1]
    return step.question is not None and not (
        (gated and step is FEED_FORWARD) or (symbols and step in (MEANING, DECIDING))
    )


def open_numbers(at: AppTest) -> AppTest:
    """Open the step's "numbers behind this step" (drawn only once open; it stays open while
    the steps draw it)."""
    at.session_state["lesson_numbers"] = True
    return at.run()


def numbers_table(at: AppTest) -> pd.DataFrame | None:
    """The step's numbers table, where it is drawn (its expander open)."""
    return next((t.value for t in at.table if list(t.value.columns) == NUMBERS_COLUMNS), None)


def walk_every_step(at: AppTest, gated: bool = False, symbols: bool = False) -> list[str]:
    """From step 1 to the last with Next; on each, no error and a numbers table. The titles."""
    titles = []
    for number in range(1, len(STEPS) + 1):
        if number > 1:
            at.button(key="lesson_next").click().run()
        assert_no_exception(at)
        if asks(number, gated, symbols):  # predict first: nothing of the step until the reveal
            assert numbers_table(at) is None
            skip_the_question(at)
            assert at.success[0].value.count("You skipped") >= 1
        assert not at.error, [e.value for e in at.error]
        assert step_title(at) == f"{number}. {TITLES[number - 1]}"
        if numbers_table(at) is None:  # closed: a step that asked first drew no numbers
            open_numbers(at)
        assert numbers_table(at) is not None
        assert at.query_params.get("lesson", "1") == str(number)  # a link leaves 1 out
        titles.append(step_title(at))
    assert at.button(key="lesson_next").disabled
    return titles


def test_a_first_visit_starts_the_lesson_on_minilm_and_walks_every_step() -> None:
    at = open_page()
    assert_no_exception(at)
    assert at.session_state["view"] == "Lesson"
    assert at.radio(key="source").value == "pretrained"
    assert at.text_area(key="text").value == SENTENCE
    assert architecture_said(at).startswith("post-norm, d_model 384,")  # MiniLM's own
    assert at.query_params["source"] == "pretrained"
    assert "view" not in at.query_params  # the view is the page's path (/lesson)
    assert at.button(key="lesson_previous").disabled
    assert at.selectbox(key="lesson_query").value == LESSON_RULE_QUERY
    walk_every_step(at)
    at.button(key="lesson_previous").click().run()
    assert step_title(at).startswith(f"{len(STEPS) - 1}.")


def test_a_link_that_names_a_setting_opens_exactly_that() -> None:
    at = open_page(view="Attention")  # as before the lesson: random weights
    assert at.session_state["view"] == "Attention" and at.radio(key="source").value == "random"
    at = open_page(lesson="3", present="1", timing="1")  # the lesson's own: on MiniLM
    assert_no_exception(at)
    assert at.session_state["view"] == "Lesson" and at.radio(key="source").value == "pretrained"
    assert step_title(at) == f"3. {TITLES[2]}"
    assert at.toggle(key="present").value is True  # presenter mode: the sidebar's switch, on
    assert at.query_params["present"] == "1"
    assert not any("forward pass" in caption.value for caption in at.caption)  # no status line
    at.button(key="lesson_exit_presenter").click().run()
    assert at.toggle(key="present").value is False
    assert at.query_params.get("present") in (None, "0"), dict(at.query_params)
    assert any("forward pass" in caption.value for caption in at.caption)  # the status line


# post-norm walks in the fast lane on MiniLM (the first visit's walk above)
@pytest.mark.parametrize("norm", ["pre", pytest.param("post", marks=pytest.mark.slow)])
def test_every_step_renders_on_random_weights(norm: str) -> None:
    at = open_page(view="Lesson", norm=norm)
    assert at.radio(key="source").value == "random"
    walk_every_step(at)


@pytest.mark.slow  # a third walk of every step; test_claims reads this lesson's every step
def test_every_step_renders_on_a_modern_architecture() -> None:
    """ModernBERT's choices with random weights: RoPE, GeGLU, a local window, no biases."""
    at = open_page(view="Lesson", norm="pre", **{key: str(v) for key, v in MODERN.items()})
    assert at.radio(key="source").value == "random" and at.radio(key="positional").value == "rope"
    walk_every_step(at, gated=True)


@pytest.mark.slow  # two more walks of every step, after a training
def test_every_step_renders_on_a_trained_and_an_uploaded_model() -> None:
    transformers = pytest.importorskip("transformers")
    trained = train(
        TrainConfig(task="reverse", steps=20, held_out_examples=50).with_model(
            d_model=32, num_layers=1
        )
    ).task_model()
    at = upload(open_page(view="Lesson"), ("reverse.zip", checkpoint_archive(trained.files())))
    assert_no_exception(at)
    walk_every_step(at, symbols=True)  # sequences: no [CLS] or [SEP]; one layer: no later head
    at.button(key="lesson_open_0").click().run()  # the Training view's preset
    bert = transformers.BertModel(
        transformers.BertConfig(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
        )
    )
    files = {
        "config.json": json.dumps(bert.config.to_dict()).encode(),
        "model.safetensors": save_safetensors(
            {name: t.contiguous() for name, t in bert.state_dict().items()}
        ),
        "tokenizer.json": (bundled_model_dir() / "tokenizer.json").read_bytes(),
    }
    at = upload(open_page(view="Lesson", text=SENTENCE), ("bert.zip", checkpoint_archive(files)))
    assert_no_exception(at)
    assert at.session_state["source"].startswith("uploaded-")
    walk_every_step(at)


def explorer_start(at: AppTest) -> dict:
    """Where the step's explorer opens: its payload header's start."""
    (component,) = at.get("bidi_component")
    return decode_header(component.proto.bytes)["start"]


def test_the_query_picker_changes_the_link_the_explorer_and_the_url() -> None:
    at = open_page(lesson="3")
    skip_the_question(at)
    table = next(f.value for f in at.table if "weight" in f.value.columns)
    tokens = tokens_of(SENTENCE)
    assert set(table["query"]) == {tokens.index("it")}
    assert not at.get("plotly_chart")  # the step's attention is drawn by the explorer
    layer, head, key, weight = table.iloc[0][["layer", "head", "key", "weight"]]
    layer, head, query = int(layer), int(head), tokens.index("it")
    assert explorer_start(at) == {"layer": layer, "head": head, "mode": "lines", "query": query}
    entry, weights = explorer(at)  # [layer, head, query, key], every head of 16 tokens
    assert entry["tokens"] == tokens
    assert abs(weights[layer, head, query, int(key)] - weight) <= 1e-4
    at.selectbox(key="lesson_query").set_value(2).run()  # "animal": another question
    skip_the_question(at)
    table = next(f.value for f in at.table if "weight" in f.value.columns)
    assert set(table["query"]) == {2} and at.query_params["lesson_query"] == "2"
    assert table["weight"].is_monotonic_decreasing
    start = explorer_start(at)
    chosen = table.iloc[0]
    assert (start["layer"], start["head"], start["query"]) == (chosen["layer"], chosen["head"], 2)


def test_heads_differ_opens_every_head_in_the_explorer() -> None:
    at = open_page(lesson=str(STEPS.index(HEADS_DIFFER) + 1))
    assert_no_exception(at)
    assert not at.get("plotly_chart")
    numbers = numbers_table(open_numbers(at))
    assert explorer_start(at)["mode"] == "heads"
    entry, weights = explorer(at)
    assert weights.shape == (6, 12, len(tokens_of(SENTENCE)), len(tokens_of(SENTENCE)))
    assert int(numbers.set_index("number")["value"]["heads in all"]) == 6 * 12


def shown(at: AppTest, key: str, kind: str):
    """A widget's value by its kind; "state": a session key that no widget shows (the Attention
    view's layer and head, which the explorer draws)."""
    return at.session_state[key] if kind == "state" else getattr(at, kind)(key=key).value


@pytest.mark.parametrize(
    ("step", "view", "keys"),
    [
        (3, "Attention", {"layer": "state", "head": "state"}),
        (4, "Attention steps", {"step_layer": "slider", "step_head": "slider"}),
        (6, "Attention", {"ablate": "text_input", "layer": "state"}),
    ],
)
def test_open_in_reaches_the_same_place_as_the_link(step: int, view: str, keys: dict) -> None:
    at = open_page(lesson=str(step))
    if asks(step):
        skip_the_question(at)
    lesson_numbers = numbers_table(open_numbers(at)).set_index("number")["value"]
    at.button(key="lesson_open_0").click().run()
    assert_no_exception(at)
    assert at.session_state["view"] == view and "view" not in at.query_params
    values = {key: shown(at, key, kind) for key, kind in keys.items()}
    layer, head = lesson_numbers["layer"], lesson_numbers["head"]
    expected = {
        "layer": int(layer),
        "head": int(head),
        "step_layer": int(layer),
        "step_head": int(head),
        "ablate": f"{layer}.{head}",
    }
    assert values == {key: expected[key] for key in keys}
    link = dict(at.query_params)  # the page's link, opened in a new session at its page's path
    again = open_page(view=view, **link)  # (AppTest opens no path: an old link names the view)
    assert_no_exception(again)
    assert again.session_state["view"] == view
    assert {key: shown(again, key, kind) for key, kind in keys.items()} == values


def test_the_race_opens_the_training_view_on_its_preset() -> None:
    at = open_page(lesson=str(STEPS.index(RACE) + 1))
    at.button(key="lesson_open_0").click().run()
    assert_no_exception(at)
    assert at.session_state["view"] == "Training"
    assert at.selectbox(key="train_preset").value == "pre vs post: deep, high lr"
    assert at.radio(key="source").value == "random"
    race = TRAINING_PRESETS["pre vs post: deep, high lr"]
    assert at.slider(key="num_layers").value == race.model.num_layers
    assert at.number_input(key="train_steps").value == race.steps
    assert at.selectbox(key="train_task").value == "sort"
    assert at.query_params["train_preset"] == "pre vs post: deep, high lr"
    at.radio(key="source").set_value("pretrained").run()  # and back: MiniLM's architecture
    at.radio(key="source").set_value("random").run()
    assert at.slider(key="num_layers").value == race.model.num_layers  # kept as the user's own
