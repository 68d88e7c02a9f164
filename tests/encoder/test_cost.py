"""The cost measures (encoder.measure.op_times, scaling, train_memory, gradients, cost) against
counts made here another way: torch's FLOP counter, a walk of the autograd graph, a count by hand
from the shapes, and this test's own backward passes."""

from __future__ import annotations

import math
import statistics
import threading
import time
from dataclasses import replace

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from encoder import EncoderConfig, TransformerEncoder
from encoder.core import block
from encoder.inspect.ledger import shape_ledger
from encoder.measure import gradients
from encoder.measure.cost import CostSettings, cost_report
from encoder.measure.op_times import FUSED_STAGES, NO_HOOK_NOTE, profile_ops, timed_groups
from encoder.measure.scaling import crossover_tokens, flops_at, measure_scaling, scaling_lengths
from encoder.measure.timing import Budget, clock, clock_kind
from encoder.measure.train_memory import (
    measure_train_memory,
    module_storages,
    saved_tensor_bytes,
)
from tests.encoder.helpers import needs_cuda, padded_batch

TINY = EncoderConfig(vocab_size=100, d_model=32, num_heads=4, num_layers=2, d_ff=64, max_len=64)
BERT_LIKE = replace(TINY, norm_first=False, type_vocab_size=2, embedding_norm=True)


pytestmark = pytest.mark.usefixtures("one_thread")


# --- time per operation -----------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [TINY, replace(TINY, norm_first=False), BERT_LIKE])
def test_ops_are_the_ledgers_rows_with_the_tables_flops(cfg: EncoderConfig) -> None:
    ids, mask = padded_batch([5, 3])
    profile = profile_ops(TransformerEncoder(cfg), ids, mask, repeats=2, warmup=1)
    ledger = shape_ledger(cfg, *ids.shape)
    assert [(op.layer, op.operation) for op in profile.ops] == list(
        zip(ledger["layer"], ledger["operation"], strict=True)
    )
    names = zip(ledger["layer"], ledger["operation"], strict=True)
    assert [op.name for op in profile.ops] == [
        f"{layer}: {operation}" for layer, operation in names
    ]
    assert [op.flops for op in profile.ops] == ledger["flops"].tolist()
    assert [op.matmul_flops for op in profile.ops] == ledger["matmul_flops"].tolist()
    assert all(op.ms >= 0 for op in profile.ops)
    assert profile.repeats == 2


def test_fused_and_hookless_operations_are_split_by_flops_and_marked() -> None:
    groups = timed_groups(block.model_ops(BERT_LIKE, 1, 4))
    embedding = [op.operation for op in groups[2]]
    assert embedding == [
        "add token + position",
        "add token-type embedding",
        "embedding norm (LayerNorm)",
    ]
    qkv = [group for group in groups if group[0].stage in FUSED_STAGES]
    assert [[op.operation[0] for op in group] for group in qkv] == [["Q", "K", "V"]] * 2
    assert all(len(group) == 1 for group in groups if group not in qkv and group != groups[2])

    ids, mask = padded_batch([4])
    profile = profile_ops(TransformerEncoder(BERT_LIKE), ids, mask, repeats=2, warmup=1)
    by_name = {op.name: op for op in profile.ops}
    q, k, v = (by_name[f"0: {x} projection, split into heads"] for x in "QKV")
    assert q.ms == k.ms == v.ms and not q.measured and q.note == FUSED_STAGES["qkv"]
    add = by_name["embed: add token + position"]
    assert not add.measured and add.note == NO_HOOK_NOTE
    assert by_name["0: softmax"].measured and by_name["0: softmax"].note == ""


def test_matmul_flops_agree_with_torch_flop_counter() -> None:
    cfg = replace(TINY, num_layers=2)
    model = TransformerEncoder(cfg).eval()
    ids, mask = padded_batch([6, 4])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(ids, mask)
    counted = {module: sum(by_op.values()) for module, by_op in counter.get_flop_counts().items()}
    ops = profile_ops(model, ids, mask, repeats=1, warmup=0).ops
    assert counter.get_total_flops() == sum(op.matmul_flops for op in ops)
    for layer in range(cfg.num_layers):
        mine = {op.operation: op.matmul_flops for op in ops if op.layer == str(layer)}
        prefix = f"TransformerEncoder.layers.{layer}"
        assert counted[f"{prefix}.linear1"] == mine["linear1"]
        assert counted[f"{prefix}.linear2"] == mine["linear2"]
        out_proj = counted[f"{prefix}.self_attn.out_proj"]
        assert out_proj == mine["concat heads + out projection"]
        attention = counter.get_flop_counts()[f"{prefix}.self_attn"]
        in_proj = sum(f for op, f in attention.items() if "bmm" not in str(op)) - out_proj
        assert in_proj == sum(mine[f"{x} projection, split into heads"] for x in "QKV")
        scores_and_mix = sum(f for op, f in attention.items() if "bmm" in str(op))
        assert scores_and_mix == mine["scores QK^T / sqrt(dk)"] + mine["weights x V"]


def test_op_times_add_up_to_the_forward_pass() -> None:
    """The operations' medians against the plain forward's median, timed interleaved. The hooks
    add a few microseconds each; the bounds are wide for a shared, noisy machine, but an op left
    out or counted twice (a whole block's worth) would break them."""
    cfg = replace(TINY, d_model=64, d_ff=256, num_layers=2)
    ids, mask = padded_batch([32, 20])
    profile = profile_ops(TransformerEncoder(cfg), ids, mask, repeats=15, warmup=3)
    assert 0.7 <= profile.ops_over_total <= 1.4, profile.to_dict()
    assert profile.ops_ms <= 1.1 * profile.instrumented_ms
    assert profile.slowest().ms == max(op.ms for op in profile.ops)
    rows = profile.by_operation()
    assert sum(row["ms"] for row in rows) == pytest.approx(profile.ops_ms)
    assert sum(row["flop_share"] for row in rows) == pytest.approx(1.0)
    softmax = next(row for row in rows if row["operation"] == "softmax")
    assert softmax["flops"] == sum(op.flops for op in profile.ops if op.operation == "softmax")


def test_timing_leaves_the_model_as_it_was() -> None:
    model = TransformerEncoder(TINY).train()
    ids, _ = padded_batch([4])
    before = model(ids)
    profile_ops(model, ids, repeats=1, warmup=0)
    assert model.training and torch.equal(model(ids), before)


# --- scaling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [TINY, replace(TINY, d_model=48, num_heads=3, d_ff=100)])
def test_attention_overtakes_the_feed_forward_at_the_crossover(cfg: EncoderConfig) -> None:
    n = crossover_tokens(cfg)
    assert n == cfg.d_ff  # 4 n^2 d per layer against 4 n d d_ff
    at, before = flops_at(cfg, 1, n), flops_at(cfg, 1, n - 1)
    assert at["attention_flops"] >= at["ffn_flops"]
    assert before["attention_flops"] < before["ffn_flops"]


def test_scaling_lengths_double_up_to_max_len_or_512() -> None:
    assert scaling_lengths(replace(TINY, max_len=8)) == [8]
    assert scaling_lengths(replace(TINY, max_len=100)) == [16, 32, 64]
    assert scaling_lengths(replace(TINY, max_len=1024)) == [16, 32, 64, 128, 256, 512]


def test_scaling_exponents_and_measured_growth() -> None:
    cfg = replace(TINY, d_model=128, d_ff=512, max_len=512)
    scaling = measure_scaling(TransformerEncoder(cfg), repeats=3, warmup=1)
    assert [p.tokens for p in scaling.points] == [16, 32, 64, 128, 256, 512] and scaling.complete
    exponents = scaling.exponents
    assert exponents["attention_flops"] == pytest.approx(2.0, abs=1e-9)  # exactly n^2
    assert exponents["ffn_flops"] == pytest.approx(1.0, abs=1e-9)  # exactly n
    for point in scaling.points:
        assert point.attention_flops == 4 * cfg.num_layers * point.tokens**2 * cfg.d_model
        assert point.ffn_flops == 4 * cfg.num_layers * point.tokens * cfg.d_model * cfg.d_ff
    ms = [p.ms for p in scaling.points]
    assert ms[-1] > 3 * ms[0]  # 32x the tokens, 53x the FLOPs; at 16 tokens overheads dominate
    assert 0 < exponents["ms"] < 2.5


def test_scaling_stops_when_the_budget_is_spent() -> None:
    scaling = measure_scaling(TransformerEncoder(TINY), repeats=1, budget=Budget(0))
    assert [p.tokens for p in scaling.points] == [16] and not scaling.complete


def test_a_stopped_budget_is_spent_and_so_are_its_shares() -> None:
    stop = threading.Event()
    budget = Budget(3600, stop=stop)
    share = budget.share(0.5)
    assert not budget.expired and 1790 < share.left <= 1800
    stop.set()
    assert budget.expired and share.expired and budget.share(0.5).seconds == 0
    scaling = measure_scaling(TransformerEncoder(TINY), repeats=1, budget=share)
    assert [p.tokens for p in scaling.points] == [16] and not scaling.complete


# --- training memory --------------------------------------------------------------------------


def saved_bytes_by_graph_walk(model: TransformerEncoder, ids, mask) -> int:
    """A second count: the distinct storages reachable from the output's grad_fn through the
    nodes' saved tensors (`_raw_saved_*` names exactly the saved tensors), parameters and buffers
    left out. Python numbers autograd keeps as 0-dim doubles are not tensors the hooks see."""
    excluded = module_storages(model)
    with torch.enable_grad():
        output = model.eval()(ids, mask)
    storages, seen, stack = {}, set(), [output.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for raw in (name for name in dir(node) if name.startswith("_raw_saved_")):
            value = getattr(node, raw.replace("_raw_saved_", "_saved_"))
            for tensor in value if isinstance(value, (tuple, list)) else (value,):
                if not isinstance(tensor, torch.Tensor):
                    continue
                if tensor.dim() == 0 and tensor.dtype == torch.float64:  # a wrapped number
                    continue
                storage = tensor.untyped_storage()
                if storage.data_ptr() not in excluded:
                    storages[storage.data_ptr()] = storage.nbytes()
        stack.extend(next_node for next_node, _ in node.next_functions)
    return sum(storages.values())


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("masked", [False, True])
def test_saved_bytes_match_a_walk_of_the_graph_and_a_count_by_hand(norm_first, masked) -> None:
    B, T, L = 2, 5, 3
    cfg = replace(TINY, num_layers=L, norm_first=norm_first)
    model = TransformerEncoder(cfg)
    ids, mask = padded_batch([T, 3], vocab_size=cfg.vocab_size)
    mask = mask if masked else None
    plain = saved_tensor_bytes(model, ids, mask)
    assert plain == saved_bytes_by_graph_walk(model, ids, mask)
    checkpointed = saved_tensor_bytes(model, ids, mask, checkpoint_blocks=True)
    # kept: the ids (int64) for the embedding's backward, the padding mask (bool, one storage
    # shared by every block), each block's input [B, T, d] float32, and for pre-norm the final
    # norm's centred input and output [B, T, d] and its std [B, T]
    d = cfg.d_model
    by_hand = 8 * B * T + (B * T if masked else 0) + L * 4 * B * T * d
    if norm_first:
        by_hand += 4 * (2 * B * T * d + B * T)
    assert checkpointed == by_hand
    assert checkpointed < plain / 4


def test_measuring_train_memory_leaves_the_model_alone() -> None:
    model = TransformerEncoder(TINY).eval().requires_grad_(False)
    ids, mask = padded_batch([6, 2])
    memory = measure_train_memory(model, ids, mask, repeats=2)
    assert all(p.grad is None and not p.requires_grad for p in model.parameters())
    assert memory.saved_bytes == saved_tensor_bytes(model, ids, mask)
    assert memory.saved_bytes_checkpointed < memory.saved_bytes
    assert memory.ms > 0 and memory.ms_checkpointed > 0
    assert memory.cuda_peak_bytes is None and memory.cuda_peak_bytes_checkpointed is None


@needs_cuda
def test_cuda_peak_memory_falls_with_checkpointing() -> None:
    cfg = replace(TINY, d_model=256, num_heads=4, d_ff=1024, num_layers=4, max_len=256)
    model = TransformerEncoder(cfg).to("cuda")
    ids = torch.randint(0, cfg.vocab_size, (8, 256), device="cuda")
    memory = measure_train_memory(model, ids, repeats=2)
    assert memory.cuda_peak_bytes > memory.cuda_peak_bytes_checkpointed > 0
    assert memory.cuda_peak_bytes >= memory.saved_bytes


# --- checkpointed forward and backward --------------------------------------------------------


def test_checkpointed_blocks_give_the_same_output_and_gradients() -> None:
    model = TransformerEncoder(replace(TINY, norm_first=False))
    ids, mask = padded_batch([6, 3])
    results = []
    for checkpointed in (False, True):
        model.zero_grad(set_to_none=True)
        output = model(ids, mask, checkpoint_blocks=checkpointed)
        output.pow(2).mean().backward()
        results.append((output.detach(), [p.grad.clone() for p in model.parameters()]))
    (out_a, grads_a), (out_b, grads_b) = results
    assert torch.equal(out_a, out_b)
    for a, b in zip(grads_a, grads_b, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-7)


# --- gradient norms ---------------------------------------------------------------------------


def norms_by_hand(cfg: EncoderConfig, settings: gradients.GradientSettings) -> list[dict]:
    """This test's own backward passes: per seed and batch, the loss the module states."""
    runs = []
    for offset in range(settings.seeds):
        model = TransformerEncoder(replace(cfg, seed=cfg.seed + offset)).eval()
        for ids, targets in gradients.probe_batches(cfg, settings, "cpu"):
            model.zero_grad(set_to_none=True)
            ((model(ids) - targets) ** 2).mean().backward()
            runs.append(
                [
                    {
                        "w1": layer.linear1.weight.grad.norm().item(),
                        "w2": layer.linear2.weight.grad.norm().item(),
                        "in_proj": layer.self_attn.in_proj_weight.grad.norm().item(),
                        "out_proj": layer.self_attn.out_proj.weight.grad.norm().item(),
                    }
                    for layer in model.layers
                ]
            )
    return [
        {"layer": i} | {w: statistics.fmean(run[i][w] for run in runs) for w in runs[0][i]}
        for i in range(cfg.num_layers)
    ]


@pytest.mark.parametrize("norm_first", [True, False])
def test_grad_norms_are_the_mean_of_our_own_backward_passes(norm_first: bool) -> None:
    cfg = replace(TINY, norm_first=norm_first, num_layers=3, seed=5)
    settings = gradients.GradientSettings(seeds=2, batches=2, batch_size=2, tokens=6)
    measured = gradients.grad_norms_at_init(cfg, settings)
    expected = norms_by_hand(cfg, settings)
    assert [row["layer"] for row in measured] == [0, 1, 2]
    for row, want in zip(measured, expected, strict=True):
        assert row == pytest.approx(want, rel=1e-5)
    batches = gradients.probe_batches(cfg, settings, "cpu")
    assert not torch.equal(batches[0][0], batches[1][0])  # two different batches


def test_last_w2_by_depth_reads_the_last_layer_of_each_depth() -> None:
    settings = gradients.GradientSettings(seeds=1, batches=1, batch_size=2, tokens=4, depths=(3, 1))
    rows = gradients.last_w2_by_depth(TINY, settings)
    assert [row["layers"] for row in rows] == [1, 3]
    for row in rows:
        placed_configs = gradients.by_placement(replace(TINY, num_layers=row["layers"]))
        for placement, placed in placed_configs.items():
            assert row[placement] == pytest.approx(norms_by_hand(placed, settings)[-1]["w2"])


def test_grad_norms_stop_adding_seeds_when_the_budget_is_spent() -> None:
    settings = gradients.GradientSettings(seeds=3, batches=1, batch_size=2, tokens=4)
    one = replace(settings, seeds=1)
    assert gradients.grad_norms_at_init(TINY, settings, budget=Budget(0)) == (
        gradients.grad_norms_at_init(TINY, one)
    )


def test_depth_sweep_stops_before_a_depth_that_would_overrun_the_budget() -> None:
    settings = gradients.GradientSettings(seeds=1, batches=1, batch_size=2, tokens=4)
    rows = gradients.last_w2_by_depth(TINY, settings, budget=Budget(0))
    assert [row["layers"] for row in rows] == [2]  # the first depth always runs
    rows = gradients.last_w2_by_depth(TINY, replace(settings, depths=(1, 2)), budget=Budget(60))
    assert [row["layers"] for row in rows] == [1, 2]


def rows(values: list[float]) -> list[dict[str, float]]:
    return [{"layer": i, "w1": 1.0, "w2": v, "in_proj": 1.0, "out_proj": 1.0}
            for i, v in enumerate(values)]  # fmt: skip


def test_findings_follow_the_numbers() -> None:
    depths = [2, 4, 8, 12]
    as_paper = [{"layers": L, "pre": 1 / math.sqrt(L), "post": 1.0} for L in depths]
    per_layer = {"pre": rows([0.5, 0.5, 0.5]), "post": rows([0.8, 0.9, 1.0])}
    found = gradients.findings(per_layer, as_paper)
    assert len(found) == 5 and all(f.agrees for f in found), [f.sentence() for f in found]
    pre_slope = next(f for f in found if f.measured.startswith("Pre-norm: the last layer"))
    assert "slope of log norm against log L of -0.50" in pre_slope.measured

    flat_pre = [{"layers": L, "pre": 1.0, "post": L**0.5} for L in depths]
    per_layer = {"pre": rows([1.0, 0.3, 0.5]), "post": rows([1.0, 0.5, 0.2])}
    found = gradients.findings(per_layer, flat_pre)
    assert not any(f.agrees for f in found), [f.sentence() for f in found]
    assert "span a factor of 3.33" in found[0].measured
    assert "largest in layer 0 of 0..2" in found[1].measured
    assert gradients.findings(per_layer, flat_pre[:1])[-1].claim.startswith("post-norm's last")


# --- the whole report -------------------------------------------------------------------------


def test_cost_report_has_both_placements_and_stays_near_its_budget() -> None:
    settings = CostSettings(repeats=2, warmup=1, max_tokens=32, budget_s=4.0,
                            gradients=gradients.GradientSettings(seeds=1, batches=1, tokens=4,
                                                                 depths=(1, 2)))  # fmt: skip
    ids, mask = padded_batch([5, 2])
    report = cost_report(TransformerEncoder(replace(TINY, norm_first=False)), ids, mask, settings)
    data = report.to_dict()
    assert data["norm"] == "post" and data["batch"] == [2, 5]
    assert set(data["train_memory_by_norm"]) == {"pre", "post"} == set(data["grad_norms_by_norm"])
    assert data["train_memory"] == data["train_memory_by_norm"]["post"]
    assert data["grad_norms"] == data["grad_norms_by_norm"]["post"]
    assert [row["layers"] for row in data["last_w2_by_depth"]] == [1, 2]
    assert data["crossover_tokens"] == TINY.d_ff and data["loss"] == gradients.LOSS
    assert report.seconds < 4.0 + 6.0  # each measure may finish the unit it started


def test_times_are_cpu_time_on_the_cpu_and_wall_clock_elsewhere() -> None:
    assert clock_kind("cpu") == "thread" and clock("cpu") is time.thread_time
    assert clock_kind("cuda:0") == "wall" and clock("cuda") is time.perf_counter
