"""`python -m encoder trace` and `train`: ledger and summary for random, pretrained and trained
models; training's progress and JSON; a trained model saved, then traced; clean errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.cli import main
from encoder.inspect.ledger import shape_ledger
from encoder.io.checkpoint_files import CHECKPOINT_FILES
from encoder.io.task_model import load_task_model
from encoder.io.tokenize import bundled_model_dir
from encoder.measure.gradients import LOSS
from encoder.train.jobs import DROPOUT_PLACEMENTS
from tests.encoder.helpers import needs_cuda
from tests.shared import hub_snapshot

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "encoder", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def parameter_count(model: TransformerEncoder) -> int:
    return sum(p.numel() for p in model.parameters())


def summary_value(stdout: str, label: str) -> str:
    match = re.search(rf"^{label}: (.+)$", stdout, flags=re.MULTILINE)
    assert match, f"no '{label}:' line in\n{stdout}"
    return match.group(1)


@pytest.mark.slow  # a Python of its own, importing torch
def test_trace_random_model():
    result = run_cli(
        "trace", "The cat sat.", "Hello", "--norm", "post", "--heads", "2", "--d-model", "32",
        "--layers", "2", "--activation", "relu", "--seed", "3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    header = out.splitlines()[0].split()
    assert header == [
        "layer",
        "operation",
        "hook",
        "input_shape",
        "output_shape",
        "params",
        "flops",
    ]
    assert "blocks.1.attn.hook_pattern" in out
    cfg = EncoderConfig(
        d_model=32, num_heads=2, num_layers=2, d_ff=128, activation="relu", norm_first=False, seed=3
    )
    assert summary_value(out, "parameters") == f"{parameter_count(TransformerEncoder(cfg)):,}"
    assert summary_value(out, "model").startswith("random weights (seed 3), post-norm, 2 layers")
    assert summary_value(out, "device") == "cpu"
    assert summary_value(out, r"sentence 1 \(6 tokens\)") == "[CLS] the cat sat . [SEP]"
    assert summary_value(out, r"sentence 2 \(3 tokens\)") == "[CLS] hello [SEP]"
    assert summary_value(out, "batch").startswith("2 sentence(s), 9 tokens (12 with padding)")
    assert float(summary_value(out, "forward").removesuffix(" ms")) > 0


def test_trace_pretrained_model(minilm):
    result = run_cli("trace", "Attention is all you need.", "--pretrained")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "blocks.5.attn.hook_pattern" in out
    assert "blocks.6." not in out
    assert summary_value(out, "model").startswith(
        "pretrained all-MiniLM-L6-v2, post-norm, 6 layers x 12"
    )
    assert summary_value(out, "parameters") == f"{parameter_count(minilm.model):,}"


def test_bad_config_is_one_line_and_exit_2():
    result = run_cli("trace", "hello", "--d-model", "30", "--heads", "4")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "d_model=30" in result.stderr and "num_heads=4" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pretrained", "--heads", "8"], "drop --heads"),
        (["--checkpoint", str(bundled_model_dir()), "--layers", "2"], "--checkpoint fixes"),
        (["--checkpoint", "/nowhere/at/all"], "checkpoint directory not found: /nowhere/at/all"),
        (["--device", "cuda:7"], "'cuda:7' is not available"),
        (["--layers", "0"], "num_layers=0"),
        (["--layers", "200", "--d-model", "4096", "--heads", "8"], "the limit is 150 million"),
    ],
)
def test_invalid_options_exit_2(capsys, args: list[str], message: str):
    assert main(["trace", "hello", *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""


def test_trace_needs_text(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["trace"])
    assert exit_info.value.code == 2
    assert "TEXT" in capsys.readouterr().err


@pytest.mark.slow  # a Python of its own, importing torch
def test_train_json_last_line_has_the_results() -> None:
    result = run_cli(
        "train", "--task", "histogram", "--layers", "1", "--steps", "5", "--seed", "3",
        "--threads", "1", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert any(line.startswith("step     5") for line in lines)  # progress
    summary = json.loads(lines[-1])
    assert {"task", "accuracy", "final_loss", "steps", "seconds", "seq_len"} <= set(summary)
    assert summary["task"] == "histogram" and summary["steps"] == 5 and summary["layers"] == 1
    assert summary["seq_len"] == 8 and "checkpoint" not in summary
    assert 0 <= summary["accuracy"] <= 1 and summary["final_loss"] > 0


@pytest.mark.parametrize(
    ("option", "message"),
    [("--layers", "num_layers=0 must be at least 1"), ("--threads", "--threads 0 must be")],
)
def test_train_bad_value_is_a_one_line_error(option: str, message: str, capsys) -> None:
    assert main(["train", option, "0"]) == 2
    assert message in capsys.readouterr().err


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory) -> tuple[Path, dict]:
    """`train --task reverse --save DIR --json` (a short run): the directory and the JSON."""
    directory = tmp_path_factory.mktemp("cli") / "reverse-model"
    result = run_cli(
        "train", "--task", "reverse", "--layers", "1", "--steps", "30", "--threads", "1",
        "--save", str(directory), "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return directory, json.loads(result.stdout.strip().splitlines()[-1])


def test_train_save_writes_a_checkpoint_that_loads_back(saved_model) -> None:
    directory, summary = saved_model
    assert summary["checkpoint"] == str(directory) and summary["seq_len"] == 8
    assert sorted(p.name for p in directory.iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]
    model = load_task_model(directory)
    assert (model.task, model.seq_len, model.cfg.num_layers) == ("reverse", 8, 1)
    assert model.training["steps"] == 30
    assert model.training["held_out_accuracy"] == pytest.approx(summary["accuracy"], abs=1e-4)


@pytest.mark.slow  # a Python of its own, importing torch
def test_trace_a_saved_task_model_prints_its_answers(saved_model) -> None:
    directory, _ = saved_model
    result = run_cli("trace", "--checkpoint", str(directory), "3 1 4 1 5 9 2 6", "2 7 1 8 2 8 1 8")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert summary_value(out, "model").startswith(
        f"reverse task model {directory}, pre-norm, 1 layers x 4 heads"
    )
    assert summary_value(out, r"sentence 1 \(8 tokens\)") == "3 1 4 1 5 9 2 6"
    assert summary_value(out, "batch").startswith("2 sentence(s), 16 tokens (16 with padding)")
    model = load_task_model(directory)
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]])
    answers = model.classifier(ids).argmax(-1).tolist()  # [2, 8]
    for index, answer in enumerate(answers, start=1):
        printed = summary_value(out, rf"prediction {index} \(reverse\)")
        assert printed == " ".join(str(c) for c in answer)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3 1 4 1 5 x 2 6", "sentence 2: 'x' is not a symbol this model knows"),
        ("3 1 4 1 5 12 2 6", "sentence 2: '12' is not a symbol this model knows"),
        ("3 1 4", "sentence 2: 3 symbols, but this model was trained on sequences of exactly 8"),
    ],
)
def test_trace_a_task_model_refuses_text_it_cannot_read(saved_model, text, message, capsys):
    directory, _ = saved_model
    assert main(["trace", "--checkpoint", str(directory), "0 1 2 3 4 5 6 7", text]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


@pytest.mark.slow  # a Python of its own, importing torch
def test_trace_a_bert_checkpoint_directory() -> None:
    result = run_cli("trace", "--checkpoint", str(bundled_model_dir()), "Hello there.")
    assert result.returncode == 0, result.stderr
    assert summary_value(result.stdout, "model").startswith(
        f"checkpoint {bundled_model_dir()}, post-norm, 6 layers x 12 heads"
    )
    assert summary_value(result.stdout, r"sentence 1 \(5 tokens\)") == "[CLS] hello there . [SEP]"
    assert "prediction" not in result.stdout


def test_trace_a_model_found_in_the_hugging_face_cache_by_its_name(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    files = {name: (bundled_model_dir() / name).read_bytes() for name in CHECKPOINT_FILES}
    snapshot = hub_snapshot(tmp_path, "sentence-transformers/all-MiniLM-L6-v2", files)
    hub_snapshot(tmp_path, "openai-community/gpt2", {"config.json": b'{"model_type": "gpt2"}'})
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", "")
    name = "sentence-transformers/all-MiniLM-L6-v2"
    assert main(["trace", "--checkpoint", name, "Hello there."]) == 0
    out = capsys.readouterr().out
    assert summary_value(out, "model").startswith(
        f"checkpoint {name} ({snapshot}), post-norm, 6 layers x 12 heads"
    )
    assert summary_value(out, r"sentence 1 \(5 tokens\)") == "[CLS] hello there . [SEP]"
    assert main(["trace", "--checkpoint", "openai-community/gpt2", "Hello"]) == 2
    gpt2 = tmp_path / "models--openai-community--gpt2" / "snapshots" / ("0123abcd" * 5)
    assert capsys.readouterr().err.startswith(
        f"error: openai-community/gpt2 ({gpt2}) cannot be used: config.json: model_type 'gpt2' "
        "is a decoder"
    )


def test_pretrained_and_checkpoint_exclude_each_other(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["trace", "hi", "--pretrained", "--checkpoint", "somewhere"])
    assert exit_info.value.code == 2
    assert "not allowed with argument --pretrained" in capsys.readouterr().err


def test_train_with_checkpointed_blocks_gives_the_same_loss(capsys) -> None:
    options = ["train", "--task", "shift", "--layers", "2", "--steps", "3", "--threads", "1"]
    summaries = []
    for extra in ([], ["--checkpoint-blocks"]):
        assert main([*options, *extra, "--json"]) == 0
        summaries.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
    plain, checkpointed = summaries
    assert (plain["checkpoint_blocks"], checkpointed["checkpoint_blocks"]) == (False, True)
    assert checkpointed["final_loss"] == pytest.approx(plain["final_loss"], abs=1e-6)


def test_train_placements_compares_each_dropout_place_on_the_same_data(capsys) -> None:
    options = ["train", "--task", "sort", "--layers", "1", "--steps", "2", "--threads", "1"]
    assert main([*options, "--placements", "--dropout", "0.5", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith("for 2 steps with dropout 0.5 in each placement")
    results = json.loads(lines[-1])
    assert list(results) == list(DROPOUT_PLACEMENTS)
    assert results["attention weights"]["dropout"] == {
        "attention": 0.5,
        "residual": 0.0,
        "ffn": 0.0,
    }
    assert results["all (torch's places)"]["dropout"] == dict.fromkeys(
        ("attention", "residual", "ffn"), 0.5
    )
    for name, summary in results.items():  # the table's row of each placement
        row = next(line for line in lines if line.startswith(name + " "))
        assert f"{summary['accuracy']:.4f}" in row
    assert lines[-2].startswith("In this run of 2 steps, ")


PROFILE_TINY = ["--d-model", "32", "--heads", "2", "--layers", "2", "--threads", "1"]


def test_profile_json_has_every_measure(capsys) -> None:
    assert main(["profile", "The cat sat.", "Hello", *PROFILE_TINY, "--budget", "5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"device", "total_ms", "ops", "scaling", "train_memory", "grad_norms", "loss"} <= set(
        report
    )
    assert report["device"] == "cpu" and report["total_ms"] > 0
    assert report["model"].startswith("random weights (seed 0), pre-norm, 2 layers x 2 heads")
    cfg = EncoderConfig(d_model=32, num_heads=2, num_layers=2, d_ff=128)
    ledger = shape_ledger(cfg, *report["batch"])
    assert [op["name"] for op in report["ops"]] == [
        f"{layer}: {operation}"
        for layer, operation in zip(ledger["layer"], ledger["operation"], strict=True)
    ]
    assert all({"name", "ms", "flops"} <= set(op) for op in report["ops"])
    assert report["scaling"][0]["tokens"] == 16
    assert all(
        {"tokens", "ms", "attention_flops", "ffn_flops"} <= set(p) for p in report["scaling"]
    )
    memory = report["train_memory"]
    assert 0 < memory["saved_bytes_checkpointed"] < memory["saved_bytes"]
    assert memory["cuda_peak_bytes"] is None
    assert [row["layer"] for row in report["grad_norms"]] == [0, 1]
    assert all({"w1", "w2", "in_proj", "out_proj"} <= set(row) for row in report["grad_norms"])
    assert report["loss"] == LOSS and report["crossover_tokens"] == 128


def test_profile_prints_readable_tables(capsys) -> None:
    assert main(["profile", "Hello there.", *PROFILE_TINY, "--norm", "post", "--budget", "3"]) == 0
    out = capsys.readouterr().out
    assert summary_value(out, "model").startswith("random weights (seed 0), post-norm")
    assert summary_value(out, "slowest operation")
    for heading in ("time per operation", "scaling:", "training memory:", "against Xiong"):
        assert heading in out
    assert f"loss: {LOSS}" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--budget", "0"], "--budget 0.0 must be a positive"), (["--device", "cuda:7"], "cuda:7")],
)
def test_profile_bad_options_exit_2(args: list[str], message: str, capsys) -> None:
    assert main(["profile", "hello", *PROFILE_TINY, *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


@needs_cuda
def test_profile_on_cuda_reports_the_peak_memory(capsys) -> None:
    args = ["profile", "The cat sat.", *PROFILE_TINY, "--device", "cuda:0", "--budget", "10"]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    memory = report["train_memory"]
    assert report["device"] == "cuda:0"
    assert memory["cuda_peak_bytes"] > memory["cuda_peak_bytes_checkpointed"] > 0
