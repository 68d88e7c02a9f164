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
from collections.abc import Callable

import streamlit as st

from app.controls import session_models, state, url
from app.i18n import _, number, told
from app.memory import CACHE, MemoryRefused, size_text
from app.streamlit_private import remove_uploaded
from app.user_text import literal

log = logging.getLogger(__name__)


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
        model_id = session_models.add_upload(files, url.sources_in_use())
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
    limit_mb = session_models.UPLOAD_LIMIT / 1e6
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
