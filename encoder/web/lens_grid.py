"""The lens grid's data (lens_grid.js): the masked-LM head read at each layer (rows: after block
1..L, the last the model's prediction) at each mask of a sentence (columns), each cell the top
words and their probabilities. Its sentences are `Said`s; the tokens are sent as they are (the
module draws them as text)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from encoder.core.said import Quoted, Said, formatted
from encoder.web import plain

LENS_TOP = 5  # the words a cell keeps: its top five, shown on focus


def _get(thing, name: str):
    """`thing.name`, or thing[name] for a dict (a MaskFill or Word, or their JSON)."""
    return thing[name] if isinstance(thing, dict) else getattr(thing, name)


def _token(word) -> str:
    """A word's token; an id its tokenizer does not name (a head wider than the vocabulary) as
    "#id"."""
    token = _get(word, "token")
    return f"#{int(_get(word, 'id'))}" if token is None else str(token)


def _words(words) -> tuple[list[str], list[float]]:
    kept = list(words)[:LENS_TOP]
    return [_token(w) for w in kept], [float(_get(w, "probability")) for w in kept]


def settled_from(tops: Sequence[str]) -> int:
    """The first layer from which the top word is the last layer's and stays so."""
    first = len(tops) - 1
    while first > 0 and tops[first - 1] == tops[-1]:
        first -= 1
    return first


def mask_caption(number: int, position: int, tops, probability: float) -> Said:
    """Mask `number` (from 1) at `position`: its predicted word, and from which layer it is on
    top (settled_from) and stays."""
    first = settled_from(tops)
    said = {"mask": number, "position": position, "word": Quoted(tops[-1])}
    said["p"] = formatted(probability, ".2f")
    if first == len(tops) - 1:
        return Said(
            "Mask {mask} (position {position}): {word}, {p} at the output, is on top only at the "
            "last layer.",
            **said,
        )
    return Said(
        "Mask {mask} (position {position}): {word}, {p} at the output, is on top from block "
        "{block} on.",
        **said,
        block=first,  # by_layer[l] reads the stream after block l
    )


def lens_payload(
    fills: Sequence,
    probabilities,
    tokens: Sequence[str],
    layer_names: Sequence[str],
    words: dict | None = None,
) -> dict:
    """lens_grid.js's data from `fills` (MaskFill's, or dicts with position, top and by_layer,
    their words with token, id and probability: encoder.inspect.masked), one a mask of the
    sentence `tokens`; `layer_names` (one per layer of by_layer: "after block 1", ...) name the
    rows. Each cell keeps its top LENS_TOP words and their probabilities ([layer][mask][k],
    rounded: encoder.web.plain); `probabilities` [L, M, V] (the lens's softmax, or None) gives
    "final": the prediction's probability at every layer ([layer][mask]). `words`: the caller's
    texts ({"title": ..., "notes": [...]}). ValueError when the shapes disagree."""
    words = dict(words or {})
    layers = len(layer_names)
    if not fills:
        raise ValueError(Said("No mask to draw: type [MASK] where a word should be predicted."))
    top_tokens, top_p, captions = [], [], []
    for number, fill in enumerate(fills, 1):
        by_layer = list(_get(fill, "by_layer"))
        if len(by_layer) != layers:
            raise ValueError(f"mask {number} has {len(by_layer)} layers, not {layers} names")
        found = [_words(w) for w in by_layer]
        top_tokens.append([t for t, _ in found])
        top_p.append([plain(p) for _, p in found])
        tops = [t[0] for t in top_tokens[-1]]
        position = int(_get(fill, "position"))
        captions.append(mask_caption(number, position, tops, top_p[-1][-1][0]))
    data = {
        "title": words.get("title")
        or Said.plural(
            "The masked word at each layer: {count} mask",
            "The masked words at each layer: {count} masks",
            len(fills),
        ),
        "notes": [*words.get("notes", []), *captions],
        "tokens": [str(t) for t in tokens],
        "masks": [int(_get(f, "position")) for f in fills],
        "layers": [str(name) for name in layer_names],
        # [layer][mask][k]: transposed from [mask][layer][k]
        "top_tokens": [list(row) for row in zip(*top_tokens, strict=True)],
        "top_p": [list(row) for row in zip(*top_p, strict=True)],
        "scale": Said("probability"),
        "prediction": Said("the prediction"),
    }
    if probabilities is not None:
        if hasattr(probabilities, "detach"):
            probabilities = probabilities.detach().float().cpu().numpy()
        found = np.asarray(probabilities, dtype=np.float32)
        if found.ndim != 3 or found.shape[:2] != (layers, len(fills)):
            raise ValueError(
                f"the probabilities have shape {found.shape}, not (layers, masks, vocabulary) = "
                f"({layers}, {len(fills)}, V)"
            )
        ids = [int(_get(_get(f, "top")[0], "id")) for f in fills]
        data["final"] = plain(found[:, np.arange(len(fills)), ids])
    return data
