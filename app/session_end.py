"""When a browser session ends, what it holds leaves with it.

Streamlit has no public hook for a session's end. A session whose websocket closes (a closed tab,
a lost network) is kept for `server.disconnectedSessionTTL` seconds (default 120) so that it can
reconnect; after that Streamlit can no longer resume it, but it frees the session's state only when
it next writes to its storage of disconnected sessions and the garbage collector then finds the
session's reference cycles, which on a quiet server may be never. (Nor does it remove that
session's uploaded and downloadable files, as it does for a session it shuts down.)

So each session registers what releases its holdings (`on_end`), and `sweep()`, run at the start
of every script run of any session, asks the runtime which sessions it still has (connected, or
disconnected and resumable) and calls the release callbacks of every other one, then removes
Streamlit's files of those sessions. A callback is held weakly: one whose object is gone (its
session state freed) is dropped; that object's own finalizer released what it held.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

from app.streamlit_private import forget_session_files, live_sessions, session_id

_lock = threading.Lock()
_callbacks: dict[str, list[weakref.WeakMethod]] = {}  # session id -> release callbacks


def on_end(release: Callable[[], None]) -> None:
    """Call the bound method `release` once the session running now has ended (see sweep)."""
    sid = session_id()
    if sid is None:
        return
    with _lock:
        alive = [ref for ref in _callbacks.get(sid, []) if ref() is not None]
        _callbacks[sid] = [*alive, weakref.WeakMethod(release)]


def sweep() -> list[str]:
    """Release what every ended session held; their ids."""
    live = live_sessions()
    if live is None:
        return []
    with _lock:
        ended = {sid: refs for sid, refs in _callbacks.items() if sid not in live}
        for sid in ended:
            del _callbacks[sid]
    for sid, refs in ended.items():
        for ref in refs:
            release = ref()
            if release is not None:
                release()
        forget_session_files(sid)
    return list(ended)
