"""A model trained here, saved and loaded: bit-exact round trips, and every hostile file refused.

Each refusal is a ValueError whose message names the file and what is wrong with it, raised
before anything in the files is run or any model is built for them.
"""

from __future__ import annotations

import io
import json
import pickle
import time
import zipfile
from dataclasses import fields
from pathlib import Path

import pytest
import torch
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors
from tokenizers import Tokenizer

from encoder import TransformerEncoder, load_pretrained
from encoder.io.checkpoint_files import (
    MAX_DISK_FILE_BYTES,
    MAX_LAYERS,
    checkpoint_archive,
    files_from_archive,
    read_checkpoint_dir,
)
from encoder.io.checkpoints import checkpoint_from_files, load_checkpoint
from encoder.io.task_model import FORMAT, TaskModel, load_task_model, task_model_from_files
from encoder.tasks.classifier import TokenClassifier
from encoder.tasks.task_tokenizer import task_tokenizer
from encoder.train.config import TrainConfig
from encoder.train.trainer import torch_threads, train

SOURCE = "upload.zip"  # how the hostile checkpoints are named in messages
SMALL = dict(num_layers=2, d_model=32, num_heads=2, d_ff=64, batch_size=32, held_out_examples=50)


pytestmark = pytest.mark.usefixtures("one_thread")


def trained(**changes) -> TaskModel:
    """SMALL trained for 3 steps, with `changes` (TrainConfig's fields, or its model's)."""
    values = {**SMALL, "steps": 3, **changes}
    own = {f.name for f in fields(TrainConfig)}
    cfg = TrainConfig(**{k: v for k, v in values.items() if k in own})
    return train(cfg.with_model(**{k: v for k, v in values.items() if k not in own})).task_model()


@pytest.fixture(scope="module")
def model() -> TaskModel:
    with torch_threads(1):
        return trained(task="reverse")


@pytest.fixture
def files(model: TaskModel) -> dict[str, bytes]:
    return model.files()


def config_of(files: dict[str, bytes]) -> dict:
    return json.loads(files["config.json"])


def with_config(files: dict[str, bytes], config: dict) -> dict[str, bytes]:
    return {**files, "config.json": json.dumps(config).encode()}


def with_tensors(files: dict[str, bytes], edit) -> dict[str, bytes]:
    tensors = load_safetensors(files["model.safetensors"])
    edit(tensors)
    return {**files, "model.safetensors": save_safetensors(tensors)}


def refused(files: dict[str, bytes]) -> str:
    """The message of the ValueError that loading these files raises (both entry points)."""
    with pytest.raises(ValueError) as direct:
        task_model_from_files(files, SOURCE)
    with pytest.raises(ValueError) as either_kind:
        checkpoint_from_files(files, SOURCE)
    assert str(direct.value) == str(either_kind.value)
    return str(direct.value)


def assert_same_model(loaded: TaskModel, saved: TaskModel) -> None:
    ours, theirs = loaded.classifier.state_dict(), saved.classifier.state_dict()
    assert list(ours) == list(theirs)
    for name, tensor in theirs.items():
        assert torch.equal(ours[name], tensor), name
        assert ours[name].dtype == tensor.dtype
    ids = torch.randint(
        0, saved.vocab, (3, saved.seq_len), generator=torch.Generator().manual_seed(1)
    )
    before, after = saved.encoder.trace(ids), loaded.encoder.trace(ids)
    assert torch.equal(after.output, before.output)
    assert torch.equal(after.attention, before.attention)
    assert set(after.tensors) == set(before.tensors)
    for name, tensor in before.tensors.items():
        assert torch.equal(after.tensors[name], tensor), name
    assert torch.equal(loaded.classifier(ids), saved.classifier(ids))
    assert loaded.tokenizer.to_str() == saved.tokenizer.to_str()
    assert (loaded.task, loaded.seq_len, loaded.training) == (
        saved.task,
        saved.seq_len,
        saved.training,
    )


# --- round trips ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        dict(task="reverse"),
        dict(
            task="shift",
            norm_first=False,
            positional="sinusoidal",
            norm_type="rmsnorm",
            activation="gelu",
            seq_len=6,
            vocab=7,
        ),  # fmt: skip
    ],
    ids=["pre-learned", "post-sinusoidal-rmsnorm"],
)
def test_save_and_load_is_bit_exact(tmp_path: Path, changes: dict) -> None:
    saved = trained(**changes)
    assert saved.save(tmp_path / "model") == tmp_path / "model"
    loaded = load_task_model(tmp_path / "model")
    assert_same_model(loaded, saved)
    assert not loaded.classifier.training
    assert loaded.label() == saved.label()


def test_the_files_are_what_the_format_says(model: TaskModel, files: dict[str, bytes]) -> None:
    config = config_of(files)
    assert config["format"] == FORMAT and config["format_version"] == 1
    assert config["encoder"] == model.cfg.to_dict()
    assert config["task"] == {"name": "reverse", "seq_len": 8, "vocab": 10, "num_classes": 10}
    assert config["training"]["steps"] == 3
    tensors = load_safetensors(files["model.safetensors"])
    assert set(tensors) == set(model.classifier.state_dict())
    assert tensors["head.weight"].shape == (10, 32)
    tokenizer = Tokenizer.from_str(files["tokenizer.json"].decode())
    assert tokenizer.encode("3 1 4 1 5 9 2 6").ids == [3, 1, 4, 1, 5, 9, 2, 6]


def test_load_pretrained_reads_our_format_as_well(tmp_path: Path, model: TaskModel) -> None:
    model.save(tmp_path)
    encoder, tokenizer = load_pretrained(tmp_path)
    assert isinstance(encoder, TransformerEncoder) and isinstance(tokenizer, Tokenizer)
    assert not encoder.training
    for name, tensor in model.encoder.state_dict().items():
        assert torch.equal(encoder.state_dict()[name], tensor), name
    assert tokenizer.encode("3 1 4 1 5 9 2 6").ids == [3, 1, 4, 1, 5, 9, 2, 6]
    checkpoint = load_checkpoint(tmp_path)
    assert checkpoint.task_model is not None
    assert isinstance(checkpoint.task_model.classifier, TokenClassifier)
    assert checkpoint.encoder is checkpoint.task_model.encoder
    assert load_checkpoint().task_model is None  # the bundled MiniLM is BERT-style


def test_archive_round_trip_is_bit_exact(model: TaskModel, files: dict[str, bytes]) -> None:
    archive = checkpoint_archive(files)
    assert zipfile.ZipFile(io.BytesIO(archive)).namelist() == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]
    unpacked = files_from_archive(archive, SOURCE)
    assert unpacked == files
    assert_same_model(checkpoint_from_files(unpacked, SOURCE).task_model, model)


def test_an_archive_of_a_folder_is_read_too(model: TaskModel, files: dict[str, bytes]) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("reverse-model/", "")
        for name, data in files.items():
            archive.writestr(f"reverse-model/{name}", data)
    assert files_from_archive(buffer.getvalue(), SOURCE) == files


def test_label_check_text_and_predictions(model: TaskModel) -> None:
    accuracy = model.training["held_out_accuracy"]
    assert model.label() == f"reverse, pre-norm 2 x 2, 3 steps, {accuracy:.0%} held-out"
    assert model.check_text("3 1 4 1 5 9 2 6") == [3, 1, 4, 1, 5, 9, 2, 6]
    with pytest.raises(ValueError, match="'x' is not a symbol"):
        model.check_text("3 1 4 1 5 9 2 x")
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    expected = [str(c) for c in model.classifier(ids).argmax(-1)[0].tolist()]
    assert model.predicted_classes(model.encoder(ids)) == [expected]


def test_histogram_answers_are_named_as_the_task_names_them() -> None:
    histogram = trained(task="histogram", num_layers=1)
    ids = torch.tensor([[1, 1, 2, 3, 3, 3, 4, 5]])
    answers = histogram.predicted_classes(histogram.encoder(ids))[0]
    assert all(a.startswith("×") for a in answers)


# --- hostile files: weights -------------------------------------------------------------------


class Trap:
    """Unpickling this would create a file: proof that a loader ran code from the checkpoint."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_a_pickle_is_refused_and_nothing_in_it_runs(tmp_path: Path, files) -> None:
    marker = tmp_path / "code-ran"
    message = refused({**files, "model.safetensors": pickle.dumps(Trap(marker))})
    assert message.startswith(f"{SOURCE}/model.safetensors is not a valid safetensors file")
    assert not marker.exists()


def test_a_torch_save_file_is_refused(model: TaskModel, files) -> None:
    buffer = io.BytesIO()
    torch.save(model.classifier.state_dict(), buffer)
    message = refused({**files, "model.safetensors": buffer.getvalue()})
    assert message.startswith(f"{SOURCE}/model.safetensors is not a valid safetensors file")


@pytest.mark.parametrize("data", [b"", b"\x00" * 7, bytes(range(256)) * 40, b"{}" * 10])
def test_random_bytes_are_refused(files, data: bytes) -> None:
    message = refused({**files, "model.safetensors": data})
    assert message.startswith(f"{SOURCE}/model.safetensors is not a valid safetensors file")


def test_a_tensor_of_the_wrong_shape_is_named(files) -> None:
    bad = with_tensors(files, lambda t: t.update({"head.weight": torch.zeros(9, 32)}))
    assert refused(bad) == (
        f"{SOURCE}/model.safetensors: tensor head.weight has shape (9, 32), but config.json "
        f"implies (10, 32)"
    )


def test_a_config_that_does_not_match_the_tensors_is_refused(files) -> None:
    config = config_of(files)
    config["encoder"]["d_ff"] = 96
    assert refused(with_config(files, config)) == (
        f"{SOURCE}/model.safetensors: tensor encoder.layers.0.linear1.weight has shape (64, 32), "
        f"but config.json implies (96, 32)"
    )


def test_a_tensor_of_the_wrong_dtype_is_named(files) -> None:
    name = "encoder.layers.1.norm2.bias"
    bad = with_tensors(files, lambda t: t.update({name: t[name].double()}))
    assert refused(bad) == (
        f"{SOURCE}/model.safetensors: tensor {name} is torch.float64, expected torch.float32"
    )


def test_missing_and_extra_tensors_are_named(files) -> None:
    lacking = with_tensors(files, lambda t: t.pop("head.bias"))
    assert refused(lacking) == f"{SOURCE}/model.safetensors lacks the tensors head.bias"
    extra = with_tensors(files, lambda t: t.update({"payload": torch.zeros(3)}))
    assert refused(extra) == (
        f"{SOURCE}/model.safetensors has tensors this model does not use: payload"
    )


# --- hostile files: config.json ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c.update(evil=1), "config.json has unknown keys 'evil'"),
        (lambda c: c.pop("task"), "config.json lacks the keys 'task'"),
        (lambda c: c["encoder"].update(rotary=True), "config.json: 'encoder' has unknown keys"),
        (lambda c: c["encoder"].pop("seed"), "config.json: 'encoder' lacks the keys 'seed'"),
        (lambda c: c["task"].update(hint="x"), "config.json: 'task' has unknown keys 'hint'"),
        (lambda c: c["training"].update(code="1"), "'training' has unknown keys 'code'"),
        (lambda c: c.update(format="other"), "format 'other' is not 'encoder-explorer-task-model'"),
        (lambda c: c.update(format_version=2), "format_version 2 is not 1"),
        (lambda c: c.update(encoder=[1, 2]), "'encoder' must be a JSON object, not list"),
        (lambda c: c["encoder"].update(num_heads=3), "invalid encoder: d_model=32 is not divisib"),
        (lambda c: c["encoder"].update(d_model="32"), "invalid encoder: d_model='32' must be a w"),
        (lambda c: c["encoder"].update(norm_first="yes"), "norm_first='yes' must be True"),
        (lambda c: c["task"].update(name="sorting"), "task='sorting' is not one of"),
        (lambda c: c["task"].update(name=["reverse"]), "task name ['reverse'] must be a string"),
        (lambda c: c["task"].update(seq_len=True), "task seq_len=True must be a whole number"),
        (lambda c: c["task"].update(vocab=12), "task vocab=12 differs from the encoder's vocab"),
        (lambda c: c["task"].update(seq_len=9), "task seq_len=9 is more than the encoder's max"),
        (lambda c: c["task"].update(num_classes=11), "num_classes=11, but reverse with seq_len"),
        (lambda c: c["training"].update(steps="3"), "training steps='3' must be a finite number"),
    ],
)
def test_a_bad_config_is_refused_with_its_reason(files, edit, message: str) -> None:
    config = config_of(files)
    edit(config)
    text = refused(with_config(files, config))
    assert text.startswith(f"{SOURCE}/config.json") and message in text


def test_a_config_without_training_record_loads(files, model: TaskModel) -> None:
    config = config_of(files)
    del config["training"]
    loaded = task_model_from_files(with_config(files, config), SOURCE)
    assert loaded.training == {} and loaded.label() == "reverse, pre-norm 2 x 2"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"format": ', "config.json is not valid JSON"),
        (b"[1, 2]", "config.json must hold a JSON object, not list"),
        (b"\xff\xfe", "config.json is not valid JSON"),
        (b"[" * 100_000, "config.json is not valid JSON"),
    ],
)
def test_a_config_that_is_not_a_json_object_is_refused(files, data: bytes, message: str) -> None:
    assert message in refused({**files, "config.json": data})


def test_a_huge_architecture_is_refused_before_anything_is_allocated(files) -> None:
    config = config_of(files)
    config["encoder"].update(vocab_size=10**12)  # 128 TB of embeddings, were it built
    config["task"].update(vocab=10**12, num_classes=10**12)
    started = time.perf_counter()
    assert "tensor encoder.embed.token.weight has shape (10, 32), but config.json implies " in (
        refused(with_config(files, config))
    )
    assert time.perf_counter() - started < 10


def test_too_many_layers_are_refused_before_any_is_built(files) -> None:
    config = config_of(files)
    config["encoder"]["num_layers"] = 100_000
    started = time.perf_counter()
    assert refused(with_config(files, config)) == (
        f"{SOURCE}/config.json: num_layers=100000 is more than the {MAX_LAYERS} blocks a "
        f"checkpoint may have"
    )
    assert time.perf_counter() - started < 10


def test_a_bert_config_is_not_a_task_model(files) -> None:
    with pytest.raises(ValueError, match="has no 'format' key: it is not a task model"):
        task_model_from_files({**files, "config.json": b'{"model_type": "bert"}'}, SOURCE)


# --- hostile files: tokenizer.json ------------------------------------------------------------


def test_another_tokenizer_is_refused(files) -> None:
    other = {**files, "tokenizer.json": task_tokenizer(12).to_str().encode()}
    assert refused(other) == (
        f"{SOURCE}/tokenizer.json is not the tokenizer of a task with 10 symbols (one WordLevel "
        f"token per symbol, split on whitespace)"
    )


@pytest.mark.parametrize("data", [b"not json", b'{"version": "1.0"}', b"\xff"])
def test_a_broken_tokenizer_is_refused(files, data: bytes) -> None:
    message = refused({**files, "tokenizer.json": data})
    assert message.startswith(f"{SOURCE}/tokenizer.json is not a valid tokenizer file")


# --- hostile files: size, names, archives -----------------------------------------------------


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path, model) -> None:
    model.save(tmp_path)
    weights = tmp_path / "model.safetensors"
    with weights.open("r+b") as file:
        file.truncate(MAX_DISK_FILE_BYTES + 1)  # sparse: no disk is used
    with pytest.raises(ValueError) as error:
        load_pretrained(tmp_path)
    assert str(error.value) == (
        f"{weights} is {MAX_DISK_FILE_BYTES + 1:,} bytes, more than the limit of "
        f"{MAX_DISK_FILE_BYTES:,} bytes (1,500 MB)"
    )


def test_the_size_limit_is_a_parameter(tmp_path: Path, model, files) -> None:
    model.save(tmp_path)
    size = len(files["model.safetensors"])
    with pytest.raises(ValueError, match=f"model.safetensors is {size:,} bytes, more than"):
        load_task_model(tmp_path, max_bytes=size - 1)
    with pytest.raises(ValueError, match=f"{SOURCE}/model.safetensors is {size:,} bytes"):
        checkpoint_from_files(files, SOURCE, max_bytes=size - 1)
    assert read_checkpoint_dir(tmp_path, max_bytes=size) == files


def test_missing_and_unexpected_files_are_named(files) -> None:
    lacking = {name: data for name, data in files.items() if name != "tokenizer.json"}
    assert refused(lacking) == f"{SOURCE} lacks tokenizer.json"
    extra = {**files, "setup.py": b"import os"}
    assert refused(extra) == (
        f"{SOURCE} holds setup.py; a checkpoint is only config.json, model.safetensors, "
        f"tokenizer.json"
    )


def zip_of(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_hostile_archives_are_refused(files) -> None:
    def archive_error(data: bytes, **limits) -> str:
        with pytest.raises(ValueError) as error:
            files_from_archive(data, SOURCE, **limits)
        return str(error.value)

    assert archive_error(b"PK\x03\x04 not really").startswith(f"{SOURCE} is not a zip archive")
    assert archive_error(files["model.safetensors"]).startswith(f"{SOURCE} is not a zip archive")
    assert archive_error(zip_of({**files, "run.sh": b"rm -rf /"})) == (
        f"{SOURCE} holds 'run.sh'; a checkpoint archive holds only config.json, "
        f"model.safetensors, tokenizer.json"
    )
    twice = zip_of({**files, "copy/config.json": files["config.json"]})
    assert archive_error(twice) == f"{SOURCE} holds config.json twice"
    lacking = zip_of({name: files[name] for name in ("config.json", "tokenizer.json")})
    assert archive_error(lacking) == f"{SOURCE} lacks model.safetensors"
    # a file that inflates past the limit: refused by its declared size, never inflated
    bomb = zip_of({**files, "model.safetensors": b"\x00" * 5_000_000})
    assert len(bomb) < 100_000
    assert archive_error(bomb, max_bytes=1_000_000) == (
        f"{SOURCE}/model.safetensors is 5,000,000 bytes, more than the limit of 1,000,000 bytes "
        f"(1 MB)"
    )


def test_an_archive_that_lies_about_a_size_is_refused(files) -> None:
    data = bytearray(zip_of(files))
    # shrink the declared size of model.safetensors (central directory entry) to 10 bytes
    entry = data.rindex(b"PK\x01\x02", 0, data.rindex(b"model.safetensors"))
    data[entry + 24 : entry + 28] = (10).to_bytes(4, "little")
    with pytest.raises(ValueError, match=f"{SOURCE}/model.safetensors cannot be read"):
        files_from_archive(bytes(data), SOURCE)
