"""The Cost view and the Training view's checkpointing through AppTest: what the shapes tell is
drawn at once, the measured numbers follow from a background measurement (once per architecture
and device), for both setups in compare mode; each sentence says what its numbers show."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app import jobs, runs
from app.sources import pretrained_config
from app.views import cost
from encoder import TransformerEncoder
from encoder.core import block
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.measure.scaling import crossover_tokens
from tests.app.helpers import (
    TINY,
    array,
    assert_no_exception,
    figure,
    measured_page,
    open_page,
    page_model,
    report_of,
    shown,
)

TEXT = "The cat sat on the mat."


def test_the_cost_view_draws_what_the_shapes_tell_at_once_then_the_measured_numbers(
    monkeypatch,
):
    measured = []
    real = jobs.cost_report
    drawn = threading.Event()  # the page's first run has been read

    def slow(*args, **kwargs):
        measured.append(1)
        drawn.wait(timeout=60)  # the measurement ends only after the page was drawn without it
        return real(*args, **kwargs)

    monkeypatch.setattr(jobs, "cost_report", slow)
    runs.CACHE.clear()
    at = open_page(view="Cost", seed="11", text=TEXT, timing="1", **TINY)
    assert_no_exception(at)
    # drawn at once, from the shapes: the FLOPs per operation and what they say
    cfg = page_model(d_model=32, num_heads=4, num_layers=2, d_ff=64, seed=11).cfg
    B, T = tokenize([TEXT], load_tokenizer(), cfg.max_len).input_ids.shape
    ops = block.model_ops(cfg, B, T)
    flops = sum(op.total_flops for op in ops)
    params = sum(op.params for op in ops)
    known = shown(at.info[0].value)
    assert f"{params:,} parameters" in known and f"does {flops:,} FLOPs" in known
    assert f"({B} × {T} tokens" in known
    bars = figure(at, "cost_flops")["data"][0]
    assert array(bars["x"]).sum() == pytest.approx(100, abs=0.1)
    [bar] = at.get("progress")
    assert "in the background" in bar.proto.text
    assert [s.value for s in at.main.header] == ["What the shapes tell"]
    drawn.set()
    # then, with no action but the fragment's polling, the measured numbers
    measured_page(at)
    assert_no_exception(at)
    assert [s.value for s in at.main.header] == ["Time per operation", "What the shapes tell"]
    report = jobs.cost_job(cfg, None, "cpu", None, None, cost.BUDGET_S).report.to_dict()
    sentences = [shown(i.value) for i in at.info]
    assert sentences[-1] == known
    timing = sentences[0]
    assert f"takes {report['total_ms']:.1f} ms: the median of {report['repeats']} timed" in timing
    assert f"add up to {report['ops_ms']:.1f} ms, {report['ops_over_total']:.0%} of" in timing
    assert "status line's traced forward pass" in timing
    assert "cost_scaling" not in str([c.proto.id for c in at.get("plotly_chart")])  # closed tab
    at.session_state["cost_section_A"] = "Time against length"
    scaling = shown(at.run().info[0].value)
    assert f"at n = {crossover_tokens(cfg):,} tokens" in scaling and "n = 64" in scaling
    assert figure(at, "cost_scaling")["data"]
    at.session_state["cost_section_A"] = "Memory for training"
    assert "Checkpointing every block" in shown(at.run().info[0].value)
    at.session_state["cost_section_A"] = "Gradient flow at initialisation"
    at.run()
    status = next(c.value for c in at.caption if c.value.startswith("Device "))
    assert "traced forward pass" in status and "hooks capturing" in status
    findings = [m.value for m in at.markdown if m.value.startswith("- **")]
    assert len(findings) == 1 and findings[0].count("The paper:") >= 3
    assert measured == [1]
    again = open_page(view="Cost", seed="11", text="Another text.", **TINY)  # same architecture
    assert_no_exception(again)
    assert not again.get("progress") and measured == [1]
    assert "the text that was in the box when this architecture was first measured" in shown(
        again.info[0].value
    )


def test_the_time_sentence_names_each_measure_and_states_only_what_its_numbers_show():
    sentence = cost.time_sentence(report_of(), (1, 8))
    assert "without hooks of 1 × 8 tokens (this batch) takes 9.0 ms: the median of 7" in sentence
    assert "add up to 10.0 ms, 111% of the pass without hooks" in sentence
    assert "linear1: 60% of that sum for 80% of the FLOPs" in sentence
    assert "do 20.0% of the FLOPs but take 40% of the time" in sentence  # 0.4 > 0.2
    light = report_of(by_operation=[
        {**report_of()["by_operation"][0], "time_share": 0.9},
        {**report_of()["by_operation"][1], "time_share": 0.1},
    ])  # fmt: skip
    assert "do 20.0% of the FLOPs and take 10% of the time." in cost.time_sentence(light, (1, 8))
    elsewhere = cost.time_sentence(report_of(), (2, 30))
    assert "(the text that was in the box when this architecture was first measured)" in elsewhere


@pytest.mark.parametrize(
    ("exponent", "trend"),
    [(0.5, "slower than linear"), (1.0, "about linear"), (1.8, "faster than linear")],
)
def test_the_scaling_sentence_says_the_fitted_growth_not_an_assumed_one(exponent, trend):
    sentence = cost.scaling_sentence(report_of(scaling_exponents={"ms": exponent}))
    assert f"grows like n^{exponent:.2f}, {trend}" in sentence
    assert "64 tokens is below the crossover" in sentence


@pytest.mark.slow  # two measurements; one setup's is measured in the fast lane
def test_compare_mode_measures_both_setups():
    at = measured_page(open_page(view="Cost", compare="1", b_norm="post", **TINY))
    assert_no_exception(at)
    keys = [c.proto.id for c in at.get("plotly_chart")]
    for key in ("cost_operations", "cost_operations_b", "cost_flops", "cost_flops_b"):
        assert any(k.endswith(key) for k in keys), key
    assert len(at.info) == 4  # per setup: the time sentence and what the shapes tell


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


@pytest.mark.parametrize(
    "cfg",
    [
        pretrained_config(),  # MiniLM's architecture
        page_model(**{k: int(v) for k, v in TINY.items()}, norm="pre").cfg,
        page_model(**{k: int(v) for k, v in TINY.items()}, norm="post").cfg,
    ],
    ids=["minilm", "random pre-norm", "random post-norm"],
)
def test_what_the_shapes_tell_counts_the_models_own_parameters_and_splits_its_flops(cfg):
    sentence = cost.known_sentence(cfg, 2, 9)
    parameters = sum(p.numel() for p in TransformerEncoder(cfg).parameters())
    assert f"has {parameters:,} parameters: {4 * parameters / 1e6:,.2f} MB as float32" in sentence
    assert f"{16 * parameters / 1e6:,.2f} MB to train it with Adam" in sentence
    shares = [float(x) for x in re.findall(r"([\d.]+)%", sentence)]
    assert len(shares) == 4 and sum(shares) == pytest.approx(100, abs=0.25)


ROOT = Path(__file__).resolve().parents[2]
ENDS_DURING_A_MEASUREMENT = """
import time
from app import jobs
from app.sources import built_in
from encoder import EncoderConfig
from encoder.io.tokenize import tokenize
cfg = EncoderConfig(d_model=64, num_heads=4, num_layers=4, d_ff=256)
source = built_in("random", cfg)
batch = tokenize(["The cat sat on the mat."], source.reader, cfg.max_len)
job = jobs.cost_job(cfg, source, "cpu", batch.input_ids, batch.attention_mask, 600.0)
while job.done < 0.2:  # in its measures' torch code
    time.sleep(0.05)
print("ending", job.finished)
"""


def test_a_process_that_ends_during_a_measurement_ends_cleanly_and_soon():
    """Its thread, a daemon, is ended within a step at exit (jobs._end_measuring): cut off in
    torch's code at the interpreter's end, it aborted the process."""
    start = time.perf_counter()
    ended = subprocess.run(
        [sys.executable, "-c", ENDS_DURING_A_MEASUREMENT],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert ended.returncode == 0, ended.stderr[-2000:]
    assert "ending False" in ended.stdout
    assert time.perf_counter() - start < 120  # not the budget's 600 s
