"""Measured time of every operation of one forward pass, named as the shape ledger names it.

How: a `TimingCapture` is the active capture (encoder.core.capture), so each HookPoint that marks
an operation's output (`Op.output` in encoder.core.block) records the time it fires, after waiting
for the device (CUDA), on the clock of encoder.measure.timing (CPU: the thread's CPU time). An
operation's time runs from the previous boundary to its own output hook; the first starts when
the forward pass is called, so the token embedding's time includes the model's input checks.
Two cases cannot be told apart by hooks, and are split by FLOPs:

- fused kernels: Q, K and V come out of one in_proj matmul (FUSED_STAGES), so their hooks fire
  together; the matmul's time is shared between them by FLOPs;
- an operation with no output hook (BERT's embedding adds) shares the time up to the next hook
  with the operation that fills it, by FLOPs (equally when neither has FLOPs).

Those operations have `measured=False` and a `note` that says so. Each time is the median over
repeats after warm-up; `total_ms` is the median of plain forward passes (no capture active), timed
interleaved with the instrumented ones so that both see the same machine load.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

import torch

from encoder.core import block
from encoder.core.capture import Capture, activated
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.measure.timing import Budget, clock, evaluating, synchronize, timed_ms

# block stage -> why its operations share one measured time
FUSED_STAGES = {
    "qkv": "Q, K and V come from one in_proj matmul: its time is split between them by FLOPs",
}
NO_HOOK_NOTE = "no hook marks its end: the time up to the next hook is split by FLOPs"


def op_name(op: block.Op) -> str:
    """'0: softmax', 'embed: token embedding x sqrt(d)': the ledger's layer and operation."""
    return f"{op.layer}: {op.operation}"


@dataclass
class TimingCapture(Capture):
    """A capture that stores no tensor: it records when each kept hook fires (device synced)."""

    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    stamps: dict[str, float] = field(default_factory=dict)  # hook name -> seconds on `now`
    now: Callable[[], float] = time.perf_counter

    def record(self, name: str, x: torch.Tensor) -> None:
        if self.keep(name):
            synchronize(self.device)
            self.stamps[name] = self.now()


@dataclass(frozen=True)
class OpTime:
    """One operation: its ledger names, kind, measured median time and FLOPs."""

    name: str  # op_name: "<layer>: <operation>"
    layer: str
    operation: str
    kind: str
    ms: float
    flops: int  # all of its FLOPs (the block table's convention)
    matmul_flops: int  # the part that is matrix products
    measured: bool  # False: its time is a FLOP share of a time measured with its neighbours
    note: str = ""


@dataclass(frozen=True)
class OpProfile:
    """Every operation's time; how their sum compares with a plain forward pass."""

    ops: list[OpTime]
    total_ms: float  # median plain forward pass (no capture)
    instrumented_ms: float  # median forward pass with the timing capture
    repeats: int

    @property
    def ops_ms(self) -> float:
        return sum(op.ms for op in self.ops)

    @property
    def ops_over_total(self) -> float:
        """Sum of the operations' medians / the plain forward's median (1 = all accounted for)."""
        return self.ops_ms / self.total_ms

    def slowest(self) -> OpTime:
        return max(self.ops, key=lambda op: op.ms)

    def slowest_operation(self) -> dict:
        """The row of by_operation() that takes the most time, all layers together."""
        return max(self.by_operation(), key=lambda row: row["ms"])

    def by_operation(self) -> list[dict]:
        """The operations summed over the layers, in data-flow order: {operation, kind, ms,
        flops, time_share, flop_share, gflops_per_s, measured} (measured: every instance was)."""
        rows = summed_by_operation((op.operation, op.kind, op.flops, op.ms, op.measured)
                                   for op in self.ops)  # fmt: skip
        total_ms = self.ops_ms
        for row in rows:
            row["time_share"] = row["ms"] / total_ms if total_ms else 0.0
            row["gflops_per_s"] = row["flops"] / row["ms"] / 1e6 if row["ms"] > 0 else 0.0
        return rows

    def to_dict(self) -> dict:
        return {
            "total_ms": self.total_ms,
            "instrumented_ms": self.instrumented_ms,
            "ops_ms": self.ops_ms,
            "ops_over_total": self.ops_over_total,
            "repeats": self.repeats,
            "ops": [asdict(op) for op in self.ops],
        }


def summed_by_operation(entries: Iterable[tuple[str, str, int, float, bool]]) -> list[dict]:
    """(operation, kind, flops, ms, measured) of each operation instance -> one row per operation,
    summed over the layers, in data-flow order: {operation, kind, flops, flop_share, ms,
    measured}."""
    rows: dict[str, dict] = {}
    for operation, kind, flops, ms, measured in entries:
        row = rows.setdefault(
            operation,
            {"operation": operation, "kind": kind, "ms": 0.0, "flops": 0, "measured": True},
        )
        row["ms"] += ms
        row["flops"] += flops
        row["measured"] &= measured
    total_flops = sum(row["flops"] for row in rows.values())
    for row in rows.values():
        row["flop_share"] = row["flops"] / total_flops if total_flops else 0.0
    return list(rows.values())


def flops_by_operation(cfg: EncoderConfig, batch: int, tokens: int) -> list[dict]:
    """What is known before any timing: each operation's FLOPs on a [batch, tokens] input,
    summed over the layers, in data-flow order ({operation, kind, flops, flop_share})."""
    rows = summed_by_operation(
        (op.operation, op.kind, op.total_flops, 0.0, False)
        for op in block.model_ops(cfg, batch, tokens)
    )
    return [{key: row[key] for key in ("operation", "kind", "flops", "flop_share")} for row in rows]


def timed_groups(ops: list[block.Op]) -> list[list[block.Op]]:
    """The operations in runs that one hook closes: each run ends at its last operation's output
    hook. A lone operation is measured on its own; a run of several is split by FLOPs."""
    groups: list[list[block.Op]] = []
    pending: list[block.Op] = []
    for op, after in zip(ops, [*ops[1:], None], strict=True):
        pending.append(op)
        fused_with_next = (
            after is not None
            and op.stage in FUSED_STAGES
            # the projections of one in_proj matmul (not RoPE's rotations after them)
            and (after.layer, after.stage, after.kind) == (op.layer, op.stage, "projection")
        )
        if op.output and not fused_with_next:
            groups.append(pending)
            pending = []
    if pending:
        raise ValueError(f"the last operation {op_name(pending[-1])!r} has no output hook")
    return groups


def _shares(group: list[block.Op]) -> list[float]:
    """Each operation's share of its run's time: by FLOPs, equal when the run has none."""
    flops = [op.total_flops for op in group]
    total = sum(flops)
    return [f / total if total else 1 / len(group) for f in flops]


def _note(group: list[block.Op]) -> str:
    if len(group) == 1:
        return ""
    return FUSED_STAGES.get(group[0].stage, NO_HOOK_NOTE)


def _instrumented_run(
    model: TransformerEncoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    groups: list[list[block.Op]],
) -> tuple[list[float], float]:
    """One forward pass with the timing capture: (each run's ms, the whole pass's ms)."""
    ends = [group[-1].output for group in groups]
    now = clock(model.device)
    capture = TimingCapture(keep=frozenset(ends).__contains__, device=model.device, now=now)
    with activated(capture):
        synchronize(model.device)
        started = now()
        model(input_ids, attention_mask)
        synchronize(model.device)
        finished = now()
    missing = [name for name in ends if name not in capture.stamps]
    if missing:
        raise ValueError(f"hooks {missing[:3]} never fired: the model does not match its config")
    times = [started] + [capture.stamps[name] for name in ends]
    runs = [(end - start) * 1000 for start, end in zip(times, times[1:], strict=False)]
    return runs, (finished - started) * 1000


@torch.no_grad()
def profile_ops(
    model: TransformerEncoder,
    input_ids: torch.Tensor,  # [B, T] long, on the model's device
    attention_mask: torch.Tensor | None = None,  # [B, T] 1 = token, 0 = padding
    *,
    repeats: int = 10,
    warmup: int = 2,
    budget: Budget | None = None,
) -> OpProfile:
    """Every operation's median time (ms) and FLOPs, in data-flow order, for this batch.

    Runs in eval mode without gradients (the model is left as it was). Stops repeating once the
    budget is spent (after at least one timed repeat).
    """
    ops = block.model_ops(model.cfg, *input_ids.shape)
    groups = timed_groups(ops)

    def plain() -> None:
        model(input_ids, attention_mask)

    run_times: list[list[float]] = []  # [repeat][run]
    instrumented, totals = [], []
    with evaluating(model):
        for repeat in range(warmup + max(1, repeats)):
            total = timed_ms(plain, model.device)
            runs, whole = _instrumented_run(model, input_ids, attention_mask, groups)
            if repeat >= warmup:
                totals.append(total)
                instrumented.append(whole)
                run_times.append(runs)
                if budget is not None and budget.expired:
                    break
    medians = [statistics.median(times) for times in zip(*run_times, strict=True)]
    timed = [
        OpTime(
            name=op_name(op),
            layer=op.layer,
            operation=op.operation,
            kind=op.kind,
            ms=run_ms * share,
            flops=op.total_flops,
            matmul_flops=op.matmul_flops,
            measured=len(group) == 1,
            note=_note(group),
        )
        for group, run_ms in zip(groups, medians, strict=True)
        for op, share in zip(group, _shares(group), strict=True)
    ]
    return OpProfile(
        ops=timed,
        total_ms=statistics.median(totals),
        instrumented_ms=statistics.median(instrumented),
        repeats=len(totals),
    )
