"""The server's memory budget in bytes, shared by every browser session of one server (no
Streamlit).

One ByteBudgetCache counts everything big the server holds, in two kinds of entries: - shared
entries (models and runs any session can rebuild): evicted least recently used first, except those a
page is drawing right now (`holding`); - kept entries: what a browser session keeps that nobody
could rebuild (the models trained or uploaded in it, a training in progress). They are never
evicted; they leave when their session lets them go or ends (app.controls.session_models). Together
they may take at most KEPT_SHARE of the budget, so that pages can always be drawn. Building anything
(a forward pass, loading an upload, training) first reserves its estimated peak, so the entries plus
the one being built stay within the budget; builds run one at a time, so concurrent sessions cannot
add their peaks together (a long build, a cost measurement, keeps its peak reserved and builds
aside). What does not fit is refused with a MemoryRefused that says how much it needs and what
holds the budget."""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from torch import nn

from app.heap import release_freed_memory
from app.i18n import _, percent
from encoder.inspect.limits import RunTooLarge

log = logging.getLogger(__name__)

BUDGET_ENV = "ENCODER_EXPLORER_MEMORY_BUDGET"
DEFAULT_BUDGET = 2_000_000_000  # bytes over the idle server
SESSION_BUDGET_ENV = "ENCODER_EXPLORER_SESSION_BUDGET"
# Bytes one browser session may keep (app.controls.session_models): the largest upload (a 200 MB
# safetensors file, MAX_FILE_BYTES) with room to spare, five uploads of MiniLM (98 MB each), a
# quarter of the default budget: no one session can take the server from the others.
DEFAULT_SESSION_BUDGET = 500_000_000
KEPT_SHARE = 0.75  # of the budget, for what sessions keep; the rest is always left for runs
UNITS = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "B": 1}

V = TypeVar("V")


def parse_bytes(text: str, name: str = BUDGET_ENV) -> int:
    """'2GB', '500 MB', '1.5gb' or a plain number of bytes; ValueError naming the variable
    `name` and the text."""
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
        raise ValueError(f"{name}={text!r} is not a size such as 2GB or 500MB") from None
    if value <= 0:
        raise ValueError(f"{name}={text!r} must be more than 0 bytes")
    return int(value)


def budget_from_env(name: str = BUDGET_ENV, default: int = DEFAULT_BUDGET) -> int:
    raw = os.environ.get(name)
    return default if raw is None else parse_bytes(raw, name)


def gigabytes(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


def size_text(n: int) -> str:
    """A size for a message: '1.25 GB', '91 MB', '2.5 MB', '340 kB', '12 bytes'."""
    if n == 0:
        return "0 MB"
    if n >= 1e9:
        return gigabytes(n)
    if n >= 1e7:
        return f"{n / 1e6:.0f} MB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.0f} kB"
    return f"{n} bytes"


def tensor_bytes(modules: Iterable[nn.Module]) -> int:
    """Bytes of the modules' parameters and buffers, each storage counted once."""
    storages = {}
    for module in modules:
        for tensor in (*module.parameters(), *module.buffers()):
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


class MemoryRefused(RunTooLarge):
    """What was asked for does not fit in the memory budget now; the message says why."""


@dataclass
class _Entry:
    value: object
    size: int
    owner: Hashable | None = None  # the session that keeps it (never evicted); None: shared
    tag: str | None = None  # what it leaves with: a session model (its runs too), a training


class ByteBudgetCache:
    """get_or_build(key, build, size, reserve): the cached value, or build it within budget;
    make_room and keep: the bytes a session keeps; holding(): what a page draws stays."""

    def __init__(self, budget: int, kept_share: float = KEPT_SHARE) -> None:
        self.budget = budget
        self.kept_share = kept_share
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._held: Counter[Hashable] = Counter()  # shared entries pages are drawing
        self._lock = threading.Lock()  # guards _entries and _held
        self._building = threading.RLock()  # one build at a time (a run builds its model)
        self._reserved = 0  # bytes reserved for long builds running outside `_building`
        self._local = threading.local()  # .held: keys the thread's `holding` block got

    @property
    def used(self) -> int:
        with self._lock:
            return sum(entry.size for entry in self._entries.values())

    def _taken(self) -> int:
        """Under _lock: the entries' bytes and those reserved for builds running aside."""
        return self._reserved + sum(entry.size for entry in self._entries.values())

    @property
    def kept_limit(self) -> int:
        return int(self.budget * self.kept_share)

    def kept(self, owner: Hashable | None = None) -> int:
        """Bytes that sessions keep (`owner`: that session only)."""
        with self._lock:
            return sum(
                entry.size
                for entry in self._entries.values()
                if entry.owner is not None and owner in (None, entry.owner)
            )

    def tagged(self, tag: str) -> int:
        """Bytes of the entries tagged `tag` (a session model, its runs)."""
        with self._lock:
            return sum(entry.size for entry in self._entries.values() if entry.tag == tag)

    @property
    def held(self) -> int:
        """Bytes of shared entries that pages are drawing right now."""
        with self._lock:
            return sum(self._entries[key].size for key in self._held if key in self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Entries this thread gets or builds inside the block are not evicted before it ends:
        a page is drawing them (and they stay in memory whatever the cache says)."""
        outer = getattr(self._local, "held", None)
        held: set[Hashable] = set()
        self._local.held = held
        try:
            yield
        finally:
            self._local.held = outer
            self._let_go(held)

    def _let_go(self, keys: Iterable[Hashable]) -> None:
        """Held once less: `keys` (held once each)."""
        with self._lock:
            for key in keys:
                self._held[key] -= 1
                if self._held[key] <= 0:
                    del self._held[key]

    def _hold(self, key: Hashable) -> None:
        """Under _lock: `key` is in use by this thread's `holding` block, if any."""
        held = getattr(self._local, "held", None)
        if held is not None and key not in held:
            held.add(key)
            self._held[key] += 1

    def building(self):
        """The lock of building: hold it from make_room until keep, so that no build takes the
        room meanwhile (reentrant)."""
        return self._building

    def _lookup(self, key: Hashable) -> tuple[bool, object]:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self._hold(key)
                return True, self._entries[key].value
        return False, None

    def _evict_until(self, free: int, keep: Iterable[Hashable]) -> int:
        """Drop least recently used shared entries, except those held and `keep`, until `free`
        bytes fit beside the rest; the bytes the rest hold."""
        evicted, freed = 0, 0
        keep = set(keep)
        with self._lock:
            total = self._taken()
            for key, entry in list(self._entries.items()):
                if total + free <= self.budget:
                    break
                if entry.owner is None and key not in self._held and key not in keep:
                    del self._entries[key]
                    total -= entry.size
                    evicted, freed = evicted + 1, freed + entry.size
        if evicted:
            log.info("evicted %d cached entries (%s) to make room", evicted, size_text(freed))
            release_freed_memory()
        return total

    def _short_of(
        self, nbytes: int, what: str, keep: set, kept: int, kept_by: Hashable | None
    ) -> tuple[int, str]:
        """make_room's question: how many bytes evicting cannot free, and a sentence saying what
        holds the budget; (0, "") when they fit."""
        with self._lock:
            total = self._taken()
            evictable = sum(
                entry.size
                for key, entry in self._entries.items()
                if entry.owner is None and key not in self._held and key not in keep
            )
        kept_now, own = self.kept(), self.kept(kept_by) if kept_by is not None else 0
        over_budget = total - evictable + nbytes - self.budget
        over_kept = kept_now + kept - self.kept_limit if kept else 0
        if over_kept > 0:
            return max(over_kept, over_budget), _(
                "{what} needs about {size} of memory; the models that browser sessions "
                "keep may take {limit} together on this server ({share} of its memory "
                "limit of {budget}), and they take {now} now ({own} of them this "
                "session's). Try again when other sessions have ended.",
                what=what,
                size=size_text(kept),
                limit=size_text(self.kept_limit),
                share=percent(self.kept_share),
                budget=size_text(self.budget),
                now=size_text(kept_now),
                own=size_text(own),
            )
        if over_budget > 0:
            return over_budget, _(
                "{what} needs about {size} of memory at its peak; the server's memory is "
                "limited to {budget}, and models that browser sessions keep take {kept} of "
                "it, pages being drawn right now {held}. Try again in a moment, or once "
                "other sessions have ended.",
                what=what,
                size=size_text(nbytes),
                budget=size_text(self.budget),
                kept=size_text(kept_now),
                held=size_text(self.held),
            )
        return 0, ""

    def make_room(
        self,
        nbytes: int,
        what: str,
        keep: Iterable[Hashable] = (),
        kept: int = 0,
        kept_by: Hashable | None = None,
        check_only: bool = False,
    ) -> tuple[int, str]:
        """Room for `nbytes` more, of which session `kept_by` will keep `kept` (within kept_limit
        too): evict least recently used shared entries (not those held, nor `keep`) until they
        fit, or raise MemoryRefused with a sentence saying what holds the budget. `check_only`:
        change nothing, and return (how many bytes evicting cannot free, that sentence), or
        (0, "") when they fit."""
        keep = set(keep)
        with self._building:
            short, why = self._short_of(nbytes, what, keep, kept, kept_by)
            if check_only:
                return short, why
            if short > 0:
                log.warning("refused: %s (the budget: %s)", why, BUDGET_ENV)
                raise MemoryRefused(why)
            self._evict_until(nbytes, keep)
            return 0, ""

    def keep(self, key: Hashable, nbytes: int, owner: Hashable, tag: str | None = None) -> None:
        """Count `nbytes` that session `owner` keeps (after make_room, under `building`)."""
        with self._lock:
            self._entries[key] = _Entry(None, nbytes, owner, tag)

    def release(self, owner: Hashable | None = None, tags: Iterable[str] = ()) -> int:
        """Forget what session `owner` keeps, and everything tagged with one of `tags` or with a
        model `owner` keeps (runs of it); the bytes forgotten."""
        tags = set(tags)
        with self._lock:
            if owner is not None:
                tags |= {e.tag for e in self._entries.values() if e.owner == owner and e.tag}
            gone = [
                key
                for key, entry in self._entries.items()
                if (owner is not None and entry.owner == owner) or entry.tag in tags
            ]
            freed = sum(self._entries.pop(key).size for key in gone)
        if gone:
            log.info("released %d entries (%s) of a session's models", len(gone), size_text(freed))
            release_freed_memory()
        return freed

    def get_or_build(
        self,
        key: Hashable,
        build: Callable[[], V],
        size: Callable[[V], int],
        reserve: int,
        what: str,
        keep: tuple[Hashable, ...] = (),
        tag: str | None = None,
        aside: bool = False,
    ) -> V:
        """`reserve`: the estimated peak bytes of building; `what` names it in messages;
        `keep`: entries the build uses, never evicted to make room for it; `tag`: the session
        model it derives from (it leaves with that model). `aside`: a long build (a measurement
        of a minute) reserves its room and holds `keep` under the building lock, then builds
        without it, so that every other page's runs go on meanwhile."""
        found, value = self._lookup(key)
        if found:
            return value  # type: ignore[return-value]
        if reserve > self.budget:
            log.warning(
                "refused: %s needs %s, over the budget of %s (%s)",
                what, size_text(reserve), size_text(self.budget), BUDGET_ENV,
            )  # fmt: skip
            raise RunTooLarge(
                _(
                    "{what} would need about {size} of memory while it runs; this server's "
                    "memory is limited to {budget}. Use shorter or fewer sentences, or a "
                    "smaller model.",
                    what=what,
                    size=gigabytes(reserve),
                    budget=gigabytes(self.budget),
                )
            )
        with self._building:
            found, value = self._lookup(key)  # built by another session meanwhile
            if found:
                return value  # type: ignore[return-value]
            self.make_room(reserve, what, keep)
            if not aside:
                return self._store(key, build(), size, what, keep, tag)
            with self._lock:
                self._reserved += reserve
                self._held.update(set(keep))
        try:
            value = build()
        finally:
            with self._lock:
                self._reserved -= reserve
            self._let_go(set(keep))
        with self._building:
            return self._store(key, value, size, what, keep, tag)

    def _store(self, key, value: V, size, what: str, keep, tag: str | None) -> V:
        """Under `_building`: keep a value just built, within budget."""
        nbytes = size(value)
        if nbytes > self.budget:
            log.warning(
                "refused: %s holds %s, over the budget of %s (%s)",
                what, size_text(nbytes), size_text(self.budget), BUDGET_ENV,
            )  # fmt: skip
            raise RunTooLarge(
                _(
                    "{what} holds {size}; this server's memory is limited to {budget}.",
                    what=what,
                    size=gigabytes(nbytes),
                    budget=gigabytes(self.budget),
                )
            )
        self.make_room(nbytes, what, keep)
        with self._lock:
            self._entries[key] = _Entry(value, nbytes, tag=tag)
            self._hold(key)
        log.info("loaded: %s, %s (cache now %s)", what, size_text(nbytes), size_text(self.used))
        return value

    def clear(self) -> None:
        """Forget every shared entry (what sessions keep stays counted)."""
        with self._lock:
            for key in [k for k, entry in self._entries.items() if entry.owner is None]:
                del self._entries[key]
        release_freed_memory()


# The one budget of the server: every model and run, and what every browser session keeps.
CACHE = ByteBudgetCache(budget_from_env())
