"""The Export view: the run's numbers as CSV, NPZ and JSON files, and every figure as an HTML page
that works offline (a figure a browser module draws: that module's own offline page). Each file
is built only when its button is clicked; the chosen head, query and layer are those the other
views selected."""

from __future__ import annotations

import streamlit as st

from app import downloads as files
from app.charts.common import figure_to_html
from app.i18n import _, direction, in_this_language, language
from app.keys import Selection
from app.page.changes import what_changed
from app.page.figures import (
    Drawn,
    activation_tables,
    block_figure,
    head_figure,
    layernorm_figure,
    overview_figure,
    residual_figure,
    residual_table,
    spoken,
)
from app.page.layout import stacked
from app.page.widgets import pick_sentence
from app.runs import Run, Runs
from encoder.web.offline import figure_html


def _run_files(name: str, run: Run, sentence: int, chosen: Selection) -> list[tuple]:
    """One setup's files: a head's attention, a query's steps, the whole run (NPZ and JSON)."""
    layer, head = min(chosen.layer, run.cfg.num_layers - 1), min(chosen.head, run.cfg.num_heads - 1)
    step = (
        min(chosen.step_layer, run.cfg.num_layers - 1),
        min(chosen.step_head, run.cfg.num_heads - 1),
        min(chosen.step_query, run.n_valid(sentence) - 1),
    )
    label, tag = (f"{name}: ", f"_{name}") if name else ("", "")
    return [  # (button label, file name, mime type, bytes builder)
        (
            label + _("Attention of layer {layer}, head {head} (CSV)", layer=layer, head=head),
            f"attention_s{sentence}_l{layer}_h{head}{tag}.csv",
            "text/csv",
            lambda: files.head_csv(run, sentence, layer, head),
        ),
        (
            label
            + _(
                "Attention steps of layer {layer}, head {head}, query {query}: the table (CSV)",
                layer=step[0],
                head=step[1],
                query=step[2],
            ),
            f"attention_steps_s{sentence}_l{step[0]}_h{step[1]}_q{step[2]}{tag}.csv",
            "text/csv",
            lambda: files.steps_csv(run, sentence, *step),
        ),
        (
            label + _("The whole run: attention and statistics (NPZ)"),
            f"encoder_run{tag}.npz",
            "application/octet-stream",
            lambda: files.run_npz(run),
        ),
        (
            label + _("The whole run: attention and statistics (JSON)"),
            f"encoder_run{tag}.json",
            "application/json",
            lambda: files.run_json(run),
        ),
    ]


def table_files(runs: Runs, sentence: int) -> list[tuple]:
    """The views' tables as CSV, every setup's rows (with a column `setup` in compare mode)."""
    found = {
        _("Every head's attention metrics"): (
            "head_metrics",
            lambda run: run.head_metrics(sentence),
        ),
        _("The residual stream's size per depth"): (
            "residual_stream",
            lambda run: residual_table(run, sentence),
        ),
        **activation_tables(sentence),
    }
    return [
        (
            _("{table}, sentence {sentence} (CSV)", table=label, sentence=sentence + 1),
            f"{stem}_s{sentence}.csv",
            "text/csv",
            lambda table=table: files.table_csv(stacked(runs, table)),
        )
        for label, (stem, table) in found.items()
    ]


def _figures(name: str, run: Run, sentence: int, chosen: Selection) -> list[tuple]:
    """One setup's figures as self-contained HTML pages."""
    layer, head = min(chosen.layer, run.cfg.num_layers - 1), min(chosen.head, run.cfg.num_heads - 1)
    ln_layer, stretch = min(chosen.ln_layer, run.cfg.num_layers - 1), chosen.stretch
    builds = {  # file name -> figure builder
        "attention_overview": lambda: overview_figure(run, sentence, stretch),
        f"attention_l{layer}_h{head}": lambda: head_figure(run, sentence, layer, head, stretch),
        f"layernorm_l{ln_layer}": lambda: layernorm_figure(run, sentence, ln_layer),
        "residual_norms": lambda: residual_figure(run, sentence),
        "block_diagram": lambda: block_figure(run),
    }
    tag = f"_{name}" if name else ""
    return [
        (
            f"{stem}{tag}.html",
            f"{stem}{tag}.html",
            "text/html",
            lambda build=build: _page(build()).encode("utf-8"),
        )
        for stem, build in builds.items()
    ]


def _page(figure) -> str:
    """A figure as one self-contained HTML page: Plotly's, or its module's offline page."""
    if not isinstance(figure, Drawn):
        return figure_to_html(figure)
    data = spoken(figure.data)
    title = data["title"]
    return figure_html(figure.module, data, title, lang=language(), direction=direction())


def draw(runs: Runs, chosen: Selection) -> None:
    sentence = pick_sentence(runs.a.sentences, chosen.sentence)
    named = runs.named() if runs.b is not None else [("", runs.a)]
    what_changed(runs)
    st.header(_("Data"))
    _download_buttons([f for name, run in named for f in _run_files(name, run, sentence, chosen)])
    st.caption(
        _("Tables (both setups' rows, with a column setup):")
        if runs.b is not None
        else _("Tables:")
    )
    _download_buttons(table_files(runs, sentence), first=100)
    st.header(_("Figures (self-contained HTML, work offline)"))
    st.caption(_("Every figure in the other views also has its own “Save as…”: SVG, PNG or CSV."))
    _download_buttons(
        [f for name, run in named for f in _figures(name, run, sentence, chosen)], first=200
    )


def _download_buttons(buttons: list[tuple], first: int = 0) -> None:
    """One button per file; each file is built only when clicked (keys numbered from `first`)."""
    for index, (label, file_name, mime, build) in enumerate(buttons, start=first):
        st.download_button(
            label,
            in_this_language(build),
            file_name=file_name,
            mime=mime,
            on_click="ignore",
            key=f"download_{mime}_{index}",
        )
