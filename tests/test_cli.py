"""`python -m encoder trace`: ledger and summary for random and pretrained models; clean errors."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from encoder import EncoderConfig, TransformerEncoder, load_pretrained
from encoder.__main__ import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "encoder", *args],
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


def test_trace_pretrained_model():
    result = run_cli("trace", "Attention is all you need.", "--pretrained")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "blocks.5.attn.hook_pattern" in out
    assert "blocks.6." not in out
    assert summary_value(out, "model").startswith(
        "pretrained all-MiniLM-L6-v2, post-norm, 6 layers x 12"
    )
    model, _ = load_pretrained()
    assert summary_value(out, "parameters") == f"{parameter_count(model):,}"


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
