"""A cache bounded in bytes, shared by every browser session of one server (no Streamlit).

Entries are evicted least recently used first. Building an entry (a forward pass) first reserves
its estimated peak, so cached entries plus the one being built stay within the budget; builds run
one at a time, so concurrent sessions cannot add their peaks together.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from encoder.inspect.limits import RunTooLarge

BUDGET_ENV = "ENCODER_EXPLORER_MEMORY_BUDGET"
DEFAULT_BUDGET = 2_000_000_000  # bytes over the idle server
UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "B": 1}

V = TypeVar("V")


def parse_bytes(text: str) -> int:
    """'2GB', '500 MB', '1.5gb' or a plain number of bytes; ValueError naming the text."""
    cleaned = text.strip().upper().replace(" ", "")
    for unit, factor in UNITS.items():
        if cleaned.endswith(unit):
            number, scale = cleaned.removesuffix(unit), factor
            break
    else:
        number, scale = cleaned, 1
    try:
        value = float(number) * scale
    except ValueError:
        raise ValueError(f"{BUDGET_ENV}={text!r} is not a size such as 2GB or 500MB") from None
    if value <= 0:
        raise ValueError(f"{BUDGET_ENV}={text!r} must be more than 0 bytes")
    return int(value)


def budget_from_env() -> int:
    raw = os.environ.get(BUDGET_ENV)
    return DEFAULT_BUDGET if raw is None else parse_bytes(raw)


def gigabytes(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


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


class ByteBudgetCache:
    """get_or_build(key, build, size, reserve): the cached value, or build it within budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()  # guards _entries
        self._building = threading.RLock()  # one build at a time (a run builds its model)

    @property
    def used(self) -> int:
        with self._lock:
            return sum(size for _, size in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def _lookup(self, key: Hashable) -> tuple[bool, object]:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return True, self._entries[key][0]
        return False, None

    def _evict_until(self, free: int, keep: tuple[Hashable, ...]) -> None:
        """Drop least recently used entries, except `keep`, until `free` bytes fit beside the
        rest."""
        evicted = False
        with self._lock:
            total = sum(size for _, size in self._entries.values())
            for key in [k for k in self._entries if k not in keep]:
                if total + free <= self.budget:
                    break
                total -= self._entries.pop(key)[1]
                evicted = True
        if evicted:
            release_freed_memory()

    def get_or_build(
        self,
        key: Hashable,
        build: Callable[[], V],
        size: Callable[[V], int],
        reserve: int,
        what: str,
        keep: tuple[Hashable, ...] = (),
    ) -> V:
        """`reserve`: the estimated peak bytes of building; `what` names it in messages;
        `keep`: entries the build uses, never evicted to make room for it."""
        found, value = self._lookup(key)
        if found:
            return value  # type: ignore[return-value]
        if reserve > self.budget:
            raise RunTooLarge(
                f"{what} would need about {gigabytes(reserve)} of memory while it runs; the "
                f"server's memory budget is {gigabytes(self.budget)} ({BUDGET_ENV}). Use shorter "
                "or fewer sentences, or a smaller model."
            )
        with self._building:
            found, value = self._lookup(key)  # built by another session meanwhile
            if found:
                return value  # type: ignore[return-value]
            self._evict_until(reserve, keep)
            value = build()
            nbytes = size(value)
            if nbytes > self.budget:
                raise RunTooLarge(
                    f"{what} holds {gigabytes(nbytes)}; the server's memory budget is "
                    f"{gigabytes(self.budget)} ({BUDGET_ENV})."
                )
            self._evict_until(nbytes, keep)
            with self._lock:
                self._entries[key] = (value, nbytes)
            return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
        release_freed_memory()
