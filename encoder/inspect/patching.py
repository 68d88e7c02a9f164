"""Activation patching: copy one piece of a clean run's state into a corrupted run (two sentences
of the same token count) and measure how much of the clean output comes back (causal tracing,
Meng et al. 2022), and the cone: where one patch spreads, with the encoder's attention and with
a decoder's causal mask.

    metric = metric_named("cosine", pooling=pooling_of(directory))  # or "mask", "task"
    result = patch(model, clean_ids, corrupted_ids, metric, tokens)  # ids [T] or [1, T]
    result.residual[l, t]   # restoring the stream entering block l at token t
    result.said["residual"] # a sentence a teacher can say about that grid
    seen = cone(model, clean_ids, corrupted_ids, layer=2, position=5, tokens=tokens)

Each grid holds the normalised effect (metric(patched) - metric(corrupted)) / (metric(clean) -
metric(corrupted)): 0 is the corrupted run, 1 the clean one. The grids (ROME's three, plus heads):

    residual  [L+1, T]  the stream entering block l at token t (row 0: the embeddings' output;
                        row L: the last block's output, trace.hidden_states[L]). A pre-norm
                        model's final norm comes after the patch (the metric reads the model's
                        output); it acts on each token alone, so row L equals patching the
                        output itself at that token.
    heads     [L, H]    one head's output before the output projection (attn.hook_z), every token
    attention [L, T]    block l's attention output (attn.hook_out, after W_O) at token t
    mlp       [L, T]    block l's feed-forward output (mlp.hook_out) at token t

Every grid runs batched, one partial forward per layer: the corrupted stream entering block l,
repeated once per token (or head) of the grid's row, runs blocks l.. (model.blocks_from), each
batch row patched at its own cell by a forward pre-hook on a HookPoint (the blocks before l are
the same for every row and are not run again).

Metrics (`Metric`: a name and, from the clean and corrupted outputs, a scorer of a batch of
outputs [B, T, d] -> [B]):
    cosine  the cosine of the sentence embedding (the model's Pooling) with the clean one
    mask    at the first mask of the clean sentence, the masked-LM head's logit of the clean
            run's top word minus the corrupted run's top word's
    task    a task model's classifier: the logit of the class the clean run predicts at each
            token, averaged over the tokens
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from encoder.core import hooks
from encoder.core.capture import HookPoint, Trace
from encoder.core.lm_head import MaskedLMHead
from encoder.core.model import TransformerEncoder
from encoder.core.said import Listed, Quoted, Said, formatted
from encoder.inspect.limits import MAX_ACTIVATION_BYTES, check_run, estimate_activation_bytes
from encoder.inspect.masked import NO_HEAD, checked_positions
from encoder.inspect.similarity import DEFAULT, Pooling, pooled

GRIDS = ("residual", "heads", "attention", "mlp")
METRICS = ("cosine", "mask", "task")
Scorer = Callable[[torch.Tensor], torch.Tensor]  # outputs [B, T, d] -> metric [B]


@dataclass(frozen=True)
class Metric:
    """A scalar the patches restore: `scorer(clean_output, corrupted_output)` ([1, T, d] each)
    gives the function that scores a batch of outputs."""

    name: str  # one of METRICS
    scorer: Callable[[torch.Tensor, torch.Tensor], Scorer]


def cosine_metric(pooling: Pooling = DEFAULT) -> Metric:
    """The cosine of each output's sentence embedding with the clean output's."""

    def scorer(clean: torch.Tensor, corrupted: torch.Tensor) -> Scorer:
        def embed(out: torch.Tensor) -> torch.Tensor:
            return pooled(out.double(), torch.ones(out.shape[:2], device=out.device), pooling)

        target = embed(clean)  # [1, d]
        return lambda out: F.cosine_similarity(embed(out), target, dim=-1)

    return Metric("cosine", scorer)


def mask_metric(head: MaskedLMHead, position: int) -> Metric:
    """At `position`, the head's logit of the clean run's top word minus the corrupted run's."""

    def scorer(clean: torch.Tensor, corrupted: torch.Tensor) -> Scorer:
        words = [int(head(run[0, position]).argmax()) for run in (clean, corrupted)]
        return lambda out: (lambda logits: logits[:, words[0]] - logits[:, words[1]])(
            head(out[:, position]).double()
        )

    return Metric("mask", scorer)


def task_metric(classifier: nn.Module) -> Metric:
    """A task model's classifier head ([.., d] -> [.., classes]): the logit of the class the
    clean run predicts at each token, averaged over the tokens."""

    def scorer(clean: torch.Tensor, corrupted: torch.Tensor) -> Scorer:
        target = classifier(clean)[0].argmax(-1)  # [T] the clean run's classes
        index = target[None, :, None]
        return lambda out: (
            classifier(out).double().gather(-1, index.expand(len(out), -1, -1)).mean((1, 2))
        )

    return Metric("task", scorer)


def metric_named(
    name: str,
    *,
    pooling: Pooling = DEFAULT,
    lm_head: MaskedLMHead | None = None,
    classifier: nn.Module | None = None,
    tokens: list[str] | None = None,
    mask_token: str | None = None,
) -> Metric:
    """The metric called `name` (METRICS); ValueError(Said) when the model lacks what it needs:
    a masked-LM head and a mask among the clean sentence's `tokens` for "mask" (its first mask
    is read), a task model's `classifier` for "task"."""
    if name == "cosine":
        return cosine_metric(pooling)
    if name == "mask":
        if lm_head is None:
            raise ValueError(NO_HEAD)
        return mask_metric(lm_head, checked_positions(tokens or [], mask_token or "[MASK]")[0])
    if name == "task":
        if classifier is None:
            raise ValueError(Said("only a model trained here for a task has a correct token"))
        return task_metric(classifier)
    raise ValueError(Said("unknown metric {name!r}: one of {names}", name=name, names=METRICS))


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


def hook_point(model: TransformerEncoder, name: str) -> HookPoint:
    """The model's HookPoint called `name` (a name from encoder.core.hooks)."""
    for module in model.modules():
        if isinstance(module, HookPoint) and module.name == name:
            return module
    raise ValueError(Said("this model has no hook point {name!r}", name=name))


@contextmanager
def replacing(model: TransformerEncoder, name: str, change: Callable) -> Iterator[None]:
    """While inside, the HookPoint `name` passes on change(x) instead of x (a forward pre-hook:
    a capture records the changed tensor)."""
    handle = hook_point(model, name).register_forward_pre_hook(lambda _, args: (change(args[0]),))
    try:
        yield
    finally:
        handle.remove()


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
            x = into.hidden_states[layer].expand(len(cells), -1, -1)
            if not name:  # the residual stream: patch the input of blocks_from(layer) itself
                x = x.clone()
                x[torch.arange(len(cells)), cells] = source.hidden_states[layer][0, cells]
                values.append(score(model.blocks_from(layer, x)))
                continue
            part = source[name][0]  # [H, T, dk] (heads) or [T, d]

            def change(y: torch.Tensor, cells=cells, part=part) -> torch.Tensor:
                y = y.clone()
                y[torch.arange(len(cells)), cells] = part[cells]
                return y

            with replacing(model, name, change):
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
) -> Patching:
    """Every grid of the module docstring for two sentences of the same token count ([T] or
    [1, T] ids; `tokens`: the clean sentence's). ValueError(Said) for different counts, the same
    sentence twice, a metric equal on both runs (nothing to restore), or a run over the bounds."""
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
    grids = {g: normalised(raw_grid(model, g, corrupted, clean, score), *ends) for g in GRIDS}
    said = {g: grid_said(g, grids[g], tokens) for g in GRIDS}
    return Patching(list(tokens), metric.name, *ends, **grids, said=said)


def _span(first: int, last: int) -> Said:
    if first == last:
        return Said("at layer {layer}", layer=first)
    return Said("at layers {first}-{last}", first=first, last=last)


GRID_PARTS = {
    "residual": Said("the stream"),
    "attention": Said("the attention output"),
    "mlp": Said("the feed-forward output"),
}


def grid_said(grid: str, effects: np.ndarray, tokens: list[str]) -> Said:
    """A sentence true of the grid: for heads, the head that restores the most and how many
    restore over a tenth; else, at each layer the token whose patch restores the most: the first
    run of layers that token leads, the least it restores there, and which tokens lead after."""
    two = lambda value: formatted(float(value), ".2f")  # noqa: E731
    if grid == "heads":
        layer, head = np.unravel_index(int(effects.argmax()), effects.shape)
        return Said.plural(
            "restoring head {layer}.{head} brings back the most, {value} of the clean output; "
            "{count} head of {total} brings back more than 0.1",
            "restoring head {layer}.{head} brings back the most, {value} of the clean output; "
            "{count} heads of {total} bring back more than 0.1",
            int((effects > 0.1).sum()),
            layer=int(layer),
            head=int(head),
            value=two(effects.max()),
            total=effects.size,
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
        "output); after layer {last}, {later} matter most",
        last=last,
        later=later,
        **values,
    )


@dataclass(frozen=True)
class Cone:
    """Where one patch spreads: the norm of (patched - corrupted) stream, [L+1, T] each."""

    layer: int
    position: int
    encoder: np.ndarray  # the model's own attention
    causal: np.ndarray  # the same with a decoder's causal mask
    said: Said


@torch.no_grad()
def cone_norms(
    model: TransformerEncoder,
    clean_ids: torch.Tensor,
    corrupted_ids: torch.Tensor,
    layer: int,
    position: int,
    causal: bool = False,
) -> torch.Tensor:
    """[L+1, T]: after copying the clean stream entering block `layer` at `position` into the
    corrupted run, the norm of (patched - corrupted) stream at every depth (trace.hidden_states)
    and token; both runs with a causal mask when `causal`."""
    clean_ids, corrupted_ids = as_batch(clean_ids, model), as_batch(corrupted_ids, model)
    check_pair(clean_ids, corrupted_ids)
    L, T = model.cfg.num_layers, clean_ids.shape[1]
    if not (0 <= layer <= L and 0 <= position < T):
        raise ValueError(
            Said(
                "cannot patch layer {layer}, token {position}: layers are 0..{L}, tokens 0..{last}",
                layer=layer,
                position=position,
                L=L,
                last=T - 1,
            )
        )
    clean, corrupted = (
        model.trace(ids, names=(), causal=causal) for ids in (clean_ids, corrupted_ids)
    )
    state = clean.hidden_states[layer][0, position]

    def change(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[:, position] = state
        return x

    with replacing(model, hooks.stream(layer), change):
        patched = model.trace(corrupted_ids, names=(), causal=causal)
    pairs = zip(patched.hidden_states, corrupted.hidden_states, strict=True)
    return torch.stack([(p - c)[0].norm(dim=-1) for p, c in pairs])


def cone(
    model: TransformerEncoder,
    clean_ids: torch.Tensor,
    corrupted_ids: torch.Tensor,
    layer: int,
    position: int,
    tokens: list[str],
) -> Cone:
    """The cone of one residual patch (cone_norms), in the encoder and under a causal mask, and a
    sentence comparing how many tokens each reaches one layer later."""
    grids = [
        cone_norms(model, clean_ids, corrupted_ids, layer, position, causal).cpu().numpy()
        for causal in (False, True)
    ]
    return Cone(layer, position, *grids, said=cone_said(*grids, layer, position, tokens))


def reached(norms: np.ndarray, layer: int) -> np.ndarray:
    """[T] which tokens the patch changed at `layer` (more than 1e-6 of the largest change)."""
    return norms[layer] > 1e-6 * max(float(norms.max()), 1e-30)


def cone_said(
    encoder: np.ndarray, causal: np.ndarray, layer: int, position: int, tokens: list[str]
) -> Said:
    """How many tokens the patch reaches one layer later, in the encoder and under the mask."""
    if layer == len(encoder) - 1:
        return Said("a patch at the output has no later layer to spread to")
    if not reached(causal, layer)[position]:
        return Said.plural(
            "one layer after the patch at {token} (layer {layer}), it has reached {encoder} of "
            "{count} token in the encoder, which attends both ways; under a decoder's causal "
            "mask the two runs' streams at {token} are equal, so the patch changes nothing: "
            "there a token sees no token after it",
            "one layer after the patch at {token} (layer {layer}), it has reached {encoder} of "
            "{count} tokens in the encoder, which attends both ways; under a decoder's causal "
            "mask the two runs' streams at {token} are equal, so the patch changes nothing: "
            "there a token sees no token after it",
            len(tokens),
            token=Quoted(tokens[position]),
            layer=layer,
            encoder=int(reached(encoder, layer + 1).sum()),
        )
    return Said.plural(
        "one layer after the patch at {token} (layer {layer}), it has reached {encoder} of "
        "{count} token in the encoder, which attends both ways; under a decoder's causal mask "
        "{causal}: only {token} and the tokens after it",
        "one layer after the patch at {token} (layer {layer}), it has reached {encoder} of "
        "{count} tokens in the encoder, which attends both ways; under a decoder's causal mask "
        "{causal}: only {token} and the tokens after it",
        len(tokens),
        token=Quoted(tokens[position]),
        layer=layer,
        encoder=int(reached(encoder, layer + 1).sum()),
        causal=int(reached(causal, layer + 1).sum()),
    )
