"""What every test folder shares besides fixtures (those are in tests/conftest.py)."""

import hashlib
import os
from pathlib import Path

SENTENCE = "The animal didn't cross the street because it was too tired."  # the lesson's sentence


def hub_snapshot(cache: Path, repo: str, files: dict[str, bytes]) -> Path:
    """A model as the local Hugging Face cache holds it: models--ORG--NAME/ with its files in
    blobs/, snapshots/REVISION/ of links to them, and refs/main naming the revision. Returns the
    snapshot directory."""
    root = cache / ("models--" + repo.replace("/", "--"))
    revision = "0123abcd" * 5
    snapshot = root / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (root / "blobs").mkdir()
    for name, data in files.items():
        blob = root / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(os.path.relpath(blob, snapshot))
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(revision)
    return snapshot
