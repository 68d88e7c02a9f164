"""The LayerNorm view: every norm's statistics per token in one block, the size of the residual
stream across depth, and a sentence that says what the pre/post choice does, with this run's
numbers."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.components.module_figures import module_figure
from app.i18n import _, number
from app.keys import FITS_LAYER, LAYER_BOUNDS, Key, Selection
from app.page.changes import (
    norm_does,
    pre_vs_post,
    say,
    stream_growth,
    stream_held,
    stream_size,
    what_changed,
)
from app.page.figures import layernorm_figure, residual_figure, residual_table
from app.page.layout import (
    deltas,
    headers,
    key_for,
    missing,
    number_table,
    show_for,
    side_by_side,
    stacked,
    written,
)
from app.page.widgets import pick_index, pick_sentence
from app.runs import Run, Runs
from encoder import EncoderConfig
from encoder.core.options import NORM_TYPE_NAMES
from encoder.inspect.norms import norm_hook_names

KEYS = (
    Key("ln_layer", 0, in_url=True, bounds=LAYER_BOUNDS, selects=True, fits=FITS_LAYER),
    Key("ln_section", labels=lambda: sections()),  # the open tab
)


def hooks(cfg: EncoderConfig, chosen: Selection) -> list[str]:
    """Every norm's input, mean, std and output."""
    return norm_hook_names(cfg)


def layernorm_sentence(run: Run, sentence: int, layer: int) -> str:
    """What the charts show, for the current pre/post choice, with this run's numbers: how the
    stream's size changes with depth (pre-norm) or where the norms' gains hold it (post-norm),
    then ln1's statistics in the chosen block."""
    cfg = run.cfg
    stats = run.layernorm_stats
    stats = stats[(stats["sentence"] == sentence) & (stats["layer"] == layer)]
    ln1 = stats[stats["norm"] == "ln1"].mean(numeric_only=True)
    size = stream_size(run, sentence)
    kind = NORM_TYPE_NAMES[cfg.norm_type]
    if cfg.norm_first:
        placement = [
            _(
                "Pre-norm: in every block ln1 normalises a copy of the residual stream just "
                "before attention and ln2 just before the feed-forward network; the stream itself "
                "is never normalised. A final {kind} normalises the output.",
                kind=kind,
            ),
            stream_growth(size),
        ]
    else:
        placement = [
            _(
                "Post-norm: ln1 sits after attention's residual add and ln2 after the "
                "feed-forward's, so the residual stream itself is renormalised twice per block: "
                "its mean L2 norm per token is {first} after the embeddings.",
                first=number(size.first, 2, grouped=False),
            ),
            stream_held(size),
        ]
    numbers = _(
        "In block {layer}, ln1's input has mean {in_mean} and std {in_std} (averaged over "
        "tokens); its output has mean {out_mean} and std {out_std}.",
        layer=layer,
        in_mean=number(ln1["in_mean"], 3, grouped=False),
        in_std=number(ln1["in_std"], 3, grouped=False),
        out_mean=number(ln1["out_mean"], 3, grouped=False),
        out_std=number(ln1["out_std"], 3, grouped=False),
    )
    return " ".join([*placement, numbers, norm_does(kind, cfg.norm_type, bias=cfg.norm_bias)])


def sections() -> tuple[str, str]:
    """The two tabs' names, in the run's language."""
    return (_("Norms per token"), _("Stream by depth"))


def draw(runs: Runs, chosen: Selection) -> None:
    """Two sections as tabs, only the open one computed and sent (the norms' statistics at
    first); the sentence below says what both show, with this run's numbers."""
    run = runs.a
    sentence = pick_sentence(run.sentences, chosen.sentence)
    layer = pick_index(_("Layer"), max(r.cfg.num_layers for __, r in runs.named()), "ln_layer")
    what_changed(runs)
    say(pre_vs_post(runs, sentence))
    norms, stream = st.tabs(sections(), key="ln_section", on_change="rerun")
    if norms.open:
        with norms:
            st.header(_("LayerNorm statistics in block {layer}, per token", layer=layer))
            for name, setup in side_by_side(runs):
                if not missing(name or "A", "layer", layer, setup.cfg.num_layers):
                    figure = layernorm_figure(setup, sentence, layer)
                    module_figure(figure, key=key_for("layernorm", name))
    if stream.open:
        with stream:
            st.header(_("Size of the residual stream across depth"))
            for name, setup in side_by_side(runs):
                show_for(residual_figure(setup, sentence), "residual", name)
            _stream_table(runs, sentence)  # below its chart, full width: every column shows
            _stream_deltas(runs, sentence)
    for name, setup in runs.named():
        if setup.cfg.num_layers > layer:
            said = layernorm_sentence(setup, sentence, layer)
            st.info(_("{setup}: {said}", setup=name, said=said) if runs.b is not None else said)
    with st.expander(_("Gain and bias of every norm"), key="ln_gains", on_change="rerun") as box:
        if box.open:  # computed and sent only once opened
            table = stacked(runs, lambda setup: setup.norm_parameters)
            st.dataframe(written(table, 4), hide_index=True, column_config=headers(table))


def _stream_table(runs: Runs, sentence: int) -> None:
    st.caption(
        _(
            "The stream's L2 norm at each depth, averaged over the sentence's real tokens (min "
            "and max over them); growth = over the depth before; over_sqrt_d = over "
            "sqrt(d_model), the size of a LayerNorm output with unit gain."
        )
    )
    _table(stacked(runs, lambda setup: residual_table(setup, sentence)))


def _stream_deltas(runs: Runs, sentence: int) -> None:
    """B − A of the stream's size (averages over each setup's own tokens, so it needs no token
    of B to line up with A's), and, where they do line up, how far the two streams point apart,
    depth by depth."""
    if runs.b is None:
        return
    comparison = runs.comparison
    change = deltas(runs, lambda setup: residual_table(setup, sentence), on=["depth", "stream"])
    if comparison is not None and comparison.mean_residual_cosine is not None:
        change["cosine of B's with A's"] = comparison.mean_residual_cosine[: len(change), sentence]
        st.caption(
            _("B − A at every depth both have, and the mean cosine between the two streams:")
        )
    else:
        st.caption(
            _("B − A at every depth both have (each an average over its own setup's tokens):")
        )
    _table(change)


def _table(table: pd.DataFrame) -> None:
    number_table(table, ("setup", "depth", "stream"), height=min(35 * len(table) + 38, 420))
