"""Fixtures the page's tests share: a class store of the test's own."""

from __future__ import annotations

import pytest

from app.controls.classroom import class_store


@pytest.fixture
def store_path(tmp_path, monkeypatch) -> str:
    """A fresh SQLite class store for this test (no Redis), the page's cached one let go."""
    path = str(tmp_path / "classes.sqlite3")
    monkeypatch.setenv("ENCODER_EXPLORER_CLASS_DB", path)
    monkeypatch.delenv("ENCODER_EXPLORER_REDIS_URL", raising=False)
    class_store.clear()
    yield path
    class_store.clear()
