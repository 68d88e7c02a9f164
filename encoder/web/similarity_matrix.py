"""The similarity matrix's data (similarity_matrix.js): the cosine of every pair of sentences at
every depth (0: the embeddings, ..., L: the output), drawn at one depth at a time with a slider
that the browser moves alone; in compare mode a second setup's matrix and B − A. Its sentences
are `Said`s (a front end tells them in its reader's language); the sentences' text is the user's,
sent as it is (the module draws it as text)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from encoder.core.said import Said, formatted
from encoder.web import plain


def _depths(sim_by_depth, labels: Sequence[str], depth_names: Sequence[str]) -> np.ndarray:
    if hasattr(sim_by_depth, "detach"):  # a torch tensor
        sim_by_depth = sim_by_depth.detach().float().cpu().numpy()
    values = np.asarray(sim_by_depth, dtype=np.float64)
    n = len(labels)
    if values.ndim != 3 or values.shape[1:] != (n, n) or values.shape[0] != len(depth_names):
        raise ValueError(
            f"the similarities have shape {values.shape}, not (depths, sentences, sentences) = "
            f"({len(depth_names)}, {n}, {n})"
        )
    if n == 0 or not np.isfinite(values).all():
        raise ValueError("the similarities hold no sentence, or NaN or infinity: nothing to draw")
    return values


def depth_caption(values: np.ndarray, depth_name: str) -> Said:
    """What the matrix `values` [B, B] at `depth_name` says: its most and least alike pairs (the
    sentences numbered from 1), or that one sentence has nothing to compare with."""
    n = values.shape[0]
    if n < 2:
        return Said("One sentence: nothing to compare it with (give two or more).")
    pairs = [(values[i, j], i + 1, j + 1) for i in range(n) for j in range(i + 1, n)]
    high, low = max(pairs), min(pairs)
    about = dict(depth=depth_name, a=high[1], b=high[2], high=formatted(high[0], ".2f"))
    if n == 2:
        return Said("{depth}: sentences {a} and {b} have a cosine of {high}.", **about)
    return Said(
        "{depth}: the most alike pair is sentences {a} and {b} (cosine {high}); the least alike, "
        "{c} and {d} ({low}).",
        **about,
        c=low[1],
        d=low[2],
        low=formatted(low[0], ".2f"),
    )


def _setup(values: np.ndarray, depth_names: Sequence[str], name: str) -> dict:
    return {
        "name": name,
        "depths": [str(d) for d in depth_names],
        "values": plain(values),
        "captions": [depth_caption(v, str(d)) for v, d in zip(values, depth_names, strict=True)],
    }


def _alike(alike, n: int, depths: int) -> list[list]:
    """[[a, b, depth(, said)]] of each pair a < b that settles at a depth: from pairs with a, b,
    depth and said (encoder.inspect.similarity.alike_depths), or from an [n, n] array of depths
    (a negative number, NaN or None: never); a depth out of range is left out."""
    if alike is None:
        return []
    if all(hasattr(pair, "depth") for pair in alike):
        found = [[int(p.a), int(p.b), int(p.depth), p.said] for p in alike]
        return [pair for pair in found if 0 <= pair[2] < depths]
    if hasattr(alike, "detach"):
        alike = alike.detach().cpu().numpy()
    found = np.asarray(alike, dtype=np.float64)
    if found.shape != (n, n):
        raise ValueError(f"the alike depths have shape {found.shape}, not ({n}, {n})")
    return [
        [a, b, int(found[a, b])]
        for a in range(n)
        for b in range(a + 1, n)
        if np.isfinite(found[a, b]) and 0 <= found[a, b] < depths
    ]


def similarity_payload(
    sim_by_depth,
    labels: Sequence[str],
    depth_names: Sequence[str],
    words: dict | None = None,
    *,
    depth: int | None = None,
    alike=None,
    b: dict | None = None,
    name: str = "A",
) -> dict:
    """similarity_matrix.js's data: `sim_by_depth` [L+1, B, B] (the cosine of every pair of the
    `labels`' sentences at each depth, named by `depth_names`: "embeddings", "after block 0", ...,
    "output"), rounded (encoder.web.plain), with a caption for each depth (depth_caption) and the
    depth the slider opens at (`depth`, default the last). `labels`: the sentences as typed (the
    figure numbers them from 1). `words`: the figure's texts the caller says ({"title": ...,
    "notes": [...]}: Saids or told strings); `alike`: where each pair settles (a dot on its line,
    its sentence in the readout): encoder.inspect.similarity.alike_depths' pairs, or [B, B]
    depths (negative or None: never); `b`: setup B's data (this function's, same sentences) drawn
    beside it with B − A, B at the same share of its depth; `name`: this setup's ("A").
    ValueError when the shapes disagree."""
    values = _depths(sim_by_depth, labels, depth_names)
    words = dict(words or {})
    count = len(depth_names)
    start = count - 1 if depth is None else int(depth)
    if not 0 <= start < count:
        raise ValueError(f"depth={depth} is not one of the {count} depths 0..{count - 1}")
    data = {
        "title": words.get("title")
        or Said.plural(
            "Cosine similarity of {count} sentence at each depth",
            "Cosine similarity of {count} sentences at each depth",
            len(labels),
        ),
        "notes": list(words.get("notes", [])),
        "labels": [str(label) for label in labels],
        "depth": start,
        "scale": Said("cosine"),
        "axis": Said(
            "depth (0: {first}; {last}: {last_name})",
            first=str(depth_names[0]),
            last=count - 1,
            last_name=str(depth_names[-1]),
        ),  # fmt: skip
        "lines": Said("each pair's cosine across depth (a dot: where it settles)"),
        "alike": _alike(alike, len(labels), count),
        **_setup(values, depth_names, name),
    }
    if b is not None:
        if b.get("labels") != data["labels"]:
            raise ValueError("setup B's similarities are of other sentences than A's")
        data["b"] = {key: b[key] for key in ("name", "depths", "values", "captions", "alike")}
        data["difference"] = Said("{b} − {a}", a=name, b=b["name"])
    return data
