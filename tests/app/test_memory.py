"""The server's memory is a budget in bytes: cached runs and models are evicted, least recently
used first, and a run that alone exceeds the budget is refused with its size and the budget."""

from __future__ import annotations

import gc
import random
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest

from app import heap, runs
from app.memory import ByteBudgetCache, MemoryRefused, parse_bytes
from encoder.inspect.limits import RunTooLarge
from tests.app.helpers import open_page

ROOT = Path(__file__).resolve().parents[2]

WORDS = [
    "the",
    "teacher",
    "shows",
    "a",
    "class",
    "how",
    "attention",
    "mixes",
    "every",
    "word",
    "with",
    "every",
    "other",
    "word",
    "while",
    "students",
    "type",
    "long",
    "sentences",
    "about",
    "rivers",
    "mountains",
    "cities",
    "music",
    "history",
    "science",
    "water",
    "light",
    "energy",
    "language",
    "numbers",
    "trains",
    "gardens",
    "animals",
    "weather",
    "stories",
    "games",
    "colours",
]


def rss_bytes(field: str = "VmRSS") -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def long_input(seed: int, sentences: int = 6, words: int = 470) -> str:
    """`sentences` lines of about `words` words each, different for every seed."""
    rng = random.Random(seed)
    return "\n".join(" ".join(rng.choices(WORDS, k=words)) for _ in range(sentences))


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
@pytest.mark.slow
@pytest.mark.timeout(600)  # twelve long inputs at 6 layers x 512: 230 s on a busy 2-core machine
def test_many_long_inputs_keep_the_server_within_its_memory_budget():
    setup = {"num_layers": "6", "num_heads": "8", "d_model": "512", "d_ff": "2048"}
    at = open_page(timeout_s=300, text="warm up", **setup)  # imports, tokenizer, fonts: idle
    runs.CACHE.clear()
    gc.collect()
    heap.release_freed_memory()
    idle = rss_bytes()
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS, to see this test's peak
    sizes = []
    for seed in range(12):
        at.text_area(key="text").set_value(long_input(seed)).run()
        assert not at.exception, [e.message for e in at.exception]
        assert not at.error, [e.value for e in at.error]
        sizes.append(rss_bytes() - idle)
    peak = rss_bytes("VmHWM") - idle
    print(
        f"idle {idle / 1e9:.2f} GB; after each input (GB over idle): "
        + ", ".join(f"{s / 1e9:.2f}" for s in sizes)
        + f"; peak {peak / 1e9:.2f} GB; "
        f"cache holds {len(runs.CACHE)} entries, {runs.CACHE.used / 1e9:.2f} GB"
    )
    assert runs.CACHE.used <= runs.CACHE.budget
    assert peak <= runs.CACHE.budget, f"peak {peak / 1e9:.2f} GB over the idle server"
    # The inputs alone would need far more than the budget, so the bound did the work.
    assert len(runs.CACHE) < 12


def test_cache_evicts_the_least_recently_used_entries_by_size():
    cache = ByteBudgetCache(budget=100)
    builds = []

    def get(key, size):
        return cache.get_or_build(key, lambda: builds.append(key) or key, lambda v: size, 0, key)

    get("a", 40), get("b", 40)
    get("a", 40)  # a is now the most recent
    get("c", 40)  # b goes
    assert builds == ["a", "b", "c"] and cache.used == 80
    get("a", 40)
    assert builds == ["a", "b", "c"]  # a was kept
    get("b", 40)
    assert builds[-1] == "b" and cache.used == 80  # rebuilt; c went


def test_building_reserves_room_first_and_keeps_what_it_uses():
    cache = ByteBudgetCache(budget=100)
    cache.get_or_build("model", lambda: "m", lambda v: 30, 0, "model")
    cache.get_or_build("old", lambda: "o", lambda v: 30, 0, "old")
    seen = []
    cache.get_or_build(
        "run", lambda: seen.append(cache.used) or "r", lambda v: 10, 60, "run", keep=("model",)
    )
    assert seen == [30]  # "old" was evicted before building, "model" kept


def test_a_run_larger_than_the_budget_is_refused_with_both_sizes():
    cache = ByteBudgetCache(budget=2_000_000_000)
    with pytest.raises(RunTooLarge, match=r"This run would need about 3.00 GB.*limited to 2.00 GB"):
        cache.get_or_build("k", lambda: None, lambda v: 0, 3_000_000_000, "This run")
    with pytest.raises(RunTooLarge, match=r"This run holds 2.50 GB.*limited to 2.00 GB"):
        cache.get_or_build("k", lambda: "x", lambda v: 2_500_000_000, 0, "This run")
    assert len(cache) == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2GB", 2_000_000_000), ("500 MB", 500_000_000), ("1.5gb", 1_500_000_000), ("1234", 1234)],
)
def test_budget_sizes_parse(text, expected):
    assert parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["lots", "-1GB", "0"])
def test_a_bad_budget_is_an_error_naming_it(text):
    with pytest.raises(ValueError, match="ENCODER_EXPLORER_MEMORY_BUDGET="):
        parse_bytes(text)


def test_the_page_refuses_a_run_over_the_budget_with_its_size(monkeypatch):
    monkeypatch.setattr(runs.CACHE, "budget", 50_000_000)
    runs.CACHE.clear()
    at = open_page(text=long_input(99, sentences=4, words=400))
    assert not at.exception
    messages = [e.value.replace("\\", "") for e in at.error]  # shown literally: escaped markdown
    assert any(
        "memory is limited to 0.05 GB" in m and "ENCODER_EXPLORER" not in m for m in messages
    ), messages


def test_what_sessions_keep_is_never_evicted_and_counts_in_the_budget():
    cache = ByteBudgetCache(budget=100)
    cache.get_or_build("run", lambda: "r", lambda v: 30, 0, "run")
    cache.make_room(50, "An upload", kept=50, kept_by="s1")
    cache.keep("upload", 50, owner="s1", tag="m1")
    assert cache.used == 80 and cache.kept() == 50 and cache.kept("s1") == 50
    cache.get_or_build("other", lambda: "o", lambda v: 40, 0, "run")  # "run" goes, not "upload"
    assert cache.used == 90 and cache.kept() == 50
    with pytest.raises(MemoryRefused, match=r"needs about .* at its peak; .*limited to"):
        cache.get_or_build("big", lambda: "b", lambda v: 10, 60, "This run")  # 50 kept + 60
    assert cache.used <= cache.budget
    # a run of the kept model leaves with it; the session's end releases the rest
    cache.get_or_build("run of m1", lambda: "r1", lambda v: 10, 0, "run", tag="m1")
    assert cache.release(tags=["m1"]) == 60 and cache.kept() == 0
    cache.keep("upload 2", 20, owner="s1", tag="m2")
    cache.get_or_build("run of m2", lambda: "r2", lambda v: 5, 0, "run", tag="m2")
    assert cache.release("s1") == 25 and cache.kept() == 0


def test_sessions_keep_at_most_their_share_and_the_refusal_says_so():
    cache = ByteBudgetCache(budget=1_000_000_000, kept_share=0.75)
    cache.keep("a", 700_000_000, owner="s1")
    short, why = cache.make_room(
        100_000_000, "This upload", kept=100_000_000, kept_by="s2", check_only=True
    )
    assert short == 50_000_000
    assert why == (
        "This upload needs about 100 MB of memory; the models that browser sessions keep may "
        "take 750 MB together on this server (75% of its memory limit of 1.00 GB), and they "
        "take 700 MB now (0 MB of them this "
        "session's). Try again when other sessions have ended."
    )
    with pytest.raises(MemoryRefused) as refused:
        cache.make_room(100_000_000, "This upload", kept=100_000_000, kept_by="s2")
    assert str(refused.value) == why


def test_entries_a_page_is_drawing_are_not_evicted_for_another_session():
    mb = 1_000_000
    cache = ByteBudgetCache(budget=100 * mb)
    seen = threading.Event()
    done = threading.Event()

    def page() -> None:  # another session's script, drawing its run
        with cache.holding():
            cache.get_or_build("drawn", lambda: "d", lambda v: 60 * mb, 0, "run")
            seen.set()
            done.wait(10)

    thread = threading.Thread(target=page)
    thread.start()
    assert seen.wait(10)
    assert cache.held == 60 * mb
    with pytest.raises(MemoryRefused) as refused:
        cache.get_or_build("mine", lambda: "m", lambda v: 10 * mb, 50 * mb, "This run")
    assert str(refused.value) == (
        "This run needs about 50 MB of memory at its peak; the server's memory is limited to "
        "100 MB, and models that browser sessions keep take 0 MB of "
        "it, pages being drawn right now 60 MB. Try again in a moment, or once other sessions "
        "have ended."
    )
    assert cache.used == 60 * mb
    done.set()
    thread.join()
    assert cache.held == 0
    cache.get_or_build("mine", lambda: "m", lambda v: 10 * mb, 50 * mb, "This run")
    assert cache.used == 10 * mb  # the page was drawn: its run could go


def test_a_long_build_aside_holds_its_room_and_what_it_uses_but_no_other_build():
    """A cost measurement (a minute) builds aside: another page's run is built meanwhile, within
    what is left of the budget, and cannot evict the model the measurement uses."""
    cache = ByteBudgetCache(budget=100)
    cache.get_or_build("model", lambda: "m", lambda v: 30, 0, "model")
    measuring, finish = threading.Event(), threading.Event()
    measured = []

    def measure() -> str:
        measuring.set()
        assert finish.wait(10)
        return "report"

    def measurement() -> None:
        value = cache.get_or_build(
            "cost", measure, lambda v: 5, 40, "A measurement", keep=("model",), aside=True
        )
        measured.append(value)

    thread = threading.Thread(target=measurement)
    thread.start()
    try:
        assert measuring.wait(10)
        # not held up by the measurement: 30 bytes left beside the model (30) and its reserve (40)
        assert cache.get_or_build("run", lambda: "r", lambda v: 20, 30, "This run") == "r"
        with pytest.raises(MemoryRefused, match="This run needs about 31 bytes of memory"):
            cache.get_or_build("big", lambda: "b", lambda v: 1, 31, "This run")
        cache.get_or_build("other", lambda: "o", lambda v: 1, 30, "This run")
        assert cache.used == 31  # "run" went to make room; "model" stayed, in use
    finally:
        finish.set()
        thread.join()
    assert measured == ["report"] and cache.used == 36 and cache.held == 0
    assert cache.get_or_build("big", lambda: "b", lambda v: 1, 31, "This run") == "b"


def test_the_startup_heap_is_frozen_once_out_of_the_collectors_walk():
    """Streamlit collects garbage after every run; what the imports made is frozen first, so a
    collection walks a small remainder (a fresh process: the test's own heap stays as it is)."""
    script = (
        "import gc, plotly.graph_objects, streamlit, torch\n"
        "from app.heap import freeze_startup_heap\n"
        "before = len(gc.get_objects())\n"
        "freeze_startup_heap()\n"
        "frozen, left = gc.get_freeze_count(), len(gc.get_objects())\n"
        "freeze_startup_heap()\n"
        "print(before, frozen, left, gc.get_freeze_count())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    before, frozen, left, again = map(int, done.stdout.split())
    assert frozen >= 0.9 * before > 100_000  # the imports' objects, out of the walk
    assert left < 0.05 * before
    assert again == frozen  # once a process


def test_a_page_asks_for_a_collection_and_a_thread_of_its_own_collects_soon_after(
    monkeypatch,
) -> None:
    class Node:  # a cycle: reference counting alone never frees it
        pass

    collect, collected_in = gc.collect, []

    def recorded() -> int:
        collected_in.append(threading.current_thread())
        return collect()

    monkeypatch.setattr(heap.gc, "collect", recorded)
    collect()
    gc.disable()  # only the page's collection may free it
    try:
        node = Node()
        node.itself = node
        gone = threading.Event()
        weakref.finalize(node, gone.set)
        del node
        heap.collect_garbage()
        assert gone.wait(timeout=5)
    finally:
        gc.enable()
    assert collected_in and threading.current_thread() not in collected_in  # not the page's
