"""The Activations view: what every layer does to one sentence's tokens.

Three parts, all for the chosen sentence: the feed-forward units of the chosen block, the residual
stream after it, and the tokens' geometry across depth. Tables that span every layer come from the
run's cached `activation_summary`; the chosen layer's arrays are computed on each rerun (small).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts import activations as charts
from app.charts.common import depth_name
from app.components.module_figures import module_figure
from app.i18n import _, localised, number, percent
from app.keys import FITS_LAYER, FITS_TOKEN, LAYER_BOUNDS, POSITION_BOUNDS, Key, Selection
from app.page.changes import relu_vs_gelu, say, what_changed
from app.page.figures import Drawn, histogram_figure
from app.page.layout import (
    deltas,
    header,
    key_for,
    missing,
    number_table,
    pair,
    show_for,
    shown,
    side_by_side,
    stacked,
)
from app.page.widgets import pick_index, pick_sentence, pick_token
from app.runs import Run, Runs
from encoder import EncoderConfig
from encoder.core.options import ACTIVATION_NAMES, GATED_INNER
from encoder.inspect import activations
from encoder.web import hosts
from encoder.web.top_units import top_units_data

# float32 rounds GELU to exactly 0 below about this x (measured: -5.49 exact, -5.06 tanh)
GELU_ZERO_BELOW = {"gelu": -5.5, "gelu_tanh": -5.1}
GELU_FORMULA = {  # made when shown: in the run's language
    "gelu": lambda: "GELU(x) = x·Φ(x)",
    "gelu_tanh": lambda: _("GELU's tanh approximation, 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))),"),
}


KEYS = (
    Key("act_layer", 0, in_url=True, bounds=LAYER_BOUNDS, selects=True, fits=FITS_LAYER),
    # None: the first word
    Key("act_token", None, in_url=True, bounds=POSITION_BOUNDS, selects=True, fits=FITS_TOKEN),
    Key("act_section", labels=lambda: sections()),  # the open tab
)


def hooks(cfg: EncoderConfig, chosen: Selection) -> list[str]:
    """Every block's feed-forward values before and after the activation."""
    return activations.hook_names(cfg)


def _activation_note(activation: str, row: pd.Series) -> str:
    """What the activation did to this block's values, with its numbers."""
    negative, zero, layer = row["share_negative"], row["share_zero"], int(row["layer"])
    if activation == "relu":
        return _(
            "ReLU(x) = max(0, x) sets every negative pre-activation to exactly 0: in block "
            "{layer}, {negative} of the values are below 0, so {zero} of the hidden "
            "values (tokens x units) are exactly 0: those units are off for that token and pass "
            "nothing on.",
            layer=layer,
            negative=percent(negative, 1),
            zero=percent(zero, 1),
        )
    if activation in GATED_INNER:
        return _(
            "{activation} is gated: linear1 gives two halves, x and a gate g, "
            "and the hidden value is {inner}(x)·g. In block {layer}, {negative} of the "
            "pre-activations are below 0 (the half that goes through {inner}), and {zero} "
            "of the hidden values are exactly 0; the gate scales each by a number of either "
            "sign, so a hidden value can be large and negative.",
            activation=ACTIVATION_NAMES[activation],
            inner=GATED_INNER[activation],
            layer=layer,
            negative=percent(negative, 1),
            zero=percent(zero, 2),
        )
    return _(
        "{formula} keeps large positive values, and bends negative ones toward "
        "0 instead of zeroing them (its lowest value is -0.17, at x = -0.75): in block {layer}, "
        "{negative} of the pre-activations are below 0, but only {zero} of the hidden "
        "values are exactly 0 (float32 rounds it to 0 only below about x = "
        "{below}).",
        formula=GELU_FORMULA[activation](),
        layer=layer,
        negative=percent(negative, 1),
        zero=percent(zero, 2),
        below=number(GELU_ZERO_BELOW[activation], 1, grouped=False),
    )


def feed_forward_words(cfg: EncoderConfig) -> str:
    """What a block's feed-forward computes, in this config's terms (gated or not, biases)."""
    bias = (lambda name: f" + {name}") if cfg.linear_bias else (lambda name: "")
    if cfg.gated:
        return _(
            "Each block's feed-forward network lifts every token from d_model = {d_model} to "
            "d_ff = {d_ff} hidden units: "
            "linear1 gives 2 × {d_ff} numbers, x = W_in·h{b_in} (the "
            "pre-activation) and the gate g = W_gate·h{b_gate}; then "
            "{activation} = {inner}(x)·g, then W2 back to d_model.",
            d_model=cfg.d_model,
            d_ff=cfg.d_ff,
            b_in=bias("b_in"),
            b_gate=bias("b_gate"),
            activation=ACTIVATION_NAMES[cfg.activation],
            inner=GATED_INNER[cfg.activation],
        )
    return _(
        "Each block's feed-forward network lifts every token from d_model = {d_model} to "
        "d_ff = {d_ff} hidden units: "
        "x = W1·h{b1} (the pre-activation), then {activation}(x), "
        "then W2 back to d_model.",
        d_model=cfg.d_model,
        d_ff=cfg.d_ff,
        b1=bias("b1"),
        activation=ACTIVATION_NAMES[cfg.activation],
    )


def _top_units(runs: Runs, sentence: int, layer: int) -> None:
    """Pick a token, see its most active units in each setup: this part reruns alone (a
    fragment)."""
    tokens = runs.a.tokens[sentence]
    token = pick_token(
        _("Token"),
        tokens,
        "act_token",
        help=_("Its most active feed-forward units are shown below."),
    )
    for name, run in side_by_side(runs):
        if missing(name or "A", "layer", layer, run.cfg.num_layers):
            continue
        if missing(name or "A", "token", token, len(run.tokens[sentence])):
            continue
        top = activations.top_units(run.trace, sentence, layer, token)
        data = top_units_data(
            top.units, top.values, top.across_tokens, run.tokens[sentence], token, layer
        )
        module_figure(Drawn(hosts.TOP_UNITS, data), key=key_for("act_top_units", name))


def _feed_forward(runs: Runs, sentence: int, layer: int) -> None:
    st.header(_("Feed-forward units in block {layer}", layer=layer))
    for name, run in runs.named():
        cfg = run.cfg
        st.caption((f"{name}: " if runs.b is not None else "") + feed_forward_words(cfg))
    if runs.b is None:
        left, right = st.columns(2)
        with left:
            module_figure(histogram_figure(runs.a, sentence, layer), key="act_histogram")
        with right:
            st.fragment(_top_units)(runs, sentence, layer)
    else:
        for name, run in side_by_side(runs):
            if not missing(name, "layer", layer, run.cfg.num_layers):
                module_figure(
                    histogram_figure(run, sentence, layer), key=key_for("act_histogram", name)
                )
        st.fragment(_top_units)(runs, sentence, layer)
    for name, run in runs.named():
        table = run.activation_summary(sentence).feed_forward
        if layer < len(table):
            prefix = f"{name}: " if runs.b is not None else ""
            st.info(prefix + _activation_note(run.cfg.activation, table.iloc[layer]))
    st.caption(
        _(
            "Every block: mean, std and max over all hidden values after the activation (real "
            "tokens x units); share_zero = share of those exactly 0; share_negative = share of "
            "the pre-activations below 0."
        )
    )

    def feed_forward(run: Run) -> pd.DataFrame:
        return run.activation_summary(sentence).feed_forward

    _table(stacked(runs, feed_forward), "setup", "layer")
    same_blocks = runs.b is not None and runs.a.cfg.num_layers == runs.b.cfg.num_layers
    if same_blocks and runs.comparison is not None:
        st.caption(_("B − A, block by block:"))
        _table(deltas(runs, feed_forward, on=["layer"]), "layer")


def _table(table: pd.DataFrame, *integers: str) -> None:
    number_table(
        shown(table),
        tuple(header(name) for name in integers),
        height=min(35 * len(table) + 38, 320),
        digits=4,
    )


def _outlier_note(largest: pd.Series, outliers: pd.DataFrame) -> str:
    rule = _(
        "A dimension is an outlier when its mean |value| over the tokens is more than "
        "{factor} times the median dimension's ({median} here).",
        factor=localised(f"{activations.OUTLIER_FACTOR:g}"),
        median=number(largest["median_abs"], 3, grouped=False),
    )
    if outliers.empty:
        none = _(
            "None at this depth: the largest, dimension {dimension}, has "
            "{mean}, {times} times the median.",
            dimension=int(largest["dimension"]),
            mean=number(largest["mean_abs"], 3, grouped=False),
            times=number(largest["times_median"], 1, grouped=False),
        )
        return f"{rule} {none}"
    found = ", ".join(
        _(
            "dimension {dimension} ({mean}, {times} times the median)",
            dimension=row.dimension,
            mean=number(row.mean_abs, 3, grouped=False),
            times=number(row.times_median, 1, grouped=False),
        )
        for row in outliers.itertuples()
    )
    return f"{rule} " + _("Outliers at this depth: {found}.", found=found)


def _residual_stream(run: Run, sentence: int, layer: int, summary, name: str) -> None:
    depth = layer + 1
    stream = activations.residual_stream(run.trace, sentence, depth)
    outliers = summary.outliers[summary.outliers["depth"] == depth]
    title = _(
        "Each token's vector after block {layer} (red positive, blue negative); right: its length",
        layer=layer,
    )
    if stream.is_subset:
        drawn = _(
            "{shown} of {total} dimensions drawn: those with the "
            "largest mean |value|, in index order",
            shown=len(stream.dims),
            total=stream.total_dims,
        )
        title += f"<br><sup>{drawn}</sup>"
    show_for(
        charts.residual_stream_chart(
            stream.values,
            stream.dims,
            stream.l2_norms,
            run.tokens[sentence],
            list(outliers[["dimension", "times_median"]].itertuples(index=False, name=None)),
            title,
        ),
        "act_residual",
        name,
    )
    caption = _(
        "Rows are tokens, columns dimensions of the stream; the bars on the right are each "
        "token's L2 norm over all {total} dimensions.",
        total=stream.total_dims,
    )
    if stream.is_subset:
        caption += " " + _(
            "Only {shown} of the {total} columns fit at a readable width: "
            "the drawn ones are the largest on average, so any outlier dimension is among them.",
            shown=len(stream.dims),
            total=stream.total_dims,
        )
    st.caption(caption)
    st.info(_outlier_note(summary.largest.iloc[depth], outliers))
    with st.expander(_("Outlier dimensions at every depth")):
        if summary.outliers.empty:
            st.text(_("No dimension is an outlier at any depth for this sentence."))
        else:
            table = summary.outliers.assign(after=summary.outliers["depth"].map(depth_name))
            _table(table, "depth", "dimension", "after")


def _at_depth(depth: int) -> str:
    """'at the embeddings', 'after block 2'."""
    return _("at the embeddings") if depth == 0 else _("after block {block}", block=depth - 1)


def _geometry(run: Run, sentence: int, layer: int, summary, name: str) -> None:
    tokens = run.tokens[sentence]
    depth = layer + 1
    means = summary.mean_cosine
    left, right = pair(name)
    with left:
        matrix = activations.cosine_matrix(run.trace, sentence, depth)
        mean = _(
            "mean between different tokens: {mean}",
            mean=number(means["mean_cosine"].iloc[depth], 3, grouped=False),
        )
        title = _("Cosine similarity after block {layer}", layer=layer) + f"<br><sup>{mean}</sup>"
        show_for(charts.cosine_chart(matrix, tokens, title), "act_cosine", name)
    with right:
        show_for(
            charts.mean_cosine_chart(means["depth"], means["mean_cosine"], depth),
            "act_mean_cosine",
            name,
        )
    if means["mean_cosine"].notna().any():
        most, least = means["mean_cosine"].idxmax(), means["mean_cosine"].idxmin()
        st.info(
            _(
                "The tokens are most alike {most_where} (mean cosine "
                "{most}) and least alike {least_where} "
                "({least}). 1 would mean every token points the same "
                "way; 0, that they are unrelated directions.",
                most_where=_at_depth(most),
                most=number(means["mean_cosine"].iloc[most], 3, grouped=False),
                least_where=_at_depth(least),
                least=number(means["mean_cosine"].iloc[least], 3, grouped=False),
            )
        )
    pca = summary.pca
    pca_chart = charts.pca_paths_chart(pca.coords, pca.explained_variance_ratio, tokens)
    show_for(pca_chart, "act_pca", name)
    st.caption(
        _(
            "One PCA fitted once on all {states} states of this "
            "sentence (every token at every depth), so the paths share one map. Each grey path "
            "follows one token from the embeddings (dark) to the last block (yellow, labelled). "
            "The two axes keep {kept} of the variance; the rest is flattened away.",
            states=pca.coords.shape[0] * pca.coords.shape[1],
            kept=percent(pca.explained_variance_ratio.sum(), 1),
        )
    )


def sections() -> tuple[str, str, str]:
    """The three tabs' names, in the run's language."""
    return (_("Feed-forward units"), _("The residual stream"), _("Token geometry across depth"))


def draw(runs: Runs, chosen: Selection) -> None:
    """Three sections as tabs: only the open one is computed and sent (the first at first)."""
    sentence = pick_sentence(runs.a.sentences, chosen.sentence)
    layer = pick_index(
        _("Layer (block)"), max(r.cfg.num_layers for _, r in runs.named()), "act_layer"
    )
    what_changed(runs)
    say(relu_vs_gelu(runs, sentence))
    feed_forward, stream, geometry = st.tabs(sections(), key="act_section", on_change="rerun")
    if feed_forward.open:
        with feed_forward:
            _feed_forward(runs, sentence, layer)
    for tab, heading, section in (
        (stream, _("The residual stream after block {layer}", layer=layer), _residual_stream),
        (geometry, _("Token geometry across depth"), _geometry),
    ):
        if not tab.open:
            continue
        with tab:
            st.header(heading)
            for name, run in side_by_side(runs):
                if not missing(name or "A", "layer", layer, run.cfg.num_layers):
                    section(run, sentence, layer, run.activation_summary(sentence), name)
