"""The patching grids (see encoder.inspect.patching): one partial forward per layer, every cell
of the layer a row of the batch, and a sentence a teacher can say about each grid."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from encoder.core import hooks
from encoder.core.capture import Trace, replacing
from encoder.core.model import TransformerEncoder
from encoder.core.said import Listed, Quoted, Said, formatted
from encoder.inspect.limits import MAX_ACTIVATION_BYTES, check_run, estimate_activation_bytes
from encoder.inspect.patching.metrics import Metric, Scorer

GRIDS = ("residual", "heads", "attention", "mlp")


@dataclass(frozen=True)
class Patching:
    """The normalised effects of every patch (see the module docstring), with a sentence per
    grid (`said`: {grid: Said})."""

    tokens: list[str]  # the clean sentence's
    metric: str
    clean: float  # metric(clean output)
    corrupted: float  # metric(corrupted output)
    residual: np.ndarray  # [L+1, T]
    heads: np.ndarray  # [L, H]
    attention: np.ndarray  # [L, T]
    mlp: np.ndarray  # [L, T]
    said: dict[str, Said] = field(default_factory=dict)

    def to_json(self) -> dict:
        """What `python -m encoder patch --json` prints."""
        found = {"tokens": list(self.tokens), "metric": self.metric}
        found |= {"clean": self.clean, "corrupted": self.corrupted}
        return found | {grid: getattr(self, grid).tolist() for grid in GRIDS}


def as_batch(ids: torch.Tensor, model: TransformerEncoder) -> torch.Tensor:
    """[T] or [1, T] token ids -> [1, T] on the model's device."""
    ids = torch.as_tensor(ids, device=model.device)
    return ids[None] if ids.dim() == 1 else ids


def check_pair(clean: torch.Tensor, corrupted: torch.Tensor) -> None:
    """ValueError(Said) unless the two [1, T] sentences have the same count and differ."""
    if clean.shape != corrupted.shape:
        raise ValueError(
            Said(
                "the clean sentence has {clean} tokens and the corrupted one {corrupted}: "
                "patching copies states token by token, so both need the same number of tokens",
                clean=clean.shape[-1],
                corrupted=corrupted.shape[-1],
            )
        )
    if torch.equal(clean, corrupted):
        raise ValueError(
            Said(
                "the two sentences are the same tokens: the metric differs by 0 between them, "
                "so there is nothing to restore; change a word of the corrupted one"
            )
        )


def grid_cells(model: TransformerEncoder, grid: str) -> list[tuple[str, int]]:
    """Each row of `grid`: the hook it patches and the block the partial forward starts at."""
    L = model.cfg.num_layers
    if grid == "residual":  # the stream entering block l is the input of blocks_from(l)
        return [("", layer) for layer in range(L + 1)]
    where = {
        "heads": lambda b: b.attn.z,
        "attention": lambda b: b.attn.out,
        "mlp": lambda b: b.mlp.out,
    }[grid]
    return [(where(hooks.block(layer)), layer) for layer in range(L)]


def _rows_per_pass(model: TransformerEncoder, tokens: int) -> int:
    """How many patched runs one forward takes within the run budget (limits)."""
    return max(1, MAX_ACTIVATION_BYTES // estimate_activation_bytes(model.cfg, 1, tokens))


@torch.no_grad()
def raw_grid(
    model: TransformerEncoder, grid: str, into: Trace, source: Trace, score: Scorer
) -> torch.Tensor:
    """[rows, cols] the metric of run `into` with each cell of `grid` copied from run `source`
    (traces of one sentence each, keeping the grid's hooks)."""
    T, H = into.input_ids.shape[1], model.cfg.num_heads
    cols = H if grid == "heads" else T
    chunk = _rows_per_pass(model, T)
    rows = []
    for name, layer in grid_cells(model, grid):
        values = []
        for start in range(0, cols, chunk):
            cells = torch.arange(start, min(cols, start + chunk), device=into.output.device)
            batch = torch.arange(len(cells), device=cells.device)  # row i patches cell cells[i]
            x = into.hidden_states[layer].expand(len(cells), -1, -1)
            if not name:  # the residual stream: patch the input of blocks_from(layer) itself
                x = x.clone()
                x[batch, cells] = source.hidden_states[layer][0, cells]
                values.append(score(model.blocks_from(layer, x)))
                continue
            part = source[name][0]  # [H, T, dk] (heads) or [T, d]

            def change(y: torch.Tensor, batch=batch, cells=cells, part=part) -> torch.Tensor:
                y = y.clone()
                y[batch, cells] = part[cells]
                return y

            with replacing({name: change}):
                values.append(score(model.blocks_from(layer, x)))
        rows.append(torch.cat(values))
    return torch.stack(rows)


def normalised(raw: torch.Tensor, clean: float, corrupted: float) -> np.ndarray:
    return ((raw.double() - corrupted) / (clean - corrupted)).cpu().numpy()


def grid_names(model: TransformerEncoder) -> list[str]:
    """The hooks the grids read from a trace."""
    return [name for grid in GRIDS[1:] for name, _ in grid_cells(model, grid)]


@torch.no_grad()
def patch(
    model: TransformerEncoder,
    clean_ids: torch.Tensor,
    corrupted_ids: torch.Tensor,
    metric: Metric,
    tokens: list[str],
    heard: Callable[[str, float], None] | None = None,
) -> Patching:
    """Every grid of the module docstring for two sentences of the same token count ([T] or
    [1, T] ids; `tokens`: the clean sentence's). ValueError(Said) for different counts, the same
    sentence twice, a metric equal on both runs (nothing to restore), or a run over the bounds.
    `heard(grid, done)` is told before each grid is patched (done: 0..1, for a progress bar)."""
    clean_ids, corrupted_ids = as_batch(clean_ids, model), as_batch(corrupted_ids, model)
    check_pair(clean_ids, corrupted_ids)
    check_run(model.cfg, 1, clean_ids.shape[1])
    clean, corrupted = (
        model.trace(ids, names=grid_names(model)) for ids in (clean_ids, corrupted_ids)
    )
    score = metric.scorer(clean.output, corrupted.output)
    ends = float(score(clean.output)), float(score(corrupted.output))
    if abs(ends[0] - ends[1]) <= 1e-6 * max(1.0, abs(ends[0])):
        raise ValueError(
            Said(
                "the {metric} metric is {value} on both sentences: there is nothing to restore",
                metric=metric.name,
                value=formatted(ends[0], ".4g"),
            )
        )
    grids = {}
    for done, g in enumerate(GRIDS):
        if heard is not None:
            heard(g, done / len(GRIDS))
        grids[g] = normalised(raw_grid(model, g, corrupted, clean, score), *ends)
    said = {g: grid_said(g, grids[g], tokens) for g in GRIDS}
    return Patching(list(tokens), metric.name, *ends, **grids, said=said)


def _span(first: int, last: int) -> Said:
    if first == last:
        return Said("at layer {layer}", layer=first)
    return Said("at layers {first}-{last}", first=first, last=last)


QUIET = 0.1  # a patch that brings back no more than this is not named as the one that matters
GRID_PARTS = {
    "residual": Said("the stream"),
    "attention": Said("the attention output"),
    "mlp": Said("the feed-forward output"),
}


def grid_said(grid: str, effects: np.ndarray, tokens: list[str]) -> Said:
    """A sentence true of the grid: for heads, the head that restores the most and how many
    restore over QUIET; else, where no cell restores over QUIET, the most one does; otherwise at
    each layer the token whose patch restores the most: the first run of layers that token leads,
    the least it restores there, and which tokens lead after."""
    two = lambda value: formatted(float(value), ".2f")  # noqa: E731
    if grid == "heads":
        layer, head = np.unravel_index(int(effects.argmax()), effects.shape)
        return Said.plural(
            "restoring head {layer}.{head} brings back the most, {value} of the clean output; "
            "{count} head of {total} brings back more than {quiet}",
            "restoring head {layer}.{head} brings back the most, {value} of the clean output; "
            "{count} heads of {total} bring back more than {quiet}",
            int((effects > QUIET).sum()),
            layer=int(layer),
            head=int(head),
            value=two(effects.max()),
            total=effects.size,
            quiet=formatted(QUIET, ".1f"),
        )
    if effects.max() <= QUIET:
        return Said(
            "no single patch of {part} brings back more than {value} of the clean output",
            part=GRID_PARTS[grid],
            value=two(effects.max()),
        )
    best = effects.argmax(axis=1)  # [rows] the leading token of each layer
    last = int(np.argmax(best != best[0]) - 1) if (best != best[0]).any() else len(best) - 1
    values = {
        "part": GRID_PARTS[grid],
        "token": Quoted(tokens[best[0]]),
        "layers": _span(0, last),
        "value": two(effects[np.arange(last + 1), best[: last + 1]].min()),
    }
    if last == len(best) - 1:
        return Said(
            "restoring {part} of {token} brings back the most {layers}: at least {value} of the "
            "clean output",
            **values,
        )
    later = Listed(Quoted(tokens[t]) for t in dict.fromkeys(best[last + 1 :].tolist()))
    return Said(
        "restoring {part} of {token} brings back the most {layers} (at least {value} of the clean "
        "output); after layer {last}, the most comes back from {later}",
        last=last,
        later=later,
        **values,
    )
