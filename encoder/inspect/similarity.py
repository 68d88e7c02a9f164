"""Sentence embeddings and how alike two sentences are, at every depth of the encoder.

The model's own pooling (pooling_of: a sentence-transformers directory's modules.json and
1_Pooling/config.json, else mean over real tokens) turns a [B, T, d] stream into one vector per
sentence; the same pooling at each depth (embeddings_by_depth) shows the likeness form layer by
layer. Under mean pooling the cosine splits exactly into one share per token (token_shares);
ALIKE_RULE names the depth at which each pair becomes as alike (or as far apart) as the model
finally finds it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from encoder.core.capture import Trace
from encoder.core.said import Quoted, Said, formatted

ST_MODES = {f"pooling_mode_{key}": mode for key, mode in (("mean_tokens", "mean"),
            ("cls_token", "cls"), ("max_tokens", "max"))}  # fmt: skip
ALIKE_WITHIN = 0.05  # a pair has settled once its cosine stays this close to the output's
ALIKE_RULE = Said(
    "A pair's likeness is settled at the first depth from which its cosine stays within "
    "{within} of its cosine at the output: there the pair has become as alike (or as far "
    "apart) as the model finally finds it.",
    within=formatted(ALIKE_WITHIN, ".2f"),
)


@dataclass(frozen=True)
class Pooling:
    mode: str  # "mean" | "cls" | "max"
    normalized: bool  # a Normalize module follows: unit-length embeddings
    why: Said  # which pooling and why


DEFAULT = Pooling(
    "mean", False, Said("no sentence-transformers config: mean over real tokens, the usual default")
)


def _json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(
            Said("{path} cannot be read: {error}", path=str(path), error=str(error))
        ) from error


def pooling_of(directory: Path | str | None) -> Pooling:
    """The pooling a sentence-transformers directory declares (modules.json, then its Pooling
    module's config.json, and whether a Normalize module follows); without those files (or for
    None) mean pooling over real tokens, not normalised. A pooling this library does not compute
    (mean_sqrt_len, several modes at once) falls back to mean, and `why` says so, as it says a
    module it leaves out (a Dense layer after the pooling)."""
    modules_file = Path(directory) / "modules.json" if directory is not None else None
    if modules_file is None or not modules_file.is_file():
        return DEFAULT
    modules = [m for m in _json(modules_file) or () if isinstance(m, dict)]
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if "Pooling" not in kinds:
        return DEFAULT
    config = _json(
        Path(directory) / modules[kinds.index("Pooling")].get("path", "") / "config.json"
    )
    chosen = [mode for key, mode in ST_MODES.items() if config.get(key) is True]
    asked = sorted(k for k, on in config.items() if k.startswith("pooling_mode") and on is True)
    normalized = "Normalize" in kinds
    if len(asked) == 1 and len(chosen) == 1:
        how = {
            "mean": Said("mean over real tokens"),
            "cls": Said("the first token"),
            "max": Said("max over real tokens"),
        }[chosen[0]]
        if normalized:
            why = Said(
                "{how}, then normalised, as the model's sentence-transformers config says", how=how
            )
        else:
            why = Said(
                "{how}, not normalised, as the model's sentence-transformers config says", how=how
            )
    else:
        chosen = ["mean"]
        why = Said(
            "the model's sentence-transformers config asks for {asked}, which is not computed "
            "here: mean over real tokens instead",
            asked=", ".join(asked) or Said("no pooling mode"),
        )
    left = [kind for kind in kinds if kind not in ("Transformer", "Pooling", "Normalize")]
    if left:
        why = Said(
            "{why}; its {modules} module is left out, so these vectors differ from the model's "
            "sentence embeddings",
            why=why,
            modules=", ".join(left),
        )
    return Pooling(chosen[0], normalized, why)


def pooled(states: torch.Tensor, attention_mask: torch.Tensor, pooling: Pooling) -> torch.Tensor:
    """[B, T, d] states and their [B, T] mask (1 = token) -> [B, d] sentence embeddings."""
    real = attention_mask.to(states.dtype).unsqueeze(-1)  # [B, T, 1]
    if pooling.mode == "mean":
        out = (states * real).sum(dim=1) / real.sum(dim=1).clamp_min(1e-9)
    elif pooling.mode == "max":
        out = states.masked_fill(real == 0, -1e9).amax(dim=1)
    elif pooling.mode == "cls":
        out = states[:, 0]
    else:
        raise ValueError(Said("unknown pooling {mode}: one of mean, cls, max", mode=pooling.mode))
    return F.normalize(out, p=2, dim=-1) if pooling.normalized else out


def check_depth(depth: int, num_layers: int) -> None:
    """ValueError unless 0 <= depth <= num_layers."""
    if not 0 <= depth <= num_layers:
        raise ValueError(
            Said(
                "depth {depth} is outside 0..{last}: this model has {last} blocks",
                depth=depth,
                last=num_layers,
            )
        )


def states_at(trace: Trace, depth: int) -> torch.Tensor:
    """The [B, T, d] stream at `depth`: 0 the embeddings' output, l after block l, the last
    trace.output (after the final norm where the model has one)."""
    check_depth(depth, trace.num_layers)
    return trace.output if depth == trace.num_layers else trace.hidden_states[depth]


def embeddings_by_depth(
    trace: Trace, attention_mask: torch.Tensor, pooling: Pooling
) -> torch.Tensor:
    """[L+1, B, d]: each depth's stream pooled the model's way; the last is its embedding."""
    mask = attention_mask.to(trace.output.device)
    return torch.stack(
        [pooled(states_at(trace, d), mask, pooling) for d in range(trace.num_layers + 1)]
    )


def cosine_matrix(embeddings: torch.Tensor) -> torch.Tensor:
    """[..., B, d] -> [..., B, B] cosine of every pair."""
    unit = F.normalize(embeddings, p=2, dim=-1)
    return unit @ unit.transpose(-1, -2)


def token_shares(
    trace: Trace, attention_mask: torch.Tensor, pooling: Pooling, a: int, b: int, depth: int
) -> torch.Tensor:
    """[n_a] each real token of sentence a's signed share of cos(a, b) at `depth`, summing to it.

    Under mean pooling u = Σᵢ xᵢ / n, so cos(u, v) = u·v̂ / ‖u‖ = Σᵢ xᵢ·v̂ / (n‖u‖): token i's
    share is xᵢ·v̂ / (n‖u‖) (normalising u and v afterwards changes no cosine)."""
    if pooling.mode != "mean":
        raise ValueError(
            Said(
                "token shares need mean pooling: under {mode} pooling the sentence vector is "
                "not a sum over its tokens, so the cosine does not split into one share each",
                mode=pooling.mode,
            )
        )
    states = states_at(trace, depth).double()
    mask = attention_mask.to(states.device).bool()
    x = states[a][mask[a]]  # [n_a, d]
    u, v = x.mean(dim=0), states[b][mask[b]].mean(dim=0)
    return (x @ F.normalize(v, dim=0)) / (len(x) * u.norm())


@dataclass(frozen=True)
class AlikePair:
    a: int
    b: int
    depth: int  # ALIKE_RULE's depth, 0..L
    cosines: tuple[float, ...]  # the pair's cosine at each depth, 0..L
    said: Said


def depth_name(depth: int) -> Said:
    """'the embeddings' for depth 0, else 'block k' for the stream after block k (= depth - 1),
    as the page numbers blocks."""
    return Said("the embeddings") if depth == 0 else Said("block {block}", block=depth - 1)


def alike_depths(
    similarity_by_depth: torch.Tensor, labels: list[str], within: float = ALIKE_WITHIN
) -> list[AlikePair]:
    """Every pair a < b of the [L+1, B, B] cosines: ALIKE_RULE's depth, and a sentence saying it
    from the numbers (labels: each sentence as the reader knows it, quoted)."""
    cos = similarity_by_depth.double().cpu()
    pairs = []
    for a in range(cos.shape[1]):
        for b in range(a + 1, cos.shape[1]):
            series = cos[:, a, b]
            off = ((series - series[-1]).abs() > within).nonzero()
            depth = int(off[-1]) + 1 if len(off) else 0
            start, end = float(series[0]), float(series[-1])
            values = {
                "a": Quoted(labels[a]),
                "b": Quoted(labels[b]),
                "depth": depth_name(depth),
                "start": formatted(start, ".2f"),
                "end": formatted(end, ".2f"),
            }
            if end >= start:
                said = Said(
                    "{a} and {b} become alike from {depth} (cosine {start} at the embeddings, "
                    "{end} at the output)",
                    **values,
                )
            else:
                said = Said(
                    "{a} and {b} grow apart until {depth} (cosine {start} at the embeddings, "
                    "{end} at the output)",
                    **values,
                )
            pairs.append(AlikePair(a, b, depth, tuple(series.tolist()), said))
    return pairs
