"""The library logs the decisions an operator needs: a checkpoint loaded (what, how many bytes)
or refused (and why), a training started, stopped or finished."""

from __future__ import annotations

import logging

import pytest

from encoder.io.checkpoint_files import CHECKPOINT_FILES, files_from_archive
from encoder.io.checkpoints import load_checkpoint
from encoder.io.tokenize import bundled_model_dir
from encoder.train.config import TrainConfig
from encoder.train.jobs import single_job

TINY = TrainConfig(task="sort", steps=3, held_out_examples=5).with_model(
    d_model=16, num_heads=2, num_layers=1, d_ff=32
)


def messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_a_loaded_checkpoint_is_logged_with_its_bytes(caplog) -> None:
    caplog.set_level(logging.INFO, logger="encoder")
    load_checkpoint()
    total = sum((bundled_model_dir() / name).stat().st_size for name in CHECKPOINT_FILES)
    [loaded] = messages(caplog, logging.INFO)
    assert loaded.startswith(f"loaded BERT-style encoder from {bundled_model_dir()}: 6 layers x")
    assert loaded.endswith(f", {total:,} bytes")


def test_a_refused_checkpoint_and_archive_are_logged_with_the_reason(caplog, tmp_path) -> None:
    caplog.set_level(logging.INFO, logger="encoder")
    with pytest.raises(FileNotFoundError) as refused_dir:
        load_checkpoint(tmp_path)
    with pytest.raises(ValueError) as refused_zip:
        files_from_archive(b"not a zip", "upload.zip")
    assert messages(caplog, logging.WARNING) == [
        f"refused checkpoint {tmp_path}: {refused_dir.value}",
        f"refused archive upload.zip (9 bytes): {refused_zip.value}",
    ]
    assert "upload.zip is not a zip archive" in str(refused_zip.value)


def test_a_training_job_logs_its_start_stop_and_end(caplog) -> None:
    caplog.set_level(logging.INFO, logger="encoder")
    finished, stopped = single_job(TINY), single_job(TINY)
    finished.advance(seconds=60)
    stopped.stop()
    said = messages(caplog, logging.INFO)
    assert said[:2] == ["training started: pre-norm, sort task, 3 steps, on cpu"] * 2
    assert said[2].startswith("training done in ") and "pre-norm: " in said[2]
    assert said[2].endswith("held-out accuracy after 3 steps")
    assert said[3] == "training stopped at step 0 of 3"
    assert said[4].endswith("held-out accuracy after 0 steps")
