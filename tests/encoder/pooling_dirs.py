"""A sentence-transformers directory written in a test: the bundled MiniLM's files (linked) with
a modules.json and a 1_Pooling/config.json of the pooling the test chooses."""

from __future__ import annotations

import json
from pathlib import Path

from encoder.io.tokenize import bundled_model_dir


def write_sentence_transformers_dir(folder: Path, mode: str, normalize: bool) -> Path:
    """The bundled MiniLM's files (linked) with a modules.json and a 1_Pooling/config.json of
    one pooling `mode` (a sentence-transformers key), normalised or not."""
    for file in bundled_model_dir().iterdir():
        if file.is_file() and file.name != "modules.json":
            (folder / file.name).symlink_to(file)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    if normalize:
        kind = "sentence_transformers.models.Normalize"
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": kind})
        (folder / "2_Normalize").mkdir()
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    keys = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
    config = {f"pooling_mode_{key}": f"pooling_mode_{key}" == mode for key in keys}
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 384, **config})
    )
    return folder
