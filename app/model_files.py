"""The sidebar's checkpoint files: download the chosen session model, upload a checkpoint.

An upload is one .zip or the three files (config.json, model.safetensors, tokenizer.json): a
model trained here or a BERT-style checkpoint. It is read in memory through
encoder.io.checkpoints.checkpoint_from_files: safetensors only, shapes checked against the config,
each file at most UPLOAD_LIMIT bytes; nothing in it is executed. Whatever is wrong with it is
shown on the page as the loader's message.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from app import session_models, state
from app.user_text import literal


def download_button(model: session_models.SessionModel) -> None:
    """The chosen model as a zip of its three files (not for an uploaded BERT checkpoint)."""
    if model.task_model is None:
        return
    st.download_button(
        "Download this model (.zip)",
        model.archive,
        file_name=f"{model.file_name}.zip",
        mime="application/zip",
        on_click="ignore",
        key="download_model",
        help="config.json, model.safetensors and tokenizer.json: upload the zip here again, or "
        "unzip it and run `python -m encoder trace --checkpoint DIR`.",
    )


def _on_upload(key: str, select: Callable[[str], None]) -> None:
    uploaded = state.uploaded(key)
    if not uploaded:
        return
    state.put("_upload_round", state.get("_upload_round") + 1)
    try:
        model_id = session_models.add_upload(
            [(file.name, file.getvalue()) for file in uploaded], state.get("source")
        )
    except ValueError as error:
        state.put("_upload_error", str(error))
        return
    state.pop("_upload_error")
    select(model_id)


def upload_control(select: Callable[[str], None]) -> None:
    """A file uploader; a loaded checkpoint becomes a model source and `select(its id)` runs."""
    key = state.upload_key()
    limit_mb = session_models.UPLOAD_LIMIT / 1e6
    with st.expander("Load a checkpoint"):
        st.file_uploader(
            "A .zip, or its three files",
            type=["zip", "json", "safetensors"],
            accept_multiple_files=True,
            key=key,
            on_change=_on_upload,
            args=(key, select),
        )
        st.caption(
            "config.json, model.safetensors and tokenizer.json: a model trained here (its "
            f"download) or a BERT-style checkpoint; at most {limit_mb:,.0f} MB per file. The "
            "weights are read with safetensors only: nothing in the files is executed."
        )
    error = state.pop("_upload_error")
    if error is not None:
        st.error(f"This upload cannot be used: {literal(error)}")
