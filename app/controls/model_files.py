"""The sidebar's checkpoint files: download the chosen session model, upload a checkpoint.

An upload is one .zip or the three files (config.json, model.safetensors, tokenizer.json): a model
trained here or a BERT-style checkpoint. It is read in memory through
encoder.io.checkpoints.checkpoint_from_files: safetensors only, shapes checked against the config,
each file at most UPLOAD_LIMIT bytes; nothing in it is executed. It is loaded only if its model fits
in this session's and the server's memory budgets (app.controls.session_models). Whatever is wrong
with it, or why it does not fit, is shown on the page. Streamlit's copy of the uploaded bytes is let
go as soon as they are read (it would keep them until the session is shut down)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import PurePath

import streamlit as st

from app.controls import session_models, state, url
from app.i18n import _, number, told
from app.memory import CACHE, MemoryRefused, size_text
from app.sources import TOKENIZER_BYTES_PER_JSON_BYTE
from app.streamlit_private import remove_uploaded
from app.user_text import literal
from encoder.core.options import placement_of
from encoder.io.checkpoint_files import (
    MAX_FILE_BYTES,
    TOKENIZER_FILE,
    WEIGHTS_FILE,
    Files,
    check_size,
    files_from_archive,
)
from encoder.io.checkpoints import Checkpoint, checkpoint_from_files

log = logging.getLogger(__name__)
UPLOAD_LIMIT = MAX_FILE_BYTES  # bytes per uploaded file (read at call time, so tests can lower it)


def download_button(model: session_models.SessionModel) -> None:
    """The chosen model as a zip of its three files (not for an uploaded BERT checkpoint)."""
    if model.task_model is None:
        return
    st.download_button(
        _("Download this model (.zip)"),
        model.archive,
        file_name=f"{model.file_name}.zip",
        mime="application/zip",
        on_click="ignore",
        key="download_model",
        help=_(
            "config.json, model.safetensors and tokenizer.json: upload the zip here again, or "
            "unzip it and run `python -m encoder trace --checkpoint DIR`."
        ),
    )


def _on_upload(key: str, select: Callable[[str], None]) -> None:
    uploaded = state.uploaded(key)
    if not uploaded:
        return
    state.put("_upload_round", state.get("_upload_round") + 1)
    files = [(file.name, file.getvalue()) for file in uploaded]
    remove_uploaded(uploaded)
    try:
        model_id = add_upload(files, url.sources_in_use())
    except MemoryRefused as refusal:  # says what it needs and what the limit is
        log.warning("upload refused: %s", refusal)
        state.put("_upload_error", literal(told(refusal)))
        return
    except ValueError as error:
        log.warning("upload refused: %s", error)
        state.put(
            "_upload_error", _("This upload cannot be used: {error}", error=literal(told(error)))
        )
        return
    state.pop("_upload_error")
    select(model_id)


def memory_text() -> str:
    """What this session and all sessions keep in the memory budget, and their limits."""
    return _(
        "Memory: this session keeps {own} of models, of the {own_limit} it may keep; all "
        "sessions keep {kept}, of the {kept_limit} they may keep together; the server counts "
        "{used} in all, of its limit of {budget}.",
        own=size_text(session_models.session_models().nbytes),
        own_limit=size_text(session_models.SESSION_BUDGET),
        kept=size_text(CACHE.kept()),
        kept_limit=size_text(CACHE.kept_limit),
        used=size_text(CACHE.used),
        budget=size_text(CACHE.budget),
    )


def upload_control(select: Callable[[str], None]) -> None:
    """A file uploader; a loaded checkpoint becomes a model source and `select(its id)` runs."""
    key = state.upload_key()
    limit_mb = UPLOAD_LIMIT / 1e6
    with st.expander(_("Load a checkpoint")):
        st.file_uploader(
            _("A .zip, or its three files"),
            type=["zip", "json", "safetensors"],
            accept_multiple_files=True,
            key=key,
            on_change=_on_upload,
            args=(key, select),
        )
        st.caption(
            _(
                "config.json, model.safetensors and tokenizer.json: a model trained here (its "
                "download) or a BERT-style checkpoint; at most {limit} MB per file. The weights "
                "are read with safetensors only: nothing in the files is executed.",
                limit=number(limit_mb),
            )
        )
        with st.container(key="kept_memory"):
            st.caption(memory_text())
    error = state.pop("_upload_error")
    if error is not None:
        st.error(error)


def checkpoint_from_upload(uploads: list[tuple[str, bytes]]) -> tuple[Checkpoint, str]:
    """(checkpoint, name) from uploaded files: one .zip, or config.json, model.safetensors and
    tokenizer.json. ValueError naming the file and what is wrong; nothing is executed."""
    files, name = files_from_upload(uploads)
    return checkpoint_from_files(files, name, UPLOAD_LIMIT), name


def files_from_upload(uploads: list[tuple[str, bytes]]) -> tuple[Files, str]:
    """(files, name) of an upload, each file within UPLOAD_LIMIT (see checkpoint_from_upload)."""
    if not uploads:
        raise ValueError(_("No file was uploaded."))
    for name, data in uploads:
        check_size(name, len(data), UPLOAD_LIMIT)
    if len(uploads) == 1 and uploads[0][0].lower().endswith(".zip"):
        name, data = uploads[0]
        return files_from_archive(data, name, UPLOAD_LIMIT), name
    files: Files = {}
    for name, data in uploads:
        if name in files:
            raise ValueError(_("{name} was uploaded twice", name=name))
        files[name] = data
    return files, "upload"


def upload_estimate(
    uploads: list[tuple[str, bytes]], files: Files, zipped: bool
) -> tuple[int, int]:
    """(kept, peak): the estimate of what an upload's model keeps (its float32 tensors are the
    weights file's bytes, and the tokenizer), and of the memory while it loads: the uploaded
    bytes twice (ours, and what Streamlit's receiving of them still holds), the files unzipped
    from them, the tensors read from the weights, and the model they fill. Measured for
    MiniLM's 83 MB zip: 358 MB over the idle server at the peak; counted: 446 MB."""
    weights = len(files.get(WEIGHTS_FILE, b""))
    kept = weights + TOKENIZER_BYTES_PER_JSON_BYTE * len(files.get(TOKENIZER_FILE, b""))
    uploaded = sum(len(data) for _, data in uploads)
    unzipped = sum(len(data) for data in files.values()) if zipped else 0
    return kept, 2 * uploaded + unzipped + weights + kept


def add_upload(uploads: list[tuple[str, bytes]], in_use: Iterable[str]) -> str:
    """Load an upload (see checkpoint_from_upload) and keep it as a model source; its id.
    ValueError (MemoryRefused when it does not fit) with the message for the page."""
    files, name = files_from_upload(uploads)
    zipped = name.lower().endswith(".zip")
    kept, peak = upload_estimate(uploads, files, zipped)

    def load() -> Checkpoint:
        checkpoint = checkpoint_from_files(files, name, UPLOAD_LIMIT)
        files.clear()  # their bytes now live in the tensors
        return checkpoint

    where = f"uploaded {name}" if zipped else "uploaded"

    def label(checkpoint: Checkpoint) -> str:
        if checkpoint.task_model is not None:
            return f"{session_models.trained_label(checkpoint.task_model)} ({where})"
        cfg = checkpoint.encoder.cfg
        return (
            f"{placement_of(cfg.norm_first)}-norm {cfg.num_layers} x {cfg.num_heads}, "
            f"d_model {cfg.d_model} ({where})"
        )

    file_name = PurePath(name).stem if zipped else "checkpoint"
    return session_models.session_models().add(
        "uploaded", label, load, file_name, kept, peak, in_use
    )
