"""The server's memory is a budget in bytes: cached runs and models are evicted, least recently
used first, and a run that alone exceeds the budget is refused with its size and the budget."""

from __future__ import annotations

import gc
import random
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import memory, runs
from app.memory import ByteBudgetCache, parse_bytes
from encoder.inspect.limits import RunTooLarge

APP = str(Path(__file__).resolve().parent.parent / "app" / "main.py")
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
def test_many_long_inputs_keep_the_server_within_its_memory_budget():
    setup = {"num_layers": "6", "num_heads": "8", "d_model": "512", "d_ff": "2048"}
    at = AppTest.from_file(APP, default_timeout=300)
    for key, value in setup.items():
        at.query_params[key] = value
    at.query_params["text"] = "warm up"
    at.run()  # imports, tokenizer, fonts: the idle server
    runs.CACHE.clear()
    gc.collect()
    memory.release_freed_memory()
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
    with pytest.raises(RunTooLarge, match=r"This run would need about 3.00 GB.*budget is 2.00 GB"):
        cache.get_or_build("k", lambda: None, lambda v: 0, 3_000_000_000, "This run")
    with pytest.raises(RunTooLarge, match=r"This run holds 2.50 GB.*budget is 2.00 GB"):
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
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["text"] = long_input(99, sentences=4, words=400)
    at.run()
    assert not at.exception
    messages = [e.value.replace("\\", "") for e in at.error]  # shown literally: escaped markdown
    assert any(
        "memory budget is 0.05 GB" in m and "ENCODER_EXPLORER_MEMORY_BUDGET" in m for m in messages
    ), messages
