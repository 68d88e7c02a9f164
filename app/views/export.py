"""The Export view: the run's numbers as CSV, NPZ and JSON files, and every figure as an HTML page
that works offline. Each file is built only when its button is clicked; the chosen head, query
and layer are those the other views selected."""

from __future__ import annotations

import streamlit as st

from app import downloads as files
from app.charts.common import figure_to_html
from app.runs import Run
from app.state import Selection
from app.views import activations, attention, layernorm, shapes
from app.views.widgets import pick_sentence


def draw(run: Run, chosen: Selection) -> None:
    sentence = pick_sentence(run.sentences, chosen.sentence)
    layer, head, stretch = chosen.layer, chosen.head, chosen.stretch
    step = (chosen.step_layer, chosen.step_head, chosen.step_query)
    data = [  # (button label, file name, mime type, bytes builder)
        (
            f"Attention of layer {layer}, head {head} (CSV)",
            f"attention_s{sentence}_l{layer}_h{head}.csv",
            "text/csv",
            lambda: files.head_csv(run, sentence, layer, head),
        ),
        (
            f"Attention steps of layer {step[0]}, head {step[1]}, query {step[2]}: the table (CSV)",
            f"attention_steps_s{sentence}_l{step[0]}_h{step[1]}_q{step[2]}.csv",
            "text/csv",
            lambda: files.steps_csv(run, sentence, *step),
        ),
        (
            "The whole run: attention and statistics (NPZ)",
            "encoder_run.npz",
            "application/octet-stream",
            lambda: files.run_npz(run),
        ),
        (
            "The whole run: attention and statistics (JSON)",
            "encoder_run.json",
            "application/json",
            lambda: files.run_json(run),
        ),
    ] + activations.downloads(run, sentence)
    ln_layer = chosen.ln_layer
    figures = {  # file name -> figure builder
        "attention_overview": lambda: attention.overview_figure(run, sentence, stretch),
        f"attention_l{layer}_h{head}": lambda: attention.head_figure(
            run, sentence, layer, head, stretch
        ),
        f"layernorm_l{ln_layer}": lambda: layernorm.layernorm_figure(run, sentence, ln_layer),
        "residual_norms": lambda: layernorm.residual_figure(run, sentence),
        "block_diagram": lambda: shapes.block_figure(run),
    }
    html_files = [
        (
            f"{name}.html",
            f"{name}.html",
            "text/html",
            lambda build=build: figure_to_html(build()).encode("utf-8"),
        )
        for name, build in figures.items()
    ]
    st.subheader("Data")
    _download_buttons(data)
    st.subheader("Figures (self-contained HTML, work offline)")
    st.caption("Every figure on the page also has plotly's own camera button for a PNG.")
    _download_buttons(html_files)


def _download_buttons(buttons: list[tuple]) -> None:
    """One button per file; each file is built only when clicked."""
    for index, (label, file_name, mime, build) in enumerate(buttons):
        st.download_button(
            label,
            build,
            file_name=file_name,
            mime=mime,
            on_click="ignore",
            key=f"download_{mime}_{index}",
        )
