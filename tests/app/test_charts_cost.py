"""app.charts.cost: the Cost view's figures draw the numbers they are given, from a real (tiny)
report, and are the same JSON with plotly's validation on."""

from __future__ import annotations

import json
import math

import pytest

from app.charts import common, cost, training_cost
from encoder import EncoderConfig, TransformerEncoder
from encoder.core import block
from encoder.measure.cost import CostSettings, cost_report
from encoder.measure.gradients import GradientSettings
from encoder.measure.op_times import flops_by_operation
from encoder.train.trainer import torch_threads
from tests.encoder.helpers import padded_batch

CFG = EncoderConfig(vocab_size=100, d_model=32, num_heads=4, num_layers=3, d_ff=64, max_len=64)


@pytest.fixture(scope="module")
def report() -> dict:
    settings = CostSettings(repeats=2, warmup=1, max_tokens=64, budget_s=60,
                            gradients=GradientSettings(seeds=1, batches=1, tokens=4,
                                                       depths=(1, 2)))  # fmt: skip
    ids, mask = padded_batch([6, 3])
    with torch_threads(1):  # two threads on a busy 2-core machine wait on each other
        return cost_report(TransformerEncoder(CFG), ids, mask, settings).to_dict()


def build_all(report: dict) -> list:
    return [
        cost.operation_time_chart(report["by_operation"]),
        cost.scaling_chart(report["scaling"], report["crossover_tokens"]),
        training_cost.train_memory_chart(report["train_memory_by_norm"]),
        training_cost.gradient_flow_chart(report["grad_norms_by_norm"], report["last_w2_by_depth"]),
    ]


def test_operation_time_chart_puts_the_slowest_on_top_beside_its_flops(report) -> None:
    fig = cost.operation_time_chart(report["by_operation"])
    flops, time = fig.data
    assert (time.name, flops.name) == ("share of the time (measured)", "share of the FLOPs")
    rows = sorted(report["by_operation"], key=lambda row: row["time_share"])
    assert list(time.y) == [row["operation"] for row in rows] == list(flops.y)
    assert list(time.x) == pytest.approx([100 * row["time_share"] for row in rows], abs=0.01)
    assert list(flops.x) == pytest.approx([100 * row["flop_share"] for row in rows], abs=0.01)
    hatched = [shape == "/" for shape in time.marker.pattern.shape]
    assert hatched == [not row["measured"] for row in rows]
    assert sum(hatched) == 3  # Q, K and V
    slowest = rows[-1]
    assert fig.layout.title.text.startswith(
        f"Time per operation: {slowest['operation']} takes {slowest['time_share']:.0%}"
    )


def test_scaling_chart_draws_the_measured_times_and_crossing_references(report) -> None:
    points, crossover = report["scaling"], report["crossover_tokens"]
    assert crossover == CFG.d_ff
    fig = cost.scaling_chart(points, crossover)
    measured, attention, ffn = fig.data
    assert list(measured.x) == [p["tokens"] for p in points] == [16, 32, 64]
    assert list(measured.y) == pytest.approx([p["ms"] for p in points], rel=1e-3)
    # both references go through the longest point's rate; they meet at the crossover
    rate = points[-1]["ms"] / points[-1]["flops"]
    assert attention.y[0] == pytest.approx(points[0]["attention_flops"] * rate, rel=1e-3)
    assert ffn.y[0] == pytest.approx(points[0]["ffn_flops"] * rate, rel=1e-3)
    assert attention.y[0] < ffn.y[0] and attention.y[-1] > ffn.y[-1]
    assert attention.x[-1] >= 2 * crossover
    assert [shape.x0 for shape in fig.layout.shapes] == [crossover]
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    assert f"n = {crossover:,}" in fig.layout.title.text


def test_train_memory_chart_compares_plain_and_checkpointed(report) -> None:
    memory = report["train_memory_by_norm"]
    fig = training_cost.train_memory_chart(memory)
    plain, checkpointed = fig.data
    assert list(plain.x) == ["pre-norm", "post-norm"]
    assert fig.layout.yaxis.title.text == "kB kept for backward"
    assert list(plain.y) == pytest.approx([memory[p]["saved_bytes"] / 1e3 for p in memory], 1e-3)
    assert list(checkpointed.y) == pytest.approx(
        [memory[p]["saved_bytes_checkpointed"] / 1e3 for p in memory], rel=1e-3
    )
    less = min(m["saved_bytes"] / m["saved_bytes_checkpointed"] for m in memory.values())
    assert f"checkpointing keeps {less:.1f}-" in fig.layout.title.text


def test_gradient_flow_chart_has_layers_depths_and_the_paper_reference(report) -> None:
    per_layer, by_depth = report["grad_norms_by_norm"], report["last_w2_by_depth"]
    fig = training_cost.gradient_flow_chart(per_layer, by_depth)
    names = [trace.name for trace in fig.data]
    assert names == ["pre-norm", "post-norm", "pre-norm", "post-norm",
                     "1/sqrt(L): the paper's pre-norm"]  # fmt: skip
    pre_layers, _, pre_depth, post_depth, reference = fig.data
    assert list(pre_layers.y) == pytest.approx([row["w2"] for row in per_layer["pre"]], 1e-4)
    assert list(pre_depth.x) == [1, 2]
    assert list(post_depth.y) == pytest.approx([row["post"] for row in by_depth], rel=1e-4)
    first = by_depth[0]["pre"]
    assert list(reference.y) == pytest.approx([first / math.sqrt(L) for L in (1, 2)], 1e-4)
    assert "pre-norm L^" in fig.layout.title.text and "paper: pre -0.5, post 0" in (
        fig.layout.title.text
    )


def test_figures_are_the_same_with_validation_on(report, monkeypatch) -> None:
    lean = [json.loads(fig.to_json()) for fig in build_all(report)]
    monkeypatch.setattr(common, "VALIDATE", True)
    validated = [json.loads(fig.to_json()) for fig in build_all(report)]
    assert lean == validated


def test_the_flop_chart_draws_each_operations_share_of_the_flops_from_the_shapes():
    rows = flops_by_operation(CFG, 2, 6)
    ops = block.model_ops(CFG, 2, 6)
    softmax = sum(op.total_flops for op in ops if op.operation == rows[-1]["operation"])
    assert rows[-1]["flops"] == softmax and sum(r["flops"] for r in rows) == sum(
        op.total_flops for op in ops
    )
    fig = cost.flop_chart(rows)
    [bars] = fig.data
    by_name = {row["operation"]: row for row in rows}
    most = by_name[bars.y[-1]]  # drawn bottom-up: the most on top
    assert most["flops"] == max(row["flops"] for row in rows)
    assert sum(bars.x) == pytest.approx(100, abs=0.1)
    assert f"{most['flop_share']:.0%} of them" in fig.layout.title.text
