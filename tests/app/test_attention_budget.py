"""What the Attention view computes beyond the runs (compare mode's differences, the effect of
heads switched off, the explorer's payload) lives in the shared memory budget: computed once and
kept with its real bytes, or refused with the budget's message and not computed."""

from __future__ import annotations

import numpy as np
import pytest

from app import runs
from app.memory import CACHE
from tests.app.helpers import assert_no_exception, open_page, shown

SMALL = {"d_model": "64", "num_heads": "4", "num_layers": "3", "d_ff": "128"}


@pytest.fixture
def calls(monkeypatch):
    """How many times the view's comparisons are computed: {"comparison": n, "ablation": n}."""
    counted = {"comparison": 0, "ablation": 0}

    def counting(name, compute):
        def wrapper(*args):
            counted[name] += 1
            return compute(*args)

        return wrapper

    monkeypatch.setattr(runs, "compare_traces", counting("comparison", runs.compare_traces))
    monkeypatch.setattr(runs.ablation, "compare", counting("ablation", runs.ablation.compare))
    CACHE.clear()
    return counted


def entries(kind: str) -> list:
    return [entry for key, entry in CACHE._entries.items() if key[0] == kind]


def test_the_ablation_effect_is_cached_with_its_bytes_and_not_recomputed(calls) -> None:
    at = open_page(view="Attention", ablate="1.2", **SMALL)
    assert_no_exception(at)
    (entry,) = entries("ablation")
    effect = entry.value
    arrays = [v for v in vars(effect).values() if isinstance(v, np.ndarray)]
    assert entry.size >= sum(array.nbytes for array in arrays) > 0
    at.toggle(key="stretch").set_value(True).run()  # a rerun that changes no run
    assert_no_exception(at)
    assert calls["ablation"] == 1


def test_compare_mode_s_differences_are_cached_and_not_recomputed(calls) -> None:
    at = open_page(view="Attention", compare="1", b_norm="post", **SMALL)
    assert_no_exception(at)
    (entry,) = entries("comparison")
    assert entry.size >= entry.value.attention_difference.nbytes > 0
    at.toggle(key="stretch").set_value(True).run()
    at.run()
    assert_no_exception(at)
    assert calls["comparison"] == 1


@pytest.mark.parametrize("where", ["ablate", "compare"])
def test_what_does_not_fit_is_refused_with_the_budget_message_and_not_computed(
    calls, monkeypatch, where
) -> None:
    monkeypatch.setattr(runs, "_comparison_reserve", lambda a, b: 10 * CACHE.budget)
    query = {"ablate": "1.2"} if where == "ablate" else {"compare": "1", "b_norm": "post"}
    at = open_page(view="Attention", **query, **SMALL)
    assert_no_exception(at)
    messages = [shown(e.value) for e in at.error] + [shown(c.value) for c in at.caption]
    refused = [m for m in messages if "memory is limited to" in m]
    assert refused and "ENCODER_EXPLORER" not in refused[0], messages
    assert calls == {"comparison": 0, "ablation": 0}
    assert at.get("bidi_component")  # the explorer is drawn all the same
