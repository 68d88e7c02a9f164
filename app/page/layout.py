"""How a view lays out one setup or two: side by side (A | B) in compare mode, the setups' titles,
the keys of B's charts, and the tables that stack both setups with a `setup` column."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from app.charts.common import MARGIN, PLOTLY_HEIGHT
from app.charts.fitting import fit_narrow
from app.i18n import N_, _, language, symbols, told, writes_numbers_as_english
from app.page.changes import heads_named, source_name
from app.page.widgets import show
from app.runs import Run, Runs
from encoder import EncoderConfig
from encoder.core.block import model_ops
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES
from encoder.inspect import moves


def key_for(key: str, name: str) -> str:
    """A chart's key for setup `name`: A keeps the single-setup key, B gets a suffix."""
    return f"{key}_b" if name == "B" else key


def setup_title(name: str, run: Run) -> str:
    """'A · random weights: pre-norm, 4 x 4 heads, d_model 256, GELU' (plain text)."""
    cfg = run.cfg
    source = source_name(run)
    values = dict(
        name=name,
        source=source,
        layers=cfg.num_layers,
        heads=cfg.num_heads,
        d_model=cfg.d_model,
        activation=ACTIVATION_NAMES[cfg.activation],
        norm=NORM_TYPE_NAMES[cfg.norm_type],
    )
    title = (
        _(
            "{name} · {source}: pre-norm, {layers} layers x {heads} heads, d_model {d_model}, "
            "{activation}, {norm}",
            **values,
        )
        if cfg.norm_first
        else _(
            "{name} · {source}: post-norm, {layers} layers x {heads} heads, d_model {d_model}, "
            "{activation}, {norm}",
            **values,
        )
    )
    if run.key.ablate:
        title += _("; heads off: {heads}", heads=heads_named(run.key.ablate))
    return title


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
    said = {
        "layer": _("Setup {name} has no layer {index}: it has layers 0..{last}."),
        "head": _("Setup {name} has no head {index}: it has heads 0..{last}."),
        "token": _("Setup {name} has no token {index}: it has tokens 0..{last}."),
    }[what]
    st.info(said.format(name=name, index=index, last=count - 1))
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


# A table's words the page shows translated (its column names, and the cells of its word
# columns, WORD_COLUMNS): marked here, translated by header(). Any other name stays as it is.
HEADER_WORDS = frozenset(
    {
        N_("setup"),
        N_("layer"),
        N_("head"),
        N_("depth"),
        N_("stream"),
        N_("position"),
        N_("token"),
        N_("id"),
        N_("key"),
        N_("query"),
        N_("weight"),
        N_("scaled"),
        N_("masked"),
        N_("value"),
        N_("even"),
        N_("role"),
        N_("reading"),
        N_("norm"),
        N_("entropy"),
        N_("growth"),
        N_("sinks"),
        N_("moved"),
        N_("largest"),
        N_("task asks"),
        N_("model answers"),
        N_("mean cosine"),
        N_("lowest cosine"),
        N_("weight A"),
        N_("weight B"),
        N_("cosine of B's with A's"),
        N_("to first"),
        N_("to last"),
        N_("dimension"),
        # what the encoder is for (app/views/meaning*): search hits, token shares, masked words
        N_("rank"),
        N_("cosine"),
        N_("sentence"),
        N_("share"),
        N_("probability"),
        N_("after"),
        N_("mean"),
        N_("std"),
        N_("max"),
        N_("operation"),
        N_("kind"),
        N_("params"),
        N_("flops"),
        # the operation trace's (encoder.inspect.ledger.shape_ledger; its shapes: HEADER_NAMES)
        N_("component"),
        N_("group"),
        N_("spread"),
        N_("heads"),
        # a head's behaviour over a corpus (encoder.inspect.corpus.GROUPS)
        N_("previous"),
        N_("next"),
        N_("self"),
        N_("punctuation"),
        N_("broad"),
        N_("mixed"),
        # a head's role (encoder.inspect.lesson.ROLES; "broad" above)
        N_("previous token"),
        N_("next token"),
        N_("first token"),
        N_("last token"),
        # a reading of a head's attention (encoder.inspect.moves.NORM_WEIGHTED; "weight" above),
        # and its layers
        N_("norm-weighted"),
        N_("all"),
        # a row of encoder.inspect.ledger.parameter_counts ("attention (all layers)": below)
        N_("token embedding"),
        N_("position embedding"),
        N_("token-type embedding"),
        N_("embedding norm"),
        N_("embedding projection"),
        N_("attention"),
        N_("feed-forward"),
        N_("block norms"),
        N_("final norm"),
        N_("total"),
    }
)
# Names in code a table keeps, and the words the page says for them.
HEADER_NAMES = {
    # a head's metrics (encoder.inspect.heads.head_metrics), as the Attention view says them
    "max_weight": N_("max weight"),
    "mean_distance": N_("mean distance"),
    "to_self": N_("to itself"),
    "to_previous": N_("to previous"),
    "to_next": N_("to next"),
    # a norm's learned gain and bias (encoder.inspect.norms), the LayerNorm view's table
    "gain_mean": N_("gain mean"),
    "gain_std": N_("gain std"),
    "gain_min": N_("gain min"),
    "gain_max": N_("gain max"),
    "bias_mean": N_("bias mean"),
    "bias_std": N_("bias std"),
    "per_layer": N_("per layer"),
    # the operation trace's (encoder.inspect.ledger.shape_ledger)
    "input_shape": N_("input shape"),
    "output_shape": N_("output shape"),
    "matmul_flops": N_("matmul flops"),
}


def header(column: str) -> str:
    """A table's column, or a cell of one of its word columns (WORD_COLUMNS), as the reader sees
    it, in the page's language: the tables keep their own names and words (the code and the
    tests read them), the page shows them translated where they are words (names in code that
    a view's text names as such, share_zero = ..., or that stand in its equations,
    over_sqrt_d, q_dot_k, stay)."""
    if not isinstance(column, str):
        return column
    if column.startswith("Δ "):
        return "Δ " + header(column.removeprefix("Δ "))
    if column in HEADER_WORDS:
        return _(column)
    if column in HEADER_NAMES:
        return _(HEADER_NAMES[column])
    if column.startswith("to ["):  # "to [CLS]": a token's name stays
        return _("to {token}", token=column.removeprefix("to "))
    if column.endswith(" (all layers)"):  # a stacked component's parameters
        return _("{component} (all layers)", component=header(column.removesuffix(" (all layers)")))
    kind, _space, reading = column.removesuffix(")").rpartition(" (")
    if kind and reading in (moves.WEIGHT, moves.NORM_WEIGHTED):  # "[CLS] (weight)"
        return _("{kind} ({reading})", kind=header(kind), reading=header(reading))
    return column


OPERATION_NAMES_KEPT = 64


@lru_cache(maxsize=OPERATION_NAMES_KEPT)
def _operation_names(cfg: EncoderConfig, spoken: str) -> dict[str, str]:
    """Every operation of a model with `cfg` (encoder.core.block's table): its English name, as
    tables and measurements keep it, to the page's name for it in `spoken` (the latest
    OPERATION_NAMES_KEPT architectures and languages kept: a server's sessions try many)."""
    return {str(op.operation): told(op.operation) for op in model_ops(cfg, 1, 1)}


def operations_named(rows: pd.DataFrame | list[dict], cfg: EncoderConfig):
    """Operations (a table of encoder.inspect.ledger's, with their kinds shown, or rows of
    encoder.measure.op_times', whose kinds the charts read) named as the page names them, in its
    language."""
    names = _operation_names(cfg, language())
    if isinstance(rows, pd.DataFrame):
        return rows.assign(
            operation=rows["operation"].map(lambda name: names.get(name, name)),
            kind=rows["kind"].map(_),  # encoder.core.block.KINDS, marked there
        )
    return [{**row, "operation": names.get(row["operation"], row["operation"])} for row in rows]


# the columns whose cells are words of ours, not the user's: a parameter's component, a head's
# role, a reading, a layer ("all" of them), a head's behaviour over a corpus
WORD_COLUMNS = ("component", "role", "reading", "layer", "group")


def word_cells(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with the cells of its word columns (WORD_COLUMNS) in the page's language."""
    return table.assign(**{name: table[name].map(header) for name in WORD_COLUMNS if name in table})


def shown(table: pd.DataFrame) -> pd.DataFrame:
    """`table` as a reader sees it, for a table drawn by name: each column renamed to its
    header(), its word cells in the page's language."""
    return word_cells(table).rename(columns=header)


def headers(table: pd.DataFrame) -> dict:
    """st.dataframe's column_config that shows each column under its header()."""
    config = {name: header(name) for name in table.columns if header(name) != name}
    if isinstance(table.index.name, str) and header(table.index.name) != table.index.name:
        config["_index"] = header(table.index.name)
    return config


def written(
    table: pd.DataFrame | Styler,
    digits: int,
    columns: list[str] | None = None,
    grouped: bool = True,
) -> Styler:
    """`table` (or its Styler) with the numbers of `columns` (every numeric column, if None)
    written as the page's language writes them, as `number` writes a sentence's: `digits`
    decimals, whole numbers grouped unless not `grouped` ("0,132" and "7.813.632" in Spanish), a
    missing one blank. st.dataframe shows these texts and still sorts by the numbers."""
    styler = table if isinstance(table, Styler) else table.style
    chosen = list(styler.data.select_dtypes("number").columns) if columns is None else columns
    decimal, group = symbols()  # pandas writes as number() does: groups of three, `digits`
    return styler.format(
        precision=digits,
        decimal=decimal,
        thousands=group if grouped else None,
        na_rep="",
        subset=chosen,
    )


def number_table(
    table: pd.DataFrame, labels: tuple[str, ...], height: int, digits: int = 3
) -> None:
    """A table whose numbers show `digits` decimals, ungrouped, as the page's language writes
    them (but the `labels` columns: names, layers, positions), under headers in the page's
    language. Where the language writes numbers as English does, the browser writes them
    (a NumberColumn's "%.3f"); elsewhere they are sent written (`written`), which costs the
    server about 10 ms for every 700 cells (a Styler's)."""
    cells = word_cells(table)
    numbers = [name for name in table.columns if name not in labels]
    if writes_numbers_as_english():
        shown = cells
        config = {
            name: st.column_config.NumberColumn(header(name), format=f"%.{digits}f")
            for name in numbers
        }
    else:
        shown = written(cells, digits, numbers, grouped=False)
        config = {}
    st.dataframe(
        shown,
        column_config=headers(table) | config,
        hide_index=True,
        width="stretch",
        height=height,
    )


def wide_table(table, height: int | None = None) -> None:
    """A table (a DataFrame or its Styler) wider than its place in st.dataframe's columns (long
    text cells, many columns, a narrow column): drawn as HTML, whose cells wrap, so that no
    column is hidden past the right edge or cut short; past `height` px it scrolls."""
    st.table(table, hide_index=True, height="content" if height is None else height)
