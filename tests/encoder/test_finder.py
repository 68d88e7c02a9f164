"""The finder over a fake Hugging Face cache and ENCODER_EXPLORER_MODELS folders built here: each
directory a clear entry (family, parameters from the safetensors headers, bytes, tokenizer, or
why it cannot be used), never an exception; bounded and fast."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from encoder.inspect.limits import MAX_PARAMETERS
from encoder.io import finder
from encoder.io.finder import FoundModel, find_model, find_models, too_large
from tests.shared import hub_snapshot

TENSORS = {"a.weight": (3, 4), "b.bias": (5,), "c": (2, 3, 2)}  # 12 + 5 + 12 = 29 values


def write_checkpoint(
    directory: Path,
    model_type: str | None = "bert",
    tensors: dict[str, tuple[int, ...]] = TENSORS,
    tokenizer: bool = True,
    config: dict | None = None,
) -> int:
    """config.json (by default only its model_type: the finder reads no more), model.safetensors
    (zeros of these shapes) and tokenizer.json in `directory`; the number of values written."""
    directory.mkdir(parents=True, exist_ok=True)
    config = {"model_type": model_type} if config is None else config
    (directory / "config.json").write_text(json.dumps(config))
    save_file(
        {name: torch.zeros(shape) for name, shape in tensors.items()},
        directory / "model.safetensors",
    )
    if tokenizer:
        (directory / "tokenizer.json").write_text("{}")
    return sum(torch.zeros(shape).numel() for shape in tensors.values())


def cache_model(cache: Path, repo: str, **checkpoint) -> Path:
    """A checkpoint (write_checkpoint's) as the Hugging Face cache holds it; its snapshot."""
    staging = cache / "staging" / repo
    write_checkpoint(staging, **checkpoint)
    files = {file.name: file.read_bytes() for file in staging.iterdir()}
    shutil.rmtree(cache / "staging")
    return hub_snapshot(cache, repo, files)


def by_name(found: list[FoundModel]) -> dict[str, FoundModel]:
    return {model.name: model for model in found}


def test_cache_snapshots_are_found_with_their_family_size_and_tokenizer(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    snapshot = cache_model(cache, "FacebookAI/roberta-base", model_type="roberta")
    cache_model(cache, "answerdotai/ModernBERT-base", model_type="modernbert")
    (cache / "datasets--someone--data").mkdir()  # not a model
    found = by_name(find_models(places=[], cache=cache))
    assert sorted(found) == ["FacebookAI/roberta-base", "answerdotai/ModernBERT-base"]
    roberta = found["FacebookAI/roberta-base"]
    assert roberta.path == snapshot and roberta.family == "RoBERTa"
    assert roberta.parameters == 29 and roberta.usable and roberta.has_tokenizer
    assert roberta.weight_bytes == (snapshot / "model.safetensors").stat().st_size
    assert found["answerdotai/ModernBERT-base"].family == "ModernBERT"


def test_the_cache_comes_from_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert finder.hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    assert finder.hub_cache_dir() == tmp_path / "elsewhere"
    cache_model(tmp_path / "elsewhere", "google/electra-small-discriminator", model_type="electra")
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", "")
    (model,) = find_models()
    assert (model.name, model.family) == ("google/electra-small-discriminator", "ELECTRA")


def test_named_directories_a_checkpoint_or_a_folder_of_them(tmp_path: Path, monkeypatch) -> None:
    write_checkpoint(tmp_path / "mine" / "tiny-bert")
    write_checkpoint(tmp_path / "mine" / "tiny-albert", model_type="albert")
    (tmp_path / "mine" / "notes").mkdir()  # no config.json: not a checkpoint
    write_checkpoint(tmp_path / "single", model_type="distilbert")
    places = f"{tmp_path / 'mine'}{os.pathsep}{tmp_path / 'single'}{os.pathsep}"
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", places)
    found = find_models(cache=tmp_path / "no-cache")
    assert [(m.name, m.family) for m in found] == [
        ("tiny-albert", "ALBERT"),
        ("tiny-bert", "BERT"),
        ("single", "DistilBERT"),
    ]
    assert all(model.usable for model in found)


def test_a_name_found_twice_is_named_by_its_path_the_second_time(tmp_path: Path) -> None:
    write_checkpoint(tmp_path / "a" / "model")
    write_checkpoint(tmp_path / "b" / "model")
    names = [m.name for m in find_models([tmp_path / "a", tmp_path / "b"], tmp_path / "none")]
    assert names == ["model", str(tmp_path / "b" / "model")]


def test_sharded_weights_are_counted_from_every_shard(tmp_path: Path) -> None:
    directory = tmp_path / "sharded"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"model_type": "xlm-roberta"}))
    (directory / "tokenizer.json").write_text("{}")
    save_file({"a": torch.zeros(10, 10)}, directory / "model-00001-of-00002.safetensors")
    save_file({"b": torch.zeros(7)}, directory / "model-00002-of-00002.safetensors")
    index = {
        "weight_map": {
            "a": "model-00001-of-00002.safetensors",
            "b": "model-00002-of-00002.safetensors",
        }
    }
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    (model,) = find_models([directory], tmp_path / "none")
    assert (model.family, model.parameters, model.usable) == ("XLM-R", 107, True)
    sizes = [file.stat().st_size for file in directory.glob("*.safetensors")]
    assert model.weight_bytes == sum(sizes) and model.largest_file == max(sizes)


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (
            {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]},
            "config.json: model_type 'gpt2' is a decoder (each token attends only to the tokens "
            "before it)",
        ),
        (
            {"model_type": "t5", "is_encoder_decoder": True},
            "config.json: model_type 't5' is an encoder-decoder",
        ),
        ({"model_type": "llama"}, "config.json: model_type 'llama' is a decoder"),
        ({"model_type": "deberta-v2"}, "config.json: model_type 'deberta-v2' is not read: DeBERTa"),
        ({"model_type": "funnel"}, "config.json: model_type 'funnel' is not a family this loader"),
        ({"model_type": "mpnet"}, "config.json: model_type 'mpnet' is not read: MPNet's"),
    ],
)
def test_unsupported_families_are_listed_with_the_reason(
    tmp_path: Path, config: dict, reason: str
) -> None:
    cache_model(tmp_path, "someone/model", config=config)
    (model,) = find_models([], tmp_path)
    assert not model.usable and model.problem.startswith(reason)
    assert model.parameters == 29  # still read: its size is known


def test_a_pickle_only_snapshot_is_listed_with_how_to_convert(tmp_path: Path) -> None:
    snapshot = cache_model(tmp_path, "old/bert")
    (snapshot / "model.safetensors").unlink()
    (snapshot / "pytorch_model.bin").write_bytes(b"not opened")
    (model,) = find_models([], tmp_path)
    assert model.family == "BERT" and model.parameters is None
    assert model.problem.startswith("it has its weights only as pytorch_model.bin, a Python pickle")
    assert "save_pretrained('DIR')" in model.problem


def test_broken_files_are_entries_with_a_reason(tmp_path: Path) -> None:
    broken_json = cache_model(tmp_path, "a/broken-json")
    (broken_json / "config.json").unlink()
    (broken_json / "config.json").write_text("{not json")
    unfinished = cache_model(tmp_path, "b/unfinished")
    (unfinished / "model.safetensors").resolve().unlink()  # the link stays, its blob is gone
    cache_model(tmp_path, "c/no-tokenizer", tokenizer=False)
    not_safetensors = cache_model(tmp_path, "d/not-safetensors")
    (not_safetensors / "model.safetensors").resolve().write_bytes(b"\xff" * 16)
    found = by_name(find_models([], tmp_path))
    assert found["a/broken-json"].problem.startswith("its config.json is not valid JSON")
    assert found["b/unfinished"].problem == (
        "its model.safetensors links to a file that is missing (an unfinished download?)"
    )
    assert found["c/no-tokenizer"].problem.startswith("it has no tokenizer.json")
    assert found["d/not-safetensors"].problem.startswith("model.safetensors's header claims")
    assert not any(model.usable for model in found.values())


def test_the_scan_is_bounded(tmp_path: Path, monkeypatch) -> None:
    for index in range(5):
        write_checkpoint(tmp_path / "many" / f"m{index}")
    assert len(find_models([tmp_path / "many"], tmp_path / "none", max_found=3)) == 3
    monkeypatch.setattr(finder, "MAX_SCANNED", 2)  # directory entries looked at
    assert len(find_models([tmp_path / "many"], tmp_path / "none")) == 2


def test_fifty_cached_models_are_found_quickly(tmp_path: Path) -> None:
    for index in range(50):
        cache_model(tmp_path, f"org/model-{index:02d}", tensors={"w": (64, 64)})
    start = time.perf_counter()
    found = find_models([], tmp_path)
    elapsed_ms = (time.perf_counter() - start) * 1000
    print(f"found {len(found)} cached models in {elapsed_ms:.1f} ms")
    assert len(found) == 50 and all(m.parameters == 64 * 64 for m in found)
    assert elapsed_ms < 1000


def test_find_model_takes_a_directory_or_a_found_name(tmp_path: Path) -> None:
    snapshot = cache_model(tmp_path / "hub", "FacebookAI/roberta-base", model_type="roberta")
    found = find_models([], tmp_path / "hub")
    assert find_model("FacebookAI/roberta-base", found).path == snapshot
    assert find_model(str(snapshot), found).family == "RoBERTa"
    with pytest.raises(ValueError) as error:
        find_model("nobody/nothing", found)
    assert str(error.value).startswith(
        "checkpoint directory not found: nobody/nothing; nor is it the name of a model in "
        "ENCODER_EXPLORER_MODELS or the Hugging Face cache"
    )
    assert str(error.value).endswith("found there: FacebookAI/roberta-base")


def test_too_large_names_the_bound() -> None:
    big = FoundModel("big", Path("."), "BERT", parameters=MAX_PARAMETERS + 1, weight_bytes=4)
    assert too_large(big, MAX_PARAMETERS).startswith("it has 150 million parameters, more than")
    small = FoundModel("small", Path("."), "BERT", parameters=1_000_000, weight_bytes=4_000_000)
    assert too_large(small, MAX_PARAMETERS, budget_bytes=10**9) == ""
    # 2 x 4 MB read + 4 MB of float32 tensors = 12 MB at the peak
    assert too_large(small, MAX_PARAMETERS, budget_bytes=11_000_000) == (
        "loading it takes about 12 MB of memory, more than this server's limit of 11 MB"
    )
