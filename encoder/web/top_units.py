"""The top units' data (top_units.js): the chosen token's most active feed-forward units (bars)
and the same units on every token (a heatmap). Its words are `Said`s (English, with their
templates): a front end tells them in its reader's language."""

from __future__ import annotations

import numpy as np

from encoder.core.said import Said
from encoder.web import plain
from encoder.web.value_histogram import ABOVE_ZERO


def unit_labels(units) -> list[str]:
    """Each feed-forward unit's label: 'unit 200'."""
    return [Said("unit {unit}", unit=u) for u in np.asarray(units).tolist()]


def top_units_heading(name: str, token: int, layer: int, count: int) -> str:
    """The top units' title: the `count` most active units of the token `name` (as typed: the
    module draws it as text) at `token` in block `layer`."""
    about = dict(name=name, token=token, layer=layer)
    if count == 1:
        return Said("The 1 most active unit of '{name}' ({token}) in block {layer}", **about)
    return Said(
        "The {count} most active units of '{name}' ({token}) in block {layer}",
        count=count,
        **about,
    )


def top_units_notes() -> tuple[str, str]:
    """The top units' two lines under the title: what the bars and the heatmap show (not "left"
    and "right": in a right-to-left language the module draws them the other way round)."""
    return (
        Said("the bars: its values after the activation;"),
        Said("the heatmap: the same units on every token (its column outlined)"),
    )


def top_units_data(
    units: np.ndarray,
    values: np.ndarray,
    across_tokens: np.ndarray,
    tokens: list[str],
    token: int,
    layer: int,
) -> dict:
    """`token`'s `units` in block `layer` (`values` [k]: theirs on it; `across_tokens` [k, n]:
    theirs on every token of `tokens`) as top_units.js's data: its title and the two lines under
    it, the tokens as they are (the module draws them as text), each unit's label, the bars'
    values and the heatmap's rounded (encoder.web.plain), the colour scale's ends (zmin: the
    least value or 0, zmax: the largest) and the bars' colour."""
    labels = unit_labels(units)
    across = plain(across_tokens)
    flat = [v for row in across for v in row]
    return {
        "title": top_units_heading(tokens[token], token, layer, len(labels)),
        "notes": list(top_units_notes()),
        "tokens": list(tokens),
        "token": int(token),
        "units": labels,
        "values": plain(values),
        "across": across,
        "zmin": min(min(flat, default=0.0), 0.0),
        "zmax": max(flat, default=0.0),
        "scale": Said("value"),
        "colour": ABOVE_ZERO,
    }
