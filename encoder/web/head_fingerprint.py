"""The heads' fingerprint's data (head_fingerprint.js): every head's behaviours over a corpus,
a column a head, a row a behaviour. Its words are `Said`s or the caller's: a front end tells them
in its reader's language."""

from __future__ import annotations

import numpy as np

from encoder.core.said import Said

FINGERPRINT_DIGITS = 4  # decimals sent: a colour off by less than 0.1 of a channel's 255 steps


def fingerprint_data(
    grid: np.ndarray, layers: list[int], heads: list[int], behaviours: list[str]
) -> dict:
    """grid [heads, FINGERPRINT]: every head's behaviours over the corpus (encoder.inspect.corpus's
    fingerprint(), a row a head, layer by layer) as head_fingerprint.js's data: its title and its
    colour bar's (Saids), each behaviour named as `behaviours` says (a row each),
    each column's head as a [layer, head] pair, and the values transposed to [behaviour][head],
    each rounded to FINGERPRINT_DIGITS decimals as a plain float (None where there is no value:
    NaN is not JSON), on a colour scale from 0 to 1 (every behaviour is a share or a spread in
    [0, 1]). ValueError when the shapes disagree."""
    values = np.asarray(grid, dtype=np.float64)
    wanted = (len(heads), len(behaviours))
    if values.shape != wanted or len(layers) != len(heads):
        raise ValueError(
            f"the fingerprint grid has shape {values.shape}, not (heads, behaviours) = "
            f"({len(heads)}, {len(behaviours)}), with {len(layers)} layer numbers"
        )
    rounded = np.round(values.T, FINGERPRINT_DIGITS)  # [behaviour, head]
    return {
        "title": Said(
            "Fingerprint of every head: its mean attention over the corpus (spread: entropy / ln n)"
        ),
        "behaviours": [str(name) for name in behaviours],
        "heads": [[int(layer), int(head)] for layer, head in zip(layers, heads, strict=True)],
        "values": [[float(v) if np.isfinite(v) else None for v in row] for row in rounded],
        "zmin": 0.0,
        "zmax": 1.0,
        "scale": Said("mean share"),
    }
