"""The Attention steps view's tables: step 4's, one row per key (padding and the keys outside
the window marked, the top weight highlighted), and in compare mode both setups' weights of the
query, key by key, with B − A."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from app.i18n import _, number
from app.page.layout import headers, written

PAD_ROW_STYLE = "background-color: #d0d0d0; color: #555555"
WINDOW_ROW_STYLE = "background-color: #e6e6e6; color: #555555; font-style: italic"
TOP_ROW_STYLE = "background-color: #fff3b0"


def styled_table(table: pd.DataFrame) -> pd.io.formats.style.Styler:
    """The step table for the page: padding rows grey and labelled, the top weight highlighted,
    numbers rounded for display only."""
    shown = table.assign(
        padding=np.where(table["padding"], _("PADDING"), ""),
        outside_window=np.where(table["outside_window"], _("OUTSIDE"), ""),
    )
    top = table.index == table["weight"].idxmax()
    row_styles = np.select(  # one style a row, padding first
        [table["padding"].to_numpy(), table["outside_window"].to_numpy(), top],
        [PAD_ROW_STYLE, WINDOW_ROW_STYLE, TOP_ROW_STYLE],
        "",
    )

    def row_style(frame: pd.DataFrame) -> pd.DataFrame:  # every cell at once (a row's style)
        return pd.DataFrame(
            np.repeat(row_styles[:, None], frame.shape[1], axis=1),
            index=frame.index,
            columns=frame.columns,
        )

    def write(value: float) -> str:
        return "−∞" if value == -math.inf else number(value, 4)

    numbers = ["q_dot_k", "scaled", "masked", "weight", "contribution_norm"]
    return shown.style.apply(row_style, axis=None).format(write, subset=numbers)


def weights_compared(shown: list) -> None:
    """The two setups' weights of this query, key by key, and B − A (when the keys agree)."""
    (__, a, tokens_a), (___, b, tokens_b) = shown
    if tokens_a != tokens_b:
        return
    weights = pd.DataFrame(
        {
            "position": a.table["position"],
            "key": a.table["key"],
            "weight A": a.table["weight"],
            "weight B": b.table["weight"],
        }
    )
    weights["B − A"] = weights["weight B"] - weights["weight A"]
    st.caption(_("This query's weights in A and in B, key by key:"))
    st.dataframe(
        written(weights, 4, ["weight A", "weight B", "B − A"]),
        hide_index=True,
        column_config=headers(weights),
        width="stretch",
        height=min(35 * len(weights) + 38, 320),
    )
