"""A model trained or uploaded in the page is a model source: every view reads it (AppTest)."""

from __future__ import annotations

import io
import json
import pickle
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save as save_safetensors
from streamlit.testing.v1 import AppTest

from app.controls import model_files, session_models
from app.user_text import literal
from app.views.training import lab as training_lab
from encoder.io.checkpoint_files import checkpoint_archive, files_from_archive
from encoder.io.checkpoints import checkpoint_from_files
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import bundled_model_dir
from encoder.tasks.task_tokenizer import check_task_text
from encoder.tasks.tasks import example_sequence
from encoder.train.config import TrainConfig
from encoder.train.trainer import train
from tests.app.helpers import (
    architecture_said,
    assert_no_exception,
    explorer,
    go,
    open_page,
    upload,
)

# Small enough to train in seconds, big enough to learn reverse: measured here, 120 steps of 64
# sequences reach 100% held-out accuracy and every head of layer 1 looks at the mirrored position.
SMALL = {"d_model": "64", "num_heads": "4", "num_layers": "2", "d_ff": "128"}
STEPS, BATCH = 120, 64
MAX_RUNS = 400
REVERSE_LINES = [
    "3 1 4 1 5 9 2 6",
    "0 1 2 3 4 5 6 7",
    "9 9 8 2 7 0 0 5",
    "5 3 5 8 9 7 9 3",
    "2 7 1 8 2 8 1 8",
    "6 0 2 2 1 4 0 7",
]


@pytest.fixture(scope="module")
def library_model() -> TaskModel:
    """A briefly trained reverse model (the upload tests need its files, not its skill)."""
    cfg = TrainConfig(task="reverse", steps=20, held_out_examples=50).with_model(
        d_model=32, num_layers=1
    )
    return train(cfg).task_model()


def session_model(at: AppTest) -> session_models.SessionModel:
    return at.session_state["_session_models"][at.session_state["source"]]


@pytest.mark.slow  # trains to 99 %: the quicker tests below train, keep and open a model
def test_train_reverse_on_the_sidebar_then_find_the_mirror_head_in_the_attention_view(
    monkeypatch,
) -> None:
    monkeypatch.setattr(training_lab, "CHUNK_SECONDS", 3.0)  # fewer page reruns per test
    at = open_page(view="Training", **SMALL)
    assert_no_exception(at)
    at.number_input(key="train_steps").set_value(STEPS)
    at.select_slider(key="train_batch").set_value(BATCH)
    at.button(key="train_start").click().run()
    started = time.perf_counter()
    for _ in range(MAX_RUNS):
        if not at.session_state["_training_lab"].job.running:
            break
        at.run()
    job = at.session_state["_training_lab"].job
    wall = time.perf_counter() - started
    print(f"trained {STEPS} steps: {job.seconds:.1f} s of steps, {wall:.1f} s of page runs")
    assert not job.running and not at.exception
    result = job.results["pre-norm"]
    cfg = result.config.model
    assert (cfg.d_model, cfg.num_heads, cfg.num_layers, cfg.d_ff) == (64, 4, 2, 128)
    assert (cfg.activation, cfg.positional, cfg.norm_first) == ("gelu", "sinusoidal", True)
    assert result.held_out_accuracy >= 0.99

    at.button(key="train_open_0").click().run()
    assert_no_exception(at)
    model = session_model(at)
    assert model.label == result.task_model().label()
    assert at.session_state["view"] == "Attention"
    assert at.text_area(key="text").value == example_sequence(8, 10)
    assert architecture_said(at).startswith("pre-norm, d_model 64, 4 heads, 2 layers, d_ff 128")
    # the head detail opens on a sharp head: its rows peak about as high as the sharpest's
    tiles = explorer(at)[1]  # [layer, head, query, key]
    sharpness = tiles.max(axis=-1).mean(axis=-1)  # [layer, head]
    chosen = sharpness[at.session_state["layer"], at.session_state["head"]]
    assert chosen >= 0.9 * sharpness.max() and chosen > 2 * sharpness.min()

    at.text_area(key="text").set_value("\n".join(REVERSE_LINES)).run()
    assert_no_exception(at)
    hits = np.zeros((2, 4))  # [layer, head]: queries whose strongest key is the mirrored one
    for sentence in range(len(REVERSE_LINES)):
        at.selectbox(key="sentence").set_value(sentence).run()
        tiles = explorer(at)[1]
        hits += (tiles.argmax(axis=-1) == np.arange(8)[::-1]).sum(axis=-1)
    share = hits / (8 * len(REVERSE_LINES))
    layer, head = np.unravel_index(share.argmax(), share.shape)
    print(f"mirror head: layer {layer}, head {head}, {share[layer, head]:.0%} of the positions")
    print("share per head:", share.round(2).tolist())
    assert share[layer, head] >= 0.9

    go(at, "Tokens")
    assert_no_exception(at)
    table = at.dataframe[0].value
    line = REVERSE_LINES[0].split()
    assert table["token"].tolist() == line
    assert table["task asks"].tolist() == line[::-1]
    assert table["model answers"].tolist() == line[::-1]
    captions = " ".join(c.value for c in at.caption)
    assert "WordPiece" not in captions and "one token per symbol" in captions


def test_a_symbol_or_length_the_model_does_not_know_gets_the_librarys_message(
    library_model: TaskModel,
) -> None:
    at = upload(open_page(), ("reverse.zip", checkpoint_archive(library_model.files())))
    for text, number, wrong in (
        ("3 1 4 1 5 9 2 6\n3 1 4 x 5 9 2 6", 2, "3 1 4 x 5 9 2 6"),
        ("3 1 4", 1, "3 1 4"),
    ):
        at.text_area(key="text").set_value(text).run()
        assert_no_exception(at)
        with pytest.raises(ValueError) as expected:
            check_task_text(wrong, library_model.tokenizer, 8)
        assert [e.value for e in at.error] == [literal(f"Sequence {number}: {expected.value}.")]
    assert "'x' is not a symbol this model knows" in str(
        pytest.raises(ValueError, check_task_text, "x", library_model.tokenizer, 8).value
    )


def test_upload_round_trip_opens_the_model_in_every_view(library_model: TaskModel) -> None:
    at = open_page(text="My own sentence.")
    archive = checkpoint_archive(library_model.files())
    upload(at, ("reverse.zip", archive))
    assert_no_exception(at)
    model = session_model(at)
    assert model.label == f"{library_model.label()} (uploaded reverse.zip)"
    assert at.radio(key="source").value == model.id
    assert architecture_said(at).startswith("pre-norm, d_model 32, 4 heads, 1 layer, d_ff")
    assert at.text_area(key="text").value == example_sequence(8, 10)

    # the page's attention is the library's, on the same sequence
    ids = torch.tensor([library_model.check_text(example_sequence(8, 10))])
    expected = library_model.encoder.trace(ids).attention[:, 0].numpy()  # [layer, head, q, k]
    np.testing.assert_allclose(explorer(at)[1], expected, atol=6e-5)
    for view in ("Tokens", "LayerNorm", "Shapes", "Export"):
        go(at, view)
        assert_no_exception(at)
        assert not at.error

    # the download holds the same bytes of every tensor
    again = checkpoint_from_files(files_from_archive(model.archive(), "download"), "download")
    original = library_model.classifier.state_dict()
    for name, tensor in again.task_model.classifier.state_dict().items():
        assert torch.equal(tensor, original[name]), name
    assert at.get("download_button")

    # the three files, uploaded one by one, are the same model once more
    upload(at, *library_model.files().items())
    assert_no_exception(at)
    assert at.session_state["source"] != model.id
    assert torch.equal(
        session_model(at).encoder.layers[0].linear1.weight, again.encoder.layers[0].linear1.weight
    )

    at.radio(key="source").set_value("random").run()
    assert at.text_area(key="text").value == "My own sentence."
    assert at.select_slider(key="d_model").value == 256
    assert architecture_said(at) is None  # the controls again


def _rewrite(archive: bytes, name: str, data: bytes) -> bytes:
    files = files_from_archive(archive, "x")
    files[name] = data
    return checkpoint_archive(files)


class RunsWhenUnpickled:
    """Unpickling this creates a file: proof that something was executed."""

    marker: Path

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def hostile_uploads(model: TaskModel, tmp_path: Path) -> dict[str, list[tuple[str, bytes]]]:
    archive = checkpoint_archive(model.files())
    config = json.loads(model.files()["config.json"])
    evil = RunsWhenUnpickled()
    evil.marker = tmp_path / "executed"
    other_shape = dict(config, encoder=dict(config["encoder"], d_ff=256))
    unknown_key = dict(config, evil="yes")
    with zipfile.ZipFile(extra := io.BytesIO(), "w") as bundle:
        for name, data in files_from_archive(archive, "x").items():
            bundle.writestr(name, data)
        bundle.writestr("run_me.py", "print('hello')")
    bert_config = (bundled_model_dir() / "config.json").read_bytes()
    bert_files = dict(model.files(), **{"config.json": bert_config})
    return {
        "pickle": [("m.zip", _rewrite(archive, "model.safetensors", pickle.dumps(evil)))],
        "shapes": [("m.zip", _rewrite(archive, "config.json", json.dumps(other_shape).encode()))],
        "unknown key": [
            ("m.zip", _rewrite(archive, "config.json", json.dumps(unknown_key).encode()))
        ],
        "extra file": [("m.zip", extra.getvalue())],
        "not a zip": [("m.zip", b"PK\x03\x04 certainly not a zip")],
        "BERT shapes": list(bert_files.items()),
        "two files": list(model.files().items())[:2],
    }


@pytest.mark.parametrize(
    "kind",
    ["pickle", "shapes", "unknown key", "extra file", "not a zip", "BERT shapes", "two files"],
)
def test_every_hostile_upload_gets_the_loaders_message(
    kind: str, library_model: TaskModel, tmp_path: Path
) -> None:
    files = hostile_uploads(library_model, tmp_path)[kind]
    with pytest.raises(ValueError) as expected:
        model_files.checkpoint_from_upload(files)
    at = upload(open_page(view="Attention"), *files)
    assert_no_exception(at)
    assert [e.value for e in at.error] == [
        f"This upload cannot be used: {literal(str(expected.value))}"
    ]
    assert at.session_state["source"] == "random" and not at.session_state["_session_models"]
    assert not (tmp_path / "executed").exists()


def test_an_upload_over_the_size_limit_is_refused(library_model: TaskModel, monkeypatch) -> None:
    archive = checkpoint_archive(library_model.files())
    monkeypatch.setattr(model_files, "UPLOAD_LIMIT", len(archive) - 1)
    at = upload(open_page(view="Attention"), ("big.zip", archive))
    assert_no_exception(at)
    limit = len(archive) - 1
    assert at.error[0].value == "This upload cannot be used: " + literal(
        f"big.zip is {len(archive):,} bytes, more than the limit of {limit:,} bytes "
        f"({limit / 1e6:,.0f} MB)"
    )
    assert at.session_state["source"] == "random"


def test_a_bert_style_upload_reads_text_with_its_own_tokenizer() -> None:
    transformers = pytest.importorskip("transformers")
    bert = transformers.BertModel(
        transformers.BertConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
        )
    )
    state = {name: t.contiguous() for name, t in bert.state_dict().items()}
    files = {
        "config.json": json.dumps(bert.config.to_dict()).encode(),
        "model.safetensors": save_safetensors(state),
        "tokenizer.json": (bundled_model_dir() / "tokenizer.json").read_bytes(),
    }
    at = upload(open_page(text="The cat sat."), ("tiny-bert.zip", checkpoint_archive(files)))
    assert_no_exception(at)
    model = session_model(at)
    assert model.task_model is None and model.label.endswith("(uploaded tiny-bert.zip)")
    assert at.text_area(key="text").value == "The cat sat."  # text stays: it reads sentences
    # no download of the model (its files are the user's already): only the explorer's
    assert [button.key for button in at.get("download_button")] == ["download_explorer"]
    go(at, "Tokens")
    assert at.dataframe[0].value["token"].tolist() == ["[CLS]", "the", "cat", "sat", ".", "[SEP]"]
    assert any(
        "checkpoint's own tokenizer (its tokenizer.json: WordPiece" in c.value for c in at.caption
    )


def test_a_link_to_another_sessions_model_falls_back_with_a_message() -> None:
    at = open_page(source="trained-0123456789abcdef")
    assert_no_exception(at)
    assert at.session_state["source"] == "random"
    assert any("another browser session" in w.value for w in at.warning)
