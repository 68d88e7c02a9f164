"""What a head moves, not only where it looks: norm-weighted attention (Kobayashi et al., EMNLP
2020, "Attention is Not Only a Weight: Analyzing Transformers with Vector Norms").

Head h's output at query i is sum_j alpha_ij f(x_j), with f(x) = (x W_V^h + b_V^h) W_O^h: the
head's value projection (its bias included, as in the paper) followed by its slice of the output
projection. The output bias b_O is added once after the heads are summed, depends on no key, and is
left out, as in the paper. Since alpha_ij >= 0, ||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)||: a key
whose transformed value is short moves little even when it gets much weight.
"""

from __future__ import annotations

import pandas as pd
import torch

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.model import TransformerEncoder
from encoder.inspect.token_kinds import SINK_KINDS, kind_masks

WEIGHT, NORM_WEIGHTED = "weight", "norm-weighted"  # the two readings of a head


def needed_hooks(num_layers: int) -> list[str]:
    """The hooks norm_weighted_attention reads: every block's values."""
    return [hooks.block(i).attn.v for i in range(num_layers)]


@torch.no_grad()
def value_norms(trace: Trace, model: TransformerEncoder) -> torch.Tensor:
    """||f(x_j)|| for every layer, sentence, head and key: [L, B, H, T] (zero for an ablated
    head, which moves nothing)."""
    norms = []
    for layer, block in enumerate(model.layers):
        attention = block.self_attn
        v = trace[hooks.block(layer).attn.v]  # [B, H, T, dk], b_V included
        H, dk = attention.num_heads, attention.head_dim
        w_out = attention.out_proj.weight.to(v)  # [d, H * dk], on v's device and dtype
        w_out = w_out.view(-1, H, dk).permute(1, 2, 0)  # [H, dk, d]
        moved = torch.einsum("bhtk,hkd->bhtd", v, w_out)  # [B, H, T, d]: f(x_j) per head
        norms.append(moved.norm(dim=-1))  # [B, H, T]
    found = torch.stack(norms)  # [L, B, H, T]
    for layer, head in trace.ablated_heads:
        found[layer, :, head] = 0
    return found


def norm_weighted_attention(trace: Trace, model: TransformerEncoder) -> torch.Tensor:
    """||alpha_ij f(x_j)|| for every layer: [L, B, H, query, key] (layer i is also known by the
    name hooks.norm_weighted(i)). Padded keys get 0. The trace must keep needed_hooks(L)."""
    norms = value_norms(trace, model)  # [L, B, H, key]
    return trace.attention * norms[:, :, :, None, :]  # [L, B, H, query, key]


def by_name(trace: Trace, model: TransformerEncoder) -> dict[str, torch.Tensor]:
    """{hooks.norm_weighted(i): [B, H, query, key]}: the matrices under their derived names."""
    matrices = norm_weighted_attention(trace, model)
    return {hooks.norm_weighted(i): matrices[i] for i in range(matrices.shape[0])}


class ShareSums:
    """Running sums of the share of each head's attention that goes to [CLS], [SEP] and
    punctuation, over every real query of every batch added; rows are renormalised to sum 1
    first, so both readings are shares of what the row gives out."""

    def __init__(self, num_layers: int, num_heads: int) -> None:
        self.sums = {
            (reading, kind): torch.zeros(num_layers, num_heads, dtype=torch.float64)
            for reading in (WEIGHT, NORM_WEIGHTED)
            for kind in SINK_KINDS
        }
        self.queries = 0

    def add(
        self,
        readings: dict[str, torch.Tensor],  # {reading: [L, B, H, query, key]}
        attention_mask: torch.Tensor,  # [B, T]
        tokens: list[list[str]],
    ) -> None:
        real = attention_mask.bool()  # [B, T]
        masks = kind_masks(tokens, real.shape[1])
        for reading, matrix in readings.items():
            matrix = matrix.double()
            rows = matrix / matrix.sum(dim=-1, keepdim=True).clamp_min(1e-30)
            for kind in SINK_KINDS:
                to_kind = (rows * masks[kind][None, :, None, None, :]).sum(dim=-1)  # [L,B,H,q]
                to_kind = to_kind * real[None, :, None, :]  # real queries only
                self.sums[reading, kind] += to_kind.sum(dim=(1, 3))
        self.queries += int(real.sum())

    def table(self) -> pd.DataFrame:
        """Columns layer, head, reading, [CLS], [SEP], punctuation: mean shares per head."""
        if not self.queries:
            raise ValueError("no real tokens to average the attention shares over")
        frames = []
        for reading in (WEIGHT, NORM_WEIGHTED):
            L, H = self.sums[reading, SINK_KINDS[0]].shape
            layer, head = torch.meshgrid(torch.arange(L), torch.arange(H), indexing="ij")
            frame = {"layer": layer.flatten().numpy(), "head": head.flatten().numpy()}
            frame["reading"] = reading
            for kind in SINK_KINDS:
                frame[kind] = (self.sums[reading, kind] / self.queries).flatten().numpy()
            frames.append(pd.DataFrame(frame))
        return pd.concat(frames, ignore_index=True)


def sink_shares(trace: Trace, model: TransformerEncoder, tokens: list[list[str]]) -> pd.DataFrame:
    """Per head and reading (raw weight, norm-weighted), the mean share of a real query's attention
    that goes to [CLS], [SEP] and punctuation over this trace's sentences (ShareSums.table)."""
    sums = ShareSums(trace.num_layers, trace.attention.shape[2])
    readings = {WEIGHT: trace.attention, NORM_WEIGHTED: norm_weighted_attention(trace, model)}
    sums.add(readings, trace.attention_mask, tokens)
    return sums.table()


def share_summary(shares: pd.DataFrame) -> pd.DataFrame:
    """sink_shares' table averaged over heads: one row per (reading, layer) and per reading over
    all layers (layer "all"; the layers as text); a column "sinks" adds [CLS], [SEP] and
    punctuation."""
    kinds = list(SINK_KINDS)
    per_layer = shares.groupby(["reading", "layer"], sort=False)[kinds].mean().reset_index()
    overall = shares.groupby("reading", sort=False)[kinds].mean().reset_index()
    overall.insert(1, "layer", "all")
    summary = pd.concat([per_layer.astype({"layer": str}), overall], ignore_index=True)
    summary["sinks"] = summary[kinds].sum(axis=1)
    return summary


def readings_sentence(summary: pd.DataFrame) -> str:
    """How far the two readings differ, with this run's numbers (share_summary's table)."""
    overall = summary[summary["layer"] == "all"].set_index("reading")["sinks"]
    raw, moved = float(overall[WEIGHT]), float(overall[NORM_WEIGHTED])
    if raw <= 0:
        return "No head gives any weight to [CLS], [SEP] or punctuation here."
    verb = "drops" if moved < raw else "rises"
    return (
        f"Averaged over every head, {raw:.0%} of the attention weight goes to [CLS], [SEP] and "
        f"punctuation; counted by what is moved (weight x the size of the transformed value), "
        f"that share {verb} to {moved:.0%}. "
        + (
            "Much of the weight on these tokens moves little: they act as a place to park "
            "attention, not as a source of information."
            if moved < 0.75 * raw
            else "Here the weights and what is moved tell a similar story."
        )
    )
