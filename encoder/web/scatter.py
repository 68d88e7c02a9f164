"""The data head_scatter.js draws: one head's queries and keys over a corpus, as plain lists."""

from __future__ import annotations

from encoder.inspect.corpus import CorpusStats, head_points
from encoder.inspect.token_kinds import KINDS

ROLE_CODES = {"query": 0, "key": 1}


def scatter_data(stats: CorpusStats, sentences: list[str], layer: int, head: int) -> dict:
    """head_scatter.js's `data` for head (layer, head): coordinates rounded to 4 decimals (in
    float64: float32 rounded reads 0.9822999835014343 in JSON) on the plane's two principal axes,
    named in `axes` (in English: head_scatter.js says them in the language it speaks, the data's
    (encoder.web.spoken_in) or the page's); user text (tokens, sentences) as data only."""
    points = head_points(stats, layer, head)
    codes = {kind: i for i, kind in enumerate(KINDS)}
    return {
        "title": f"layer {layer}, head {head}: {len(points):,} queries and keys",
        "x": points["x"].astype("float64").round(4).tolist(),
        "y": points["y"].astype("float64").round(4).tolist(),
        "role": points["role"].map(ROLE_CODES).tolist(),
        "sentence": points["sentence"].tolist(),
        "position": points["position"].tolist(),
        "kind": points["kind"].map(codes).tolist(),
        "kinds": list(KINDS),
        "tokens": points["token"].tolist(),
        "sentences": list(sentences),
        "axes": ["the first principal component", "the second principal component"],
        "layer": layer,
        "head": head,
    }
