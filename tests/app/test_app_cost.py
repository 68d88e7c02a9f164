"""The Cost view and the Training view's checkpointing through AppTest: the measured numbers
on the page are the report's, measured once per configuration, for both setups in compare
mode."""

from __future__ import annotations

import re

from app import runs
from encoder.measure.scaling import crossover_tokens
from tests.app.helpers import assert_no_exception, figure, open_page, page_model, shown

TINY = {"d_model": "32", "num_heads": "4", "num_layers": "2", "d_ff": "64"}


def test_the_cost_view_answers_its_four_questions_with_the_measured_numbers(monkeypatch):
    measured = []
    real = runs.cost_report
    monkeypatch.setattr(runs, "cost_report", lambda *a, **k: measured.append(1) or real(*a, **k))
    runs.CACHE.clear()
    at = open_page(view="Cost", seed="11", **TINY)
    assert_no_exception(at)
    subheaders = [s.value for s in at.subheader]
    assert subheaders == [
        "Time per operation",
        "Time against length",
        "Memory for training",
        "Gradient flow at initialisation",
    ]
    sentences = [shown(i.value) for i in at.info]
    cfg = page_model(d_model=32, num_heads=4, num_layers=2, d_ff=64, seed=11).cfg
    assert f"at n = {crossover_tokens(cfg):,} tokens" in sentences[1] and "n = 64" in sentences[1]
    assert (
        "The slowest operation is" in sentences[0] and "Checkpointing every block" in sentences[2]
    )
    findings = [m.value for m in at.markdown if m.value.startswith("- **")]
    assert len(findings) == 1 and findings[0].count("The paper:") >= 3
    operations = figure(at, "cost_operations")
    assert operations["data"] and "FLOP" in str(operations["layout"])
    assert measured == [1]
    again = open_page(view="Cost", seed="11", **TINY)  # the same configuration: remembered
    assert_no_exception(again)
    assert measured == [1] and [shown(i.value) for i in again.info] == sentences


def test_compare_mode_measures_both_setups():
    at = open_page(view="Cost", compare="1", b_norm="post", **TINY)
    assert_no_exception(at)
    keys = [c.proto.id for c in at.get("plotly_chart")]
    assert any(k.endswith("cost_scaling") for k in keys)
    assert any(k.endswith("cost_scaling_b") for k in keys)
    assert len(at.info) == 6  # three measured sentences per setup


def test_training_offers_checkpointing_and_says_what_it_saves_and_costs():
    at = open_page(view="Training", **TINY)
    at.toggle(key="train_checkpoint").set_value(True).run()
    assert_no_exception(at)
    note = next(c.value for c in at.caption if c.value.startswith("Checkpointing:"))
    kept, instead = (float(x) for x in re.findall(r"([\d.]+) MB", note)[:2])
    assert 0 < kept < instead
    assert re.search(r"takes [\d.]+x as long", note)
    at.number_input(key="train_steps").set_value(5).run()
    at.button(key="train_start").click().run()
    for _ in range(20):
        if not at.session_state["_training_lab"].job.running:
            break
        at.run()
    result = at.session_state["_training_lab"].job.results["pre-norm"]
    assert result.config.checkpoint_blocks and len(result.history) == 5
