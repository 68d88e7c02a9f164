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
import torch.nn.functional as F

from encoder.core.capture import Trace
from encoder.core.model import TransformerEncoder
from encoder.inspect.token_kinds import SINK_KINDS, kind_masks

WEIGHT, NORM_WEIGHTED = "weight", "norm-weighted"  # the two readings of a head
READINGS = (WEIGHT, NORM_WEIGHTED)
# what is moved from a kind of token, over the weight on it, below this: those tokens park weight
# and move little (above its inverse: they move more than their weight)
MOVES_LITTLE = 0.75


@torch.no_grad()
def value_norms(trace: Trace, model: TransformerEncoder) -> torch.Tensor:
    """||f(x_j)|| for every layer, sentence, head and key: [L, B, H, T] (zero for an ablated
    head, which moves nothing). The values are recomputed from the trace's residual stream (what
    each block's attention reads: the stream, or its first norm's output for pre-norm), so the
    trace needs no hook kept."""
    norms = []
    for layer, block in enumerate(model.layers):
        attention = block.self_attn
        H, dk = attention.num_heads, attention.head_dim
        x = trace.hidden_states[layer]  # [B, T, d]: the block's input
        if model.cfg.norm_first and block.norm1 is not None:  # (ModernBERT's block 0 has none)
            x = block.norm1(x)
        d = x.shape[-1]
        weight = attention.in_proj_weight[2 * d :].to(x)  # [d, d]: W_V
        bias = attention.in_proj_bias  # [3d], or None for a model without biases
        v = F.linear(x, weight, None if bias is None else bias[2 * d :].to(x))  # [B, T, d] + b_V
        v = v.view(*v.shape[:2], H, dk).transpose(1, 2)  # [B, H, T, dk]
        w_out = attention.out_proj.weight.to(v).view(-1, H, dk)  # [d, H, dk]
        # ||v W_O^h||^2 = v (W_O^h^T W_O^h) v^T: through each head's [dk, dk] Gram matrix, so
        # nothing of size [B, H, T, d] is made
        gram = torch.einsum("dhk,dhl->hkl", w_out, w_out)  # [H, dk, dk]
        squared = (torch.einsum("bhtk,hkl->bhtl", v, gram) * v).sum(dim=-1)  # [B, H, T]
        norms.append(squared.clamp_min(0).sqrt())
    found = torch.stack(norms)  # [L, B, H, T]
    for layer, head in trace.ablated_heads:
        found[layer, :, head] = 0
    return found


def norm_weighted_attention(trace: Trace, model: TransformerEncoder) -> torch.Tensor:
    """||alpha_ij f(x_j)|| for every layer: [L, B, H, query, key]. Padded keys get 0."""
    norms = value_norms(trace, model)  # [L, B, H, key]
    return trace.attention * norms[:, :, :, None, :]  # [L, B, H, query, key]


class ShareSums:
    """Running sums of the share of each head's attention that goes to [CLS], [SEP] and
    punctuation, over every real query of every batch added, for both readings; rows are
    rescaled to sum 1 first, so both are shares of what the row gives out. One layer at a time:
    no temporary larger than one layer's attention."""

    def __init__(self, num_layers: int, num_heads: int) -> None:
        shape = (num_layers, num_heads, len(SINK_KINDS))
        self.sums = {reading: torch.zeros(shape, dtype=torch.float64) for reading in READINGS}
        self.queries = 0

    def add(
        self,
        attention: torch.Tensor,  # [L, B, H, query, key]
        norms: torch.Tensor,  # [L, B, H, key]: value_norms
        attention_mask: torch.Tensor,  # [B, T]
        tokens: list[list[str]],
    ) -> None:
        real = attention_mask.bool().cpu()  # [B, T]
        masks = kind_masks(tokens, real.shape[1])
        kinds = torch.stack([masks[kind] for kind in SINK_KINDS], dim=-1)  # [B, key, K]
        kinds = kinds.to(attention)[:, None]  # [B, 1, key, K]
        queries = real.to(attention)[:, None, :, None]  # [B, 1, query, 1]
        for layer, weights in enumerate(attention):  # [B, H, query, key]
            moved = weights * norms[layer][:, :, None, :]
            for reading, matrix in ((WEIGHT, weights), (NORM_WEIGHTED, moved)):
                rows = matrix / matrix.sum(dim=-1, keepdim=True).clamp_min(1e-30)
                to_kinds = (rows @ kinds) * queries  # [B, H, query, K], real queries only
                self.sums[reading][layer] += to_kinds.sum(dim=(0, 2)).double().cpu()
        self.queries += int(real.sum())

    def table(self) -> pd.DataFrame:
        """Columns layer, head, reading, [CLS], [SEP], punctuation: mean shares per head."""
        if not self.queries:
            raise ValueError("no real tokens to average the attention shares over")
        frames = []
        for reading in READINGS:
            L, H, _ = self.sums[reading].shape
            layer, head = torch.meshgrid(torch.arange(L), torch.arange(H), indexing="ij")
            frame = {"layer": layer.flatten().numpy(), "head": head.flatten().numpy()}
            frame["reading"] = reading
            means = (self.sums[reading] / self.queries).flatten(0, 1)  # [L * H, K]
            for index, kind in enumerate(SINK_KINDS):
                frame[kind] = means[:, index].numpy()
            frames.append(pd.DataFrame(frame))
        return pd.concat(frames, ignore_index=True)


def sink_shares(
    trace: Trace, model: TransformerEncoder, tokens: list[list[str]], sentence: int | None = None
) -> pd.DataFrame:
    """Per head and reading (raw weight, norm-weighted), the mean share of a real query's attention
    that goes to [CLS], [SEP] and punctuation over this trace's sentences, or over one `sentence`
    (ShareSums.table)."""
    attention, norms, mask = trace.attention, value_norms(trace, model), trace.attention_mask
    if sentence is not None:
        one = slice(sentence, sentence + 1)
        attention, norms, mask, tokens = attention[:, one], norms[:, one], mask[one], tokens[one]
    sums = ShareSums(trace.num_layers, trace.attention.shape[2])
    sums.add(attention, norms, mask, tokens)
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
            if moved < MOVES_LITTLE * raw
            else "Here the weights and what is moved tell a similar story."
        )
    )
