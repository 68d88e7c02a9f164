"""How a view lays out one setup or two: side by side (A | B) in compare mode, the setups' titles,
the keys of B's charts, and the tables that stack both setups with a `setup` column."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pandas as pd
import streamlit as st

from app.charts.common import MARGIN, PLOTLY_HEIGHT, fit_narrow
from app.runs import Run, Runs
from app.views.changes import heads_named, source_name
from app.views.widgets import show
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES, placement_of


def key_for(key: str, name: str) -> str:
    """A chart's key for setup `name`: A keeps the single-setup key, B gets a suffix."""
    return f"{key}_b" if name == "B" else key


def setup_title(name: str, run: Run) -> str:
    """'A · random weights: pre-norm, 4 x 4 heads, d_model 256, GELU' (plain text)."""
    cfg = run.cfg
    source = source_name(run)
    heads_off = f"; heads off: {heads_named(run.key.ablate)}" if run.key.ablate else ""
    return (
        f"{name} · {source}: {placement_of(cfg.norm_first)}-norm, {cfg.num_layers} layers x "
        f"{cfg.num_heads} heads, d_model {cfg.d_model}, {ACTIVATION_NAMES[cfg.activation]}, "
        f"{NORM_TYPE_NAMES[cfg.norm_type]}{heads_off}"
    )


def side_by_side(runs: Runs) -> Iterator[tuple[str, Run]]:
    """Each setup inside its own column, titled (compare mode); or setup A alone in the main
    area (name "")."""
    if runs.b is None:
        yield "", runs.a
        return
    columns = st.columns(2, gap="medium")
    for column, (name, run) in zip(columns, runs.named(), strict=True):
        with column:
            st.markdown(f"**{setup_title(name, run)}**")
            yield name, run


def missing(name: str, what: str, index: int, count: int) -> bool:
    """Say so, and return True, when setup `name` has no such layer or head."""
    if index < count:
        return False
    st.info(f"Setup {name} has no {what} {index}: it has {what}s 0..{count - 1}.")
    return True


def stacked(runs: Runs, table: Callable[[Run], pd.DataFrame]) -> pd.DataFrame:
    """One table of every setup: each setup's rows, after a column `setup` in compare mode."""
    if runs.b is None:
        return table(runs.a)
    frames = [table(run).assign(setup=name) for name, run in runs.named()]
    joined = pd.concat(frames, ignore_index=True)
    return joined[["setup", *[c for c in joined.columns if c != "setup"]]]


def deltas(runs: Runs, table: Callable[[Run], pd.DataFrame], on: list[str]) -> pd.DataFrame:
    """B − A of a table's numbers, row by row on the `on` columns (the rows and columns both
    setups have)."""
    a, b = table(runs.a), table(runs.b)
    numbers = [
        c
        for c in a.columns
        if c in b.columns and c not in on and pd.api.types.is_numeric_dtype(a[c])
    ]
    joined = a.merge(b, on=on, suffixes=("_a", "_b"))
    return pd.DataFrame(
        {
            **{c: joined[c] for c in on},
            **{f"Δ {c}": joined[f"{c}_b"] - joined[f"{c}_a"] for c in numbers},
        }
    )


NARROW_TITLE_CHARS = 58  # a title line in half the page's width
NARROW_SCALE = 0.55  # a square plot's height in half the width, over its full-width height


def narrow(fig, name: str, square: bool = False):
    """A figure for half the page's width (setup `name` of two; "" leaves it as it is): long
    title lines wrap, a legend above the plot goes below it, and a square plot (a heatmap of
    tokens) shrinks in height as it does in width."""
    if not name:
        return fig
    if square:
        margin = fig.layout.margin
        top, bottom = margin.t or MARGIN["t"], margin.b or MARGIN["b"]
        height = fig.layout.height or PLOTLY_HEIGHT
        fig.update_layout(height=int(top + bottom + (height - top - bottom) * NARROW_SCALE))
    return fit_narrow(fig, NARROW_TITLE_CHARS)


SQUARE_CHARTS = ("overview", "head_detail", "act_cosine")  # token x token heatmaps


def show_for(fig, key: str, name: str) -> None:
    """Draw setup `name`'s figure ("" alone, or "A" / "B" side by side) under its key."""
    show(narrow(fig, name, square=key in SQUARE_CHARTS), key_for(key, name))


def pair(name: str, widths=(1, 1)) -> tuple:
    """Two places side by side within one setup's part of the page; stacked when that part is
    already half the page (setup `name` of two)."""
    return (st.container(), st.container()) if name else tuple(st.columns(list(widths)))


def number_table(
    table: pd.DataFrame, labels: tuple[str, ...], height: int, digits: int = 3
) -> None:
    """A table whose numbers show `digits` decimals (but the `labels` columns: names, layers,
    positions)."""
    st.dataframe(
        table,
        column_config={
            name: st.column_config.NumberColumn(format=f"%.{digits}f")
            for name in table.columns
            if name not in labels
        },
        hide_index=True,
        width="stretch",
        height=height,
    )


def wide_table(table, height: int | None = None) -> None:
    """A table (a DataFrame or its Styler) wider than its place in st.dataframe's columns (long
    text cells, many columns, a narrow column): drawn as HTML, whose cells wrap, so that no
    column is hidden past the right edge or cut short; past `height` px it scrolls."""
    st.table(table, hide_index=True, height="content" if height is None else height)
