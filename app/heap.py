"""The server process's heap: big tensors from mmap, freed memory handed back to the system, the
startup's objects out of the garbage collector's walk, and cycles collected once a page is drawn
(no Streamlit)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import threading
import time

M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc


def _glibc() -> ctypes.CDLL | None:
    """glibc, set so that big tensors come from mmap and go back to the system when freed
    (by default the threshold rises to 32 MB after the first large free, and freed heap memory
    often stays with the process); None on other systems."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)
    return libc


_LIBC = _glibc()


def release_freed_memory() -> None:
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


@functools.cache  # once a process
def freeze_startup_heap() -> None:
    """Move what the imports made (torch, pandas, plotly, Streamlit: millions of objects) out of
    the cyclic garbage collector's sight: walking all of them took about 0.2 s of every
    collection on this machine (collect_garbage). Frozen objects are still freed by reference
    counting; only a cycle among them would stay. So it runs before any session exists
    (`frozen_at_start`): frozen in a session's first run, that session's state was frozen with it,
    and its cycles, with all it held (its models, its training), stayed after it ended."""
    gc.collect()
    gc.freeze()


@contextlib.asynccontextmanager
async def frozen_at_start(_app):
    """The server's lifespan (app/main.py's st.App): the startup heap frozen as the server starts,
    its imports done and no browser session yet."""
    freeze_startup_heap()
    yield


COLLECT_AFTER_S = 0.05  # the page's last messages leave first


def collect_garbage() -> None:
    """Collect cycles once a whole page is drawn (the page's last step asks; a thread of its own
    collects COLLECT_AFTER_S later, after the run has told the browser it is over, and the pages
    that ask meanwhile share that collection). In the page's own thread, the collection (about
    4 ms with MiniLM here) came before the browser heard that the run was over. Streamlit's own
    collection after every run (runner.postScriptGC) is off in app/.streamlit/config.toml: it
    also ran after each fragment run, a class's polls twice a second a student, and took 80% of
    an idle class's server time (10 students, py-spy)."""
    _collector().set()


@functools.cache  # one thread a process
def _collector() -> threading.Event:
    """The event that asks the collecting thread for a collection (the thread started once)."""
    asked = threading.Event()

    def collect_when_asked() -> None:
        while True:
            asked.wait()
            asked.clear()
            time.sleep(COLLECT_AFTER_S)
            gc.collect()

    threading.Thread(target=collect_when_asked, name="collect-garbage", daemon=True).start()
    return asked
