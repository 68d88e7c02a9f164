"""Norms and the residual stream: statistics of every norm's input and output per token, each norm's
learned gain and bias, and the size of the residual stream at every depth.

Depth: 0 is the embedding output, depth i + 1 the residual stream after block i
(`trace.hidden_states`, before any final norm). Plain pandas out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import norm_path


def norm_hook_names(cfg: EncoderConfig) -> list[str]:
    """The hooks `layernorm_stats` reads."""
    return [name for norm in hooks.norms(cfg) for name in norm.names]


def _real_tokens(trace: Trace) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The boolean [B, T] mask of real tokens and their sentence and position indices."""
    real = trace.attention_mask.bool().cpu()
    sentence, position = real.nonzero(as_tuple=True)
    return real, sentence, position


COLUMNS = ("layer", "norm", "sentence", "position", "in_mean", "in_std", "out_mean", "out_std")


def layernorm_stats(trace: Trace, cfg: EncoderConfig) -> pd.DataFrame:
    """Mean and population std over d of each norm's input and output, per real token.

    Columns: layer (-1 = embedding norm, L = final norm), norm, sentence, position,
    in_mean, in_std, out_mean, out_std.
    """
    real, sentence, position = _real_tokens(trace)
    count = len(position)  # real tokens, the rows of each norm
    columns: dict[str, list] = {name: [] for name in COLUMNS}
    for norm in hooks.norms(cfg):
        x_in = trace[norm.inp].float().cpu()  # [B, T, d]
        x_out = trace[norm.out].float().cpu()  # [B, T, d]
        stats = {
            "in_mean": trace[norm.mean].float().cpu(),  # [B, T]
            "in_std": x_in.std(dim=-1, correction=0),
            "out_mean": x_out.mean(dim=-1),
            "out_std": x_out.std(dim=-1, correction=0),
        }
        columns["layer"].append(np.full(count, norm.layer, dtype=np.int64))
        columns["norm"].append(np.full(count, norm.label, dtype=object))
        columns["sentence"].append(sentence.numpy())
        columns["position"].append(position.numpy())
        for name, value in stats.items():
            columns[name].append(value[real].numpy())
    # one frame from whole columns: a frame per norm, then concatenated, took ~20 ms a rerun
    return pd.DataFrame({name: np.concatenate(parts) for name, parts in columns.items()})


def norm_parameters(cfg: EncoderConfig, weights: Mapping[str, torch.Tensor]) -> pd.DataFrame:
    """Summary of every norm's learned gain (weight) and bias, from a model's state_dict; bias
    columns are NaN for RMSNorm."""
    rows = []
    for norm in hooks.norms(cfg):
        path = norm_path(norm)
        gain = weights[f"{path}.weight"].detach().float().cpu()
        bias = weights.get(f"{path}.bias")
        bias = bias.detach().float().cpu() if bias is not None else None
        rows.append(
            {
                "layer": norm.layer,
                "norm": norm.label,
                "gain_mean": gain.mean().item(),
                "gain_std": gain.std(correction=0).item(),
                "gain_min": gain.min().item(),
                "gain_max": gain.max().item(),
                "bias_mean": bias.mean().item() if bias is not None else math.nan,
                "bias_std": bias.std(correction=0).item() if bias is not None else math.nan,
            }
        )
    return pd.DataFrame(rows).sort_values("layer", kind="stable", ignore_index=True)


def residual_norms(trace: Trace) -> pd.DataFrame:
    """L2 norm of the residual stream per real token at each depth (0 = embedding output)."""
    real, sentence, position = _real_tokens(trace)
    norms = torch.stack([h.float().cpu() for h in trace.hidden_states]).norm(dim=-1)  # [L+1, B, T]
    per_depth = norms[:, real]  # [L+1, real tokens]
    n = per_depth.shape[1]
    return pd.DataFrame(
        {
            "depth": torch.arange(len(norms)).repeat_interleave(n).numpy(),
            "sentence": sentence.repeat(len(norms)).numpy(),
            "position": position.repeat(len(norms)).numpy(),
            "l2_norm": per_depth.flatten().numpy(),
        }
    )


def mean_norm_by_depth(residual: pd.DataFrame, sentence: int) -> pd.Series:
    """The residual stream's L2 norm at each depth, averaged over one sentence's real tokens,
    from `residual_norms`' rows (indexed by depth: 0 = the embeddings' output)."""
    return residual[residual["sentence"] == sentence].groupby("depth")["l2_norm"].mean()


def residual_stream_table(residual: pd.DataFrame, sentence: int, d_model: int) -> pd.DataFrame:
    """The residual stream's size at each depth for one sentence, from `residual_norms`' rows.

    Columns: depth (0 = the embeddings' output, i + 1 = after block i), mean_norm (the L2 norm of
    the stream, averaged over the sentence's real tokens), min_norm, max_norm (over the tokens),
    growth (mean_norm over the previous depth's; NaN at depth 0) and over_sqrt_d (mean_norm /
    sqrt(d_model), the size a LayerNorm output with unit gain has).
    """
    rows = residual[residual["sentence"] == sentence].groupby("depth")["l2_norm"]
    table = pd.DataFrame(
        {"mean_norm": rows.mean(), "min_norm": rows.min(), "max_norm": rows.max()}
    ).reset_index()
    table["growth"] = table["mean_norm"] / table["mean_norm"].shift(1)
    table["over_sqrt_d"] = table["mean_norm"] / math.sqrt(d_model)
    return table
