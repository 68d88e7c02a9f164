"""The shape ledger and what a run costs: one row per operation, parameters by component, FLOPs.

Every number comes from the one description of the block (encoder.core.block, which also states
the FLOP convention) for the run's config and [batch, tokens]; only the bytes of the captured
tensors are read from the Trace. Plain pandas out (no streamlit, no plotly).
"""

from __future__ import annotations

import pandas as pd

from encoder.core import block
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig

LEDGER_COLUMNS = (
    "layer",
    "operation",
    "kind",
    "hook",
    "input_shape",
    "output_shape",
    "params",
    "flops",
    "matmul_flops",
)


def shape_ledger(cfg: EncoderConfig, batch: int, tokens: int) -> pd.DataFrame:
    """One row per operation, in data-flow order: shapes, parameters and FLOPs of each step.

    Columns: layer ("embed", "0".."L-1", "final"), operation, kind (lookup | norm | projection |
    attention | softmax | feed-forward | activation | residual), hook (the hook capturing the
    step's output, or ""), input_shape, output_shape, params, flops (all of them), matmul_flops
    (the part that is matrix products).
    """
    rows = [
        (
            op.layer,
            op.operation,
            op.kind,
            op.output,
            op.input_text,
            block.shape_text(op.output_shape),
            op.params,
            op.total_flops,
            op.matmul_flops,
        )
        for op in block.model_ops(cfg, batch, tokens)
    ]
    return pd.DataFrame(rows, columns=list(LEDGER_COLUMNS))


# a block operation's kind -> the component that holds its parameters
BLOCK_COMPONENTS = {
    "projection": "attention",
    "feed-forward": "feed-forward",
    "norm": "block norms",
}
COMPONENTS = (
    "token embedding",
    "position embedding",
    "token-type embedding",
    "embedding norm",
    "embedding projection",
    "attention",
    "feed-forward",
    "block norms",
    "final norm",
)


def _component(op: block.Op) -> str:
    """The component whose parameters an operation holds: its stage outside the blocks, its kind's
    component inside them."""
    return BLOCK_COMPONENTS.get(op.kind, "") if op.layer.isdigit() else op.stage


def parameter_counts(cfg: EncoderConfig) -> pd.DataFrame:
    """Parameters per component; `per_layer` holds one block's share for the stacked components
    (with shared layers, the one set every block uses)."""
    ops = block.model_ops(cfg, 1, 1)
    rows = []
    for component in COMPONENTS:
        params = sum(op.params for op in ops if _component(op) == component)
        if component in BLOCK_COMPONENTS.values():
            per_layer = params if cfg.shared_layers else params // cfg.num_layers
            rows.append((f"{component} (all layers)", params, per_layer))
        else:
            rows.append((component, params, None))
    rows.append(("total", sum(op.params for op in ops), None))
    table = pd.DataFrame(rows, columns=["component", "params", "per_layer"])
    table["per_layer"] = table["per_layer"].astype("Int64")
    return table


def matmul_flops_by_kind(ops: list[block.Op]) -> dict[str, int]:
    """The matrix-product FLOPs of each kind of operation that has them ("projection", "attention":
    the n^2 terms, scores and weighted sum; "feed-forward": linear1 and linear2)."""
    return {
        kind: sum(op.matmul_flops for op in ops if op.kind == kind) for kind in block.MATMUL_KINDS
    }


def cost_summary(cfg: EncoderConfig, trace: Trace) -> dict:
    """Batch size, tokens, parameters, FLOPs by part, and the bytes the captured tensors hold.

    activation_bytes counts each distinct captured tensor once (a tensor seen under two hook
    names, e.g. resid_mid and the next norm's input, is one tensor).
    """
    B, T = trace.input_ids.shape
    ops = block.model_ops(cfg, B, T)
    distinct = {id(t): t for t in trace.tensors.values()}.values()
    matmul_flops = matmul_flops_by_kind(ops)
    return {
        "batch": B,
        "tokens": int(trace.attention_mask.sum()),
        "padded_tokens": B * T,
        "params": sum(op.params for op in ops),
        "flops": sum(op.total_flops for op in ops),
        "attention_flops": matmul_flops["attention"],
        "projection_flops": matmul_flops["projection"],
        "ffn_flops": matmul_flops["feed-forward"],
        "activation_bytes": sum(t.numel() * t.element_size() for t in distinct),
    }
