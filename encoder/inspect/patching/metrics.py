"""The scalars a patch restores (encoder.inspect.patching's metrics): each a name and, from the
clean and corrupted outputs, a scorer of a batch of outputs [B, T, d] -> [B]."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from encoder.core.lm_head import MaskedLMHead
from encoder.core.said import Said
from encoder.inspect.masked import NO_HEAD, checked_positions
from encoder.inspect.similarity import DEFAULT, Pooling, pooled

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

        def score(out: torch.Tensor) -> torch.Tensor:
            logits = head(out[:, position]).double()  # [B, vocab]
            return logits[:, words[0]] - logits[:, words[1]]

        return score

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
