"""What switching heads off changes: a base Trace against one of the same input with heads ablated
(a special case of encoder.inspect.compare: the same model, so every comparison exists).

Heads are written `layer.head` and listed with commas (`0.2,1.8`), the form links carry.
Shapes: L = layers, B = sentences, T = tokens (with padding), H = heads.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from encoder.core.capture import Trace
from encoder.core.said import Said
from encoder.inspect.compare import TraceComparison, compare_traces, same_input

HEAD_PATTERN = re.compile(r"\s*(\d+)\.(\d+)\s*")

Head = tuple[int, int]  # (layer, head)


def parse_heads(text: str, num_layers: int, num_heads: int) -> tuple[tuple[Head, ...], list[str]]:
    """The (layer, head) pairs in `text` ("0.2,1.8"), sorted and without repeats, and a sentence
    for each item that is not one of this model's heads (those items are left out)."""
    heads: set[Head] = set()
    problems = []
    for item in text.split(","):
        if not item.strip():
            continue
        match = HEAD_PATTERN.fullmatch(item)
        if match is None:
            problems.append(
                Said("{item!r} is not written layer.head (e.g. 0.2)", item=item.strip())
            )
            continue
        layer, head = int(match[1]), int(match[2])
        if layer >= num_layers or head >= num_heads:
            problems.append(
                Said(
                    "{item!r} is not a head of this model (layers 0..{last_layer}, heads "
                    "0..{last_head})",
                    item=item.strip(),
                    last_layer=num_layers - 1,
                    last_head=num_heads - 1,
                )
            )
            continue
        heads.add((layer, head))
    return tuple(sorted(heads)), problems


@dataclass(frozen=True)
class AblationEffect(TraceComparison):
    """How far the ablated pass moved from the base pass (a comparison of the same model with and
    without `heads`, so every part of it exists).

    depth 0 is the embedding output, depth i + 1 the stream after block i.
    """

    heads: tuple[Head, ...] = ()

    @property
    def first_layer(self) -> int:
        """The earliest layer with a head switched off: attention differs only after it."""
        return min(layer for layer, _ in self.heads)

    def head_changes(self, sentence: int, n_valid: int, from_layer: int | None = None):
        """TraceComparison.head_changes, by default for the layers after `first_layer` (the
        only ones whose attention can change)."""
        start = self.first_layer + 1 if from_layer is None else from_layer
        return super().head_changes(sentence, n_valid, start)


def compare(base: Trace, ablated: Trace) -> AblationEffect:
    """Layer by layer, token by token: how the ablated pass's stream differs from the base's."""
    if not ablated.ablated_heads:
        raise ValueError("the second trace switches no head off: nothing to compare")
    if base.ablated_heads:
        raise ValueError(f"the base trace already switches heads off: {base.ablated_heads}")
    if not same_input(base, ablated):
        raise ValueError("the two traces were run on different inputs")
    comparison = compare_traces(base, ablated)
    return AblationEffect(**vars(comparison), heads=ablated.ablated_heads)


def head_effects(base: Trace, ablated: Callable[[tuple[int, int]], Trace], sentence: int):
    """For every (layer, head): the output's mean relative change over the sentence's real
    tokens when that head alone is switched off; `ablated((layer, head))` is the same input's
    trace with that head off (e.g. `model.trace(..., ablate_heads=[head])`, or a cached run's).
    Columns layer, head, change; largest first."""
    num_layers, _, num_heads = base.attention.shape[:3]
    rows = []
    for layer in range(num_layers):
        for head in range(num_heads):
            change = compare(base, ablated((layer, head))).output_change[sentence]  # [T], NaN pad
            rows.append({"layer": layer, "head": head, "change": float(np.nanmean(change))})
    table = pd.DataFrame(rows)
    return table.sort_values("change", ascending=False, kind="stable", ignore_index=True)
