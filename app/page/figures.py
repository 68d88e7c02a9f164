"""Run-to-figure and run-to-table helpers: the one home of what the views, the lesson and the
Export view all draw from a run (a chart of app.charts fed with a run's tables, a browser
module's data from encoder/web, or a table ready for the page). Plain functions of a run;
nothing here draws on the page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from app.charts.attention import attention_head, attention_overview
from app.charts.common import depth_labels
from app.charts.norms import residual_norm_chart
from app.i18n import _, direction, language, number, told
from app.i18n.browser import words_now
from app.runs import Run
from encoder.core.options import ACTIVATION_NAMES, GATED_INNER
from encoder.core.said import Said
from encoder.inspect import activations, norms
from encoder.web import hosts, spoken_in
from encoder.web.block_diagram import block_diagram_data
from encoder.web.similarity_matrix import similarity_payload
from encoder.web.token_lines import layernorm_lines
from encoder.web.value_histogram import value_histogram_data


@dataclass(frozen=True)
class Drawn:
    """A figure a browser module of encoder/web draws (its `module`: hosts.LINES, hosts.DIAGRAM,
    ...) from its `data` (built beside the module, its words Saids): on the page
    (app.components.module_figures), in the handout and in Export's files (encoder.web.offline)
    alike."""

    module: str
    data: dict


def told_all(data: object) -> object:
    """`data` with every Said in it (at any depth of its dicts and lists) told in this run's
    language; everything else as it is (a token the user typed is never a Said)."""
    if isinstance(data, Said):
        return told(data)
    if isinstance(data, dict):
        return {name: told_all(value) for name, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [told_all(value) for value in data]
    return data


def spoken(data: dict) -> dict:
    """A module's data in this run's language: its Saids told, the module's own words sent."""
    return spoken_in(told_all(data), language(), words_now(), direction())


def head_figure(run: Run, sentence: int, layer: int, head: int, stretch: bool):
    title = _(
        "Layer {layer}, head {head}: each row is a query token's attention over the keys",
        layer=layer,
        head=head,
    )
    return attention_head(
        run.attention[layer, sentence, head],  # [query, key]
        run.padded_tokens[sentence],
        run.n_valid(sentence),
        title=title,
        stretch=stretch,
    )


def overview_figure(run: Run, sentence: int, stretch: bool):
    return attention_overview(
        run.attention[:, sentence],  # [layer, head, query, key]
        run.n_valid(sentence),
        stretch=stretch,
    )


def residual_table(run: Run, sentence: int) -> pd.DataFrame:
    """The residual-stream table of one sentence, each depth named ('after block 2')."""
    table = norms.residual_stream_table(run.residual_norms, sentence, run.cfg.d_model)
    table.insert(1, "stream", depth_labels(run.cfg.num_layers))
    return table


def residual_figure(run: Run, sentence: int):
    resid = run.residual_norms[run.residual_norms["sentence"] == sentence]
    return residual_norm_chart(resid, run.tokens[sentence])


def layernorm_figure(run: Run, sentence: int, layer: int) -> Drawn:
    """Each norm's statistics per token in block `layer` (token_lines.js)."""
    stats = run.layernorm_stats[run.layernorm_stats["sentence"] == sentence]
    return Drawn(hosts.LINES, layernorm_lines(stats, run.tokens[sentence], layer))


def activation_tables(sentence: int) -> dict[str, tuple[str, Callable[[Run], pd.DataFrame]]]:
    """The Export view's tables of this view, for one sentence: {label: (file stem, table of a
    run)}."""

    def pca_table(run: Run) -> pd.DataFrame:
        table = run.activation_summary(sentence).pca.table()
        return table.assign(token=[run.tokens[sentence][p] for p in table["position"]])

    return {
        _("Feed-forward units per layer"): (
            "feed_forward",
            lambda run: run.activation_summary(sentence).feed_forward,
        ),
        _("Outlier dimensions per depth"): (
            "outlier_dimensions",
            lambda run: run.activation_summary(sentence).outliers,
        ),
        _("Mean cosine between tokens per depth"): (
            "mean_cosine",
            lambda run: run.activation_summary(sentence).mean_cosine,
        ),
        _("PCA paths of every token"): ("pca_paths", pca_table),
    }


def histogram_figure(run: Run, sentence: int, layer: int) -> Drawn:
    """Block `layer`'s values before the activation (real tokens x units) in bins, with the
    activation function over them (value_histogram.js)."""
    cfg, tokens = run.cfg, run.tokens[sentence]
    # a gated feed-forward: the half that goes through GELU or SiLU, before the gate multiplies it
    name = GATED_INNER.get(cfg.activation, ACTIVATION_NAMES[cfg.activation])
    histogram = activations.pre_activation_histogram(run.trace, sentence, layer)
    curve_x, curve_y = activations.activation_curve(
        cfg.activation, float(histogram.edges[0]), float(histogram.edges[-1])
    )
    values = dict(layer=layer, tokens=len(tokens), units=cfg.d_ff, name=name)
    title = (
        _(
            "Block {layer}: {tokens} tokens x {units} units before {name} (the input half of "
            "{gated}, before its gate)",
            gated=ACTIVATION_NAMES[cfg.activation],
            **values,
        )
        if cfg.gated
        else _("Block {layer}: {tokens} tokens x {units} units before {name}", **values)
    )
    notes = [
        _(
            "{share}% of these values are below 0",
            share=number(100 * histogram.share_negative, 1, grouped=False),
        )
    ]
    if histogram.below or histogram.above:
        notes.append(
            _(
                "the end bars also count the {count} values beyond the axis (min {minimum}, max "
                "{maximum})",
                count=histogram.below + histogram.above,
                minimum=number(histogram.minimum, 2, grouped=False),
                maximum=number(histogram.maximum, 2, grouped=False),
            )
        )
    data = value_histogram_data(
        histogram.edges, histogram.counts, curve_x, curve_y, name, title, notes
    )
    return Drawn(hosts.HISTOGRAM, data)


def block_figure(run: Run) -> Drawn:
    """The run's block with its shapes (block_diagram.js)."""
    return Drawn(hosts.DIAGRAM, block_diagram_data(run.block_ops(), run.cfg))


def token_table(run: Run, sentence: int) -> pd.DataFrame:
    """One row per token of a sentence: token, id (and for a task model, the answers)."""
    tokens = run.tokens[sentence]
    table = pd.DataFrame(
        {"token": tokens, "id": run.input_ids[sentence, : len(tokens)].tolist()}
    ).rename_axis("position")
    if run.task_answers is not None:
        asked, answered = run.task_answers
        table["task asks"] = asked[sentence][: len(tokens)]
        table["model answers"] = answered[sentence][: len(tokens)]
    return table


def depth_names(run: Run) -> list[str]:
    """Each depth of the embeddings by depth: the embeddings, after each block, the output."""
    names = depth_labels(run.cfg.num_layers)
    return [*names[:-1], _("output")]


def matrix_figure(runs: list[Run], title: str) -> Drawn:
    """The cosine matrix of the sentences at every depth (Run.similarity, [L+1, B, B]), drawn by
    similarity_matrix.js with the depth at which each pair becomes alike (alike_depths); a second
    run (setup B, the same sentences) is drawn beside the first with B − A."""

    def payload(run: Run, name: str, b: dict | None = None) -> dict:
        labels, depths = run.sentences, depth_names(run)  # numbered by the module
        return similarity_payload(
            run.similarity, labels, depths, {"title": title}, alike=run.alike, b=b, name=name
        )

    b = payload(runs[1], "B") if len(runs) > 1 else None
    return Drawn(hosts.SIMILARITY, payload(runs[0], "A", b))
