"""Tables computed from a Trace and the model: shapes, norm statistics, sizes, costs, head metrics.

Every function returns plain pandas data (no streamlit, no plotly), so notebooks can use it too.

FLOP convention (the `flops` column of `shape_ledger`), counted over the whole padded batch [B, T]:
- matmuls and linear layers: 2 FLOPs per multiply-accumulate; bias adds are not counted (as
  `torch.utils.flop_counter.FlopCounterMode` does). This part is also in the `matmul_flops` column.
- elementwise steps: 1 FLOP per arithmetic operation per element:
  add, scale, ReLU/GELU: 1; softmax: 3 per score (exp, sum, divide);
  LayerNorm: 7 per element (mean, centre, square, variance, divide, gain, bias);
  RMSNorm: 4 per element (square, mean, divide, gain).
- embedding lookups: 0. Dropout is the identity at inference and has no row.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from encoder import hooks
from encoder.capture import Trace
from encoder.config import EncoderConfig
from encoder.model import Norm, TransformerEncoder

NORM_FLOPS_PER_ELEMENT = {"layernorm": 7, "rmsnorm": 4}
NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}
ACTIVATION_NAMES = {"relu": "ReLU", "gelu": "GELU"}
SOFTMAX_FLOPS_PER_SCORE = 3

# `kind` of the ledger rows that are matrix multiplies
MATMUL_KINDS = ("projection", "attention", "feed-forward")


def _shape(*dims: int) -> str:
    return "[" + ", ".join(str(n) for n in dims) + "]"


def _row(
    layer: str,
    operation: str,
    kind: str,
    hook: str,
    input_shape: str,
    output_shape: str,
    params: int = 0,
    flops: int = 0,
    matmul_flops: int = 0,
) -> dict:
    return {
        "layer": layer,
        "operation": operation,
        "kind": kind,
        "hook": hook,
        "input_shape": input_shape,
        "output_shape": output_shape,
        "params": params,
        "flops": flops + matmul_flops,
        "matmul_flops": matmul_flops,
    }


def _norm_row(
    cfg: EncoderConfig, layer: str, label: str, norm: hooks.NormHooks, B: int, T: int
) -> dict:
    d = cfg.d_model
    x = _shape(B, T, d)
    params = 2 * d if cfg.norm_type == "layernorm" else d
    flops = NORM_FLOPS_PER_ELEMENT[cfg.norm_type] * B * T * d
    operation = f"{label} ({NORM_NAMES[cfg.norm_type]})"
    return _row(layer, operation, "norm", norm.out, x, x, params, flops)


def _embedding_rows(cfg: EncoderConfig, B: int, T: int) -> list[dict]:
    d = cfg.d_model
    ids, x = _shape(B, T), _shape(B, T, d)
    scaled = cfg.scale_embeddings
    names = hooks.embed()
    rows = [
        _row(
            "embed",
            "token embedding x sqrt(d)" if scaled else "token embedding lookup",
            "lookup",
            names.token,
            ids,
            x,
            params=cfg.vocab_size * d,
            flops=B * T * d if scaled else 0,
        ),
        _row(
            "embed",
            f"position embedding ({cfg.positional})",
            "lookup",
            names.position,
            _shape(T),
            _shape(T, d),
            params=cfg.max_len * d if cfg.positional == "learned" else 0,
        ),
        _row(
            "embed",
            "add token + position",
            "residual",
            "",
            f"{x} + {_shape(T, d)}",
            x,
            flops=B * T * d,
        ),
    ]
    if cfg.type_vocab_size:
        rows.append(
            _row(
                "embed",
                "add token-type embedding",
                "lookup",
                "",
                ids,
                x,
                params=cfg.type_vocab_size * d,
                flops=B * T * d,
            )
        )
    if cfg.embedding_norm:
        rows.append(_norm_row(cfg, "embed", "embedding norm", names.norm, B, T))
    else:  # the last embedding step's output is what embed.hook_out captures
        rows[-1]["hook"] = names.out
    return rows


def _linear_row(
    layer: str,
    operation: str,
    kind: str,
    hook: str,
    shapes: tuple[str, str],
    rows: int,
    n_in: int,
    n_out: int,
) -> dict:
    """A linear layer applied to `rows` vectors: n_in x n_out weights plus n_out biases."""
    params = n_in * n_out + n_out
    return _row(
        layer, operation, kind, hook, *shapes, params=params, matmul_flops=2 * rows * n_in * n_out
    )


def _block_rows(cfg: EncoderConfig, i: int, B: int, T: int) -> list[dict]:
    d, H, dk, ff = cfg.d_model, cfg.num_heads, cfg.head_dim, cfg.d_ff
    layer, names = str(i), hooks.block(i)
    x, heads, scores = _shape(B, T, d), _shape(B, H, T, dk), _shape(B, H, T, T)
    hidden = _shape(B, T, ff)
    attention_matmul = 2 * B * H * T * T * dk
    attention = [
        _linear_row(
            layer,
            f"{name} projection, split into heads",
            "projection",
            hook,
            (x, heads),
            B * T,
            d,
            d,
        )
        for name, hook in (("Q", names.attn.q), ("K", names.attn.k), ("V", names.attn.v))
    ] + [
        _row(
            layer,
            "scores QK^T / sqrt(dk)",
            "attention",
            names.attn.scores,
            f"{heads} x {_shape(B, H, dk, T)}",
            scores,
            flops=B * H * T * T,
            matmul_flops=attention_matmul,
        ),
        _row(
            layer,
            "softmax",
            "softmax",
            names.attn.pattern,
            scores,
            scores,
            flops=SOFTMAX_FLOPS_PER_SCORE * B * H * T * T,
        ),
        _row(
            layer,
            "weights x V",
            "attention",
            names.attn.z,
            f"{scores} x {heads}",
            heads,
            matmul_flops=attention_matmul,
        ),
        _linear_row(
            layer,
            "concat heads + out projection",
            "projection",
            names.attn.out,
            (heads, x),
            B * T,
            d,
            d,
        ),
    ]
    feed_forward = [
        _linear_row(layer, "linear1", "feed-forward", names.mlp.pre, (x, hidden), B * T, d, ff),
        _row(
            layer,
            ACTIVATION_NAMES[cfg.activation],
            "activation",
            names.mlp.post,
            hidden,
            hidden,
            flops=B * T * ff,
        ),
        _linear_row(layer, "linear2", "feed-forward", names.mlp.out, (hidden, x), B * T, ff, d),
    ]

    def residual(hook: str) -> dict:
        return _row(layer, "residual add", "residual", hook, f"{x} + {x}", x, flops=B * T * d)

    ln1 = _norm_row(cfg, layer, "ln1", names.ln1, B, T)
    ln2 = _norm_row(cfg, layer, "ln2", names.ln2, B, T)
    if cfg.norm_first:  # pre-norm: x + f(norm(x))
        return [
            ln1,
            *attention,
            residual(names.resid_mid),
            ln2,
            *feed_forward,
            residual(names.resid_post),
        ]
    # post-norm: norm(x + f(x))
    return [
        *attention,
        residual(names.ln1.inp),
        ln1,
        *feed_forward,
        residual(names.ln2.inp),
        ln2,
    ]


def shape_ledger(model: TransformerEncoder, trace: Trace) -> pd.DataFrame:
    """One row per operation, in data-flow order: shapes, parameters and FLOPs of each step.

    Columns: layer ("embed", "0".."L-1", "final"), operation, kind (lookup | norm | projection |
    attention | softmax | feed-forward | activation | residual), hook (the hook capturing the
    step's output, or ""), input_shape, output_shape, params, flops, matmul_flops.
    """
    cfg = model.cfg
    B, T = trace.input_ids.shape
    rows = _embedding_rows(cfg, B, T)
    for i in range(cfg.num_layers):
        rows += _block_rows(cfg, i, B, T)
    if cfg.norm_first:
        rows.append(_norm_row(cfg, "final", "final norm", hooks.final_norm(cfg.num_layers), B, T))
    return pd.DataFrame(rows)


def norm_hook_names(cfg: EncoderConfig) -> list[str]:
    """The hooks `layernorm_stats` reads."""
    return [name for norm in hooks.norms(cfg) for name in norm.names]


def _real_tokens(trace: Trace) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The boolean [B, T] mask of real tokens and their sentence and position indices."""
    real = trace.attention_mask.bool().cpu()
    sentence, position = real.nonzero(as_tuple=True)
    return real, sentence, position


def layernorm_stats(trace: Trace, cfg: EncoderConfig) -> pd.DataFrame:
    """Mean and population std over d of each norm's input and output, per real token.

    Columns: layer (-1 = embedding norm, L = final norm), norm, sentence, position,
    in_mean, in_std, out_mean, out_std.
    """
    real, sentence, position = _real_tokens(trace)
    frames = []
    for norm in hooks.norms(cfg):
        x_in = trace[norm.inp].float().cpu()  # [B, T, d]
        x_out = trace[norm.out].float().cpu()  # [B, T, d]
        stats = {
            "in_mean": trace[norm.mean].float().cpu(),  # [B, T]
            "in_std": x_in.std(dim=-1, correction=0),
            "out_mean": x_out.mean(dim=-1),
            "out_std": x_out.std(dim=-1, correction=0),
        }
        frame = pd.DataFrame({name: value[real].numpy() for name, value in stats.items()})
        frame.insert(0, "position", position.numpy())
        frame.insert(0, "sentence", sentence.numpy())
        frame.insert(0, "norm", norm.label)
        frame.insert(0, "layer", norm.layer)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def norm_parameters(model: TransformerEncoder) -> pd.DataFrame:
    """Summary of every norm's learned gain (weight) and bias; bias columns are NaN for RMSNorm."""
    rows = []
    for module in model.modules():
        if not isinstance(module, Norm):
            continue
        layer, norm = module.names.layer, module.names.label
        gain = module.weight.detach().float()
        bias = module.bias.detach().float() if module.bias is not None else None
        rows.append(
            {
                "layer": layer,
                "norm": norm,
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


def _numel(module: torch.nn.Module | None) -> int:
    return 0 if module is None else sum(p.numel() for p in module.parameters())


def parameter_counts(model: TransformerEncoder) -> pd.DataFrame:
    """Parameters per component; `per_layer` holds one block's share for the stacked components."""
    embed, layers = model.embed, model.layers
    position = embed.position.weight.numel() if hasattr(embed, "position") else 0

    def per_layer(part) -> list[int]:
        return [part(block) for block in layers]

    attention = per_layer(lambda b: _numel(b.self_attn))
    feed_forward = per_layer(lambda b: _numel(b.linear1) + _numel(b.linear2))
    block_norms = per_layer(lambda b: _numel(b.norm1) + _numel(b.norm2))
    rows = [
        ("token embedding", _numel(embed.token), None),
        ("position embedding", position, None),
        ("token-type embedding", _numel(embed.token_type), None),
        ("embedding norm", _numel(embed.norm), None),
        ("attention (all layers)", sum(attention), attention[0]),
        ("feed-forward (all layers)", sum(feed_forward), feed_forward[0]),
        ("block norms (all layers)", sum(block_norms), block_norms[0]),
        ("final norm", _numel(model.norm), None),
        ("total", _numel(model), None),
    ]
    table = pd.DataFrame(rows, columns=["component", "params", "per_layer"])
    table["per_layer"] = table["per_layer"].astype("Int64")
    return table


def cost_summary(model: TransformerEncoder, trace: Trace) -> dict:
    """Batch size, tokens, parameters, FLOPs by part, and the bytes the captured tensors hold.

    activation_bytes counts each distinct captured tensor once (a tensor seen under two hook
    names, e.g. resid_mid and the next norm's input, is one tensor).
    """
    ledger = shape_ledger(model, trace)
    B, T = trace.input_ids.shape
    distinct = {id(t): t for t in trace.tensors.values()}.values()

    def matmul_flops(kind: str) -> int:
        return int(ledger.loc[ledger["kind"] == kind, "matmul_flops"].sum())

    return {
        "batch": B,
        "tokens": int(trace.attention_mask.sum()),
        "padded_tokens": B * T,
        "params": _numel(model),
        "flops": int(ledger["flops"].sum()),
        "attention_flops": matmul_flops("attention"),
        "projection_flops": matmul_flops("projection"),
        "ffn_flops": matmul_flops("feed-forward"),
        "activation_bytes": sum(t.numel() * t.element_size() for t in distinct),
    }


def head_metrics(trace: Trace, sentence: int) -> pd.DataFrame:
    """How each head of each layer spreads its attention over one sentence's real tokens.

    Per (layer, head), averaged over the real query tokens: entropy (nats), max_weight (row
    max), mean_distance (sum_k w * |q - k|, in tokens) and the share of attention to_self,
    to_previous (queries that have one), to_next (likewise), to_first and to_last real token.
    """
    real = trace.attention_mask[sentence].bool()
    index = real.nonzero(as_tuple=True)[0]
    weights = (
        trace.attention[:, sentence].float()[:, :, index][:, :, :, index].cpu()
    )  # [L, H, q, k]
    L, H, n, _ = weights.shape
    steps = torch.arange(n, dtype=torch.float32)
    distance = (steps[:, None] - steps[None, :]).abs()  # [q, k]
    plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), 0.0)

    def mean_over_queries(values: torch.Tensor) -> torch.Tensor:  # [L, H, q] -> [L, H]
        return values.mean(dim=-1) if values.shape[-1] else torch.full((L, H), math.nan)

    metrics = {
        "entropy": mean_over_queries(-plogp.sum(dim=-1)),
        "max_weight": mean_over_queries(weights.amax(dim=-1)),
        "mean_distance": mean_over_queries((weights * distance).sum(dim=-1)),
        "to_self": mean_over_queries(weights.diagonal(dim1=-2, dim2=-1)),
        "to_previous": mean_over_queries(weights.diagonal(offset=-1, dim1=-2, dim2=-1)),
        "to_next": mean_over_queries(weights.diagonal(offset=1, dim1=-2, dim2=-1)),
        "to_first": mean_over_queries(weights[..., 0]),
        "to_last": mean_over_queries(weights[..., n - 1]),
    }
    layer, head = torch.meshgrid(torch.arange(L), torch.arange(H), indexing="ij")
    table = {"layer": layer.flatten().numpy(), "head": head.flatten().numpy()}
    table.update({name: value.flatten().numpy() for name, value in metrics.items()})
    return pd.DataFrame(table)
