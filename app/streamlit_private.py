"""Every use of Streamlit beyond its public API, in one place (pyproject pins streamlit<2).

Each function names what it relies on; if a Streamlit release moves it, this module is the one
to mend, and each answers None / does nothing where the runtime is absent (AppTest) or differs.
"""

from __future__ import annotations

from streamlit import runtime
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.scriptrunner import get_script_run_ctx


def session_id() -> str | None:
    """The id of the browser session whose script runs in this thread; None outside one.
    Relies on streamlit.runtime.scriptrunner.get_script_run_ctx() and its `session_id`."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def live_sessions() -> set[str] | None:
    """The ids of the sessions the runtime still has: connected, or disconnected but still
    resumable; None where there is no runtime to ask (AppTest) or it cannot say. Relies on
    Runtime's private `_session_mgr` and its `list_sessions()` (no public list of the stored
    sessions)."""
    if not runtime.exists():
        return None
    try:
        manager = runtime.get_instance()._session_mgr
        return {info.session.id for info in manager.list_sessions()}
    except (AttributeError, KeyError, RuntimeError):  # another Streamlit, or a list in flux
        return None


def forget_session_files(sid: str) -> None:
    """What AppSession.shutdown removes, and expiry does not: the session's uploaded files and
    its downloadable and media files. Relies on Runtime's `uploaded_file_mgr` and
    `media_file_mgr` and their remove_session_files / clear_session_refs /
    remove_orphaned_files."""
    if not runtime.exists():
        return
    instance = runtime.get_instance()
    instance.uploaded_file_mgr.remove_session_files(sid)
    instance.media_file_mgr.clear_session_refs(sid)
    instance.media_file_mgr.remove_orphaned_files()


def remove_uploaded(uploaded: list) -> None:
    """Remove uploaded files from Streamlit's store, which would keep their bytes until the
    session is shut down. Relies on the script run context's `uploaded_file_mgr` being a
    MemoryUploadedFileManager with remove_file(session_id=, file_id=)."""
    ctx = get_script_run_ctx()
    if ctx is not None and isinstance(ctx.uploaded_file_mgr, MemoryUploadedFileManager):
        for file in uploaded:
            ctx.uploaded_file_mgr.remove_file(session_id=ctx.session_id, file_id=file.file_id)
