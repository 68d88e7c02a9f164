"""Figure builders in app.charts: shapes of what is drawn, masking, escaping, size and speed."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from app import i18n
from app.charts.attention import attention_head, attention_overview, batch_mask_grid
from app.charts.common import PAD_TOKEN, figure_to_html
from app.charts.norms import residual_norm_chart
from encoder.web.token_lines import layernorm_lines

EVIL = ["<b>x</b>", "<img src=x onerror=alert(1)>"]


def softmax_attention(layers: int, heads: int, tokens: int, n_valid: int, seed: int = 0):
    """Random attention [L, H, T, T] whose padded keys get exactly 0, like the model's."""
    scores = np.random.default_rng(seed).normal(size=(layers, heads, tokens, tokens)) * 3
    scores[..., n_valid:] = -np.inf
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


def z_array(trace: go.Heatmap) -> np.ndarray:
    return np.array(trace.z, dtype=float)


def pad_bricks(mask: go.Heatmap) -> set[tuple[float, float, float, float]]:
    """(x0, x1, y0, y1) of every brick the padding mask greys."""
    z, xs, ys = mask.z, list(mask.x), list(mask.y)
    return {
        (xs[j], xs[j + 1], ys[i], ys[i + 1])
        for i, row in enumerate(z)
        for j, value in enumerate(row)
        if value == 1
    }


def test_overview_is_one_mosaic_heatmap_plus_one_padding_mask():
    attention = softmax_attention(3, 4, 10, n_valid=7)
    fig = attention_overview(attention, 7)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(fig.data) == 2 and len(heatmaps) == 2
    mosaic, mask = fig.data
    z = z_array(mosaic)
    assert z.shape == (3 * 10 + 2, 4 * 10 + 3)  # L*T + gaps by H*T + gaps
    stride = 11
    # tile (layer 2, head 1) holds that head's pattern, rounded to 4 decimals
    tile = z[2 * stride : 2 * stride + 10, 1 * stride : 1 * stride + 10]
    np.testing.assert_allclose(tile, np.round(attention[2, 1], 4), atol=1e-6)
    assert np.isnan(z[10, :]).all() and np.isnan(z[:, 10]).all()  # the gaps
    assert (mosaic.zmin, mosaic.zmax) == (0, 1)
    assert fig.layout.xaxis2.ticktext == tuple(f"H{h}" for h in range(4))
    assert fig.layout.yaxis2.ticktext == tuple(f"L{i}" for i in range(3))
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # query 0 at the top
    assert fig.layout.yaxis.scaleanchor == "x"


def test_overview_hover_names_layer_head_query_key():
    fig = attention_overview(softmax_attention(2, 3, 6, n_valid=4), 4)
    stride = 7
    x_labels, y_labels = fig.layout.xaxis.ticktext, fig.layout.yaxis.ticktext
    assert x_labels[2 * stride + 3] == "head 2 · key 3"
    assert x_labels[2 * stride + 5] == "head 2 · key 5 (padding)"
    assert y_labels[1 * stride + 0] == "layer 1 · query 0"
    template = fig.data[0].hovertemplate
    assert "%{x}" in template and "%{y}" in template and "%{z:.4f}" in template


def test_overview_greys_padding_without_dropping_it():
    attention = softmax_attention(2, 2, 8, n_valid=5)
    fig = attention_overview(attention, 5)
    mosaic, mask = fig.data
    assert mask.hoverinfo == "skip" and (mask.xaxis, mask.yaxis) == ("x2", "y2")
    assert not np.isnan(z_array(mosaic)[:8, :8]).any()  # padded cells still carry values
    bricks = pad_bricks(mask)
    # head 1's padded keys (columns 9+5 .. 9+7) are greyed in layer 0's real query rows
    assert (13.5, 16.5, -0.5, 4.5) in bricks
    # layer 1's padded queries are greyed in head 0's real key columns; real x real is not
    assert (-0.5, 4.5, 13.5, 16.5) in bricks
    assert (-0.5, 4.5, -0.5, 4.5) not in bricks
    no_padding = attention_overview(softmax_attention(2, 2, 8, n_valid=8), 8)
    assert pad_bricks(no_padding.data[1]) == set()


def test_overview_downsamples_long_inputs_and_stays_small_and_fast():
    attention = softmax_attention(6, 12, 500, n_valid=480)
    start = time.perf_counter()
    fig = attention_overview(attention, 480, max_tokens=48)
    size = len(fig.to_json())
    elapsed = time.perf_counter() - start
    z = z_array(fig.data[0])
    factor = 11  # ceil(500 / 48)
    tile = 44 + 2  # 480 real tokens in blocks of 11, then 20 padding positions in blocks of 11
    assert z.shape == (6 * tile + 5, 12 * tile + 11)
    assert tile <= 48 and f"blocks of {factor}" in fig.layout.title.text
    # a block of real queries still spends all its attention: the row sums to 1
    np.testing.assert_allclose(np.nansum(z[:43, :tile], axis=1), 1.0, atol=1e-3)
    assert fig.layout.xaxis.ticktext[0] == "head 0 · keys 0-10"
    assert fig.layout.xaxis.ticktext[44] == "head 0 · keys 480-490 (padding)"
    assert size < 1_200_000, size
    assert elapsed < 1.0, elapsed


def test_head_view_has_one_numeric_position_per_token_even_for_duplicates():
    tokens = ["[CLS]", "the", "cat", "saw", "the", "dog", "[SEP]", "[PAD]"]
    pattern = softmax_attention(1, 1, 8, n_valid=7)[0, 0]
    fig = attention_head(pattern, tokens, 7, title="Layer 0, head 0")
    heatmap, labels = fig.data
    assert z_array(heatmap).shape == (7, 7)  # the sentence's real tokens: no [PAD]
    np.testing.assert_array_equal(z_array(heatmap), pattern[:7, :7])  # exact, not rounded
    assert fig.layout.xaxis.type != "category" and heatmap.x is None
    assert fig.layout.xaxis.ticktext == tuple(tokens[:7])
    assert fig.layout.xaxis.tickvals == tuple(range(7))  # both "the" keep their own column
    assert fig.layout.yaxis.ticktext == tuple(tokens[:7])
    assert fig.layout.xaxis2.ticktext == tuple(tokens[:7])  # the visible labels, beside it
    assert (labels.xaxis, labels.yaxis) == ("x2", "y2") and len(labels.x) == 0
    assert "%{z:.6f}" in heatmap.hovertemplate
    assert "query '%{y}' (%{y:d}) -> key '%{x}' (%{x:d})" in heatmap.hovertemplate
    # square cells that shrink the plot's box, not its ranges: the labels stay beside the cells
    assert fig.layout.yaxis.scaleanchor == "x"
    assert {fig.layout.xaxis.constrain, fig.layout.yaxis.constrain} == {"domain"}


def test_head_view_escapes_html_in_tokens():
    tokens = ["[CLS]", *EVIL, "a & b", "[SEP]"]
    fig = attention_head(np.eye(5), tokens, 5, title="<i>t</i>")
    escaped = ("[CLS]", "&lt;b&gt;x&lt;/b&gt;", "&lt;img src=x onerror=alert(1)&gt;")
    assert fig.layout.xaxis.ticktext[:3] == escaped
    assert fig.layout.xaxis.ticktext[3] == "a &amp; b"
    visible = " ".join(fig.layout.xaxis2.ticktext + fig.layout.yaxis2.ticktext)
    assert "<" not in visible and ">" not in visible
    assert fig.layout.title.text == "&lt;i&gt;t&lt;/i&gt;"


def test_head_view_thins_tick_labels_for_long_inputs_but_not_hover_labels():
    tokens = [f"t{i}" for i in range(100)]
    fig = attention_head(np.full((100, 100), 0.01), tokens, 100, title="long")
    assert len(fig.layout.xaxis.ticktext) == 100  # hover names every token
    assert 10 <= len(fig.layout.xaxis2.ticktext) <= 60
    with pytest.raises(ValueError, match="len\\(tokens\\) = 99"):
        attention_head(np.zeros((100, 100)), tokens[:99], 99, title="x")


def test_batch_mask_grid_colours_tokens_and_padding_and_writes_each_token():
    tokens = [["[CLS]", "hi", "[SEP]", "[PAD]"], ["[CLS]", EVIL[0], "there", "[SEP]"]]
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    fig = batch_mask_grid(tokens, mask)
    (grid,) = fig.data
    np.testing.assert_array_equal(np.array(grid.z), mask)
    assert grid.text[0][3] == "[PAD]"
    assert grid.customdata[1][1] == "&lt;b&gt;x&lt;/b&gt;"
    assert "<" not in grid.text[1][1]
    for part in ("%{y}", "position %{x}", "token %{customdata}", "mask %{z}"):
        assert part in grid.hovertemplate
    assert fig.layout.yaxis.ticktext == ("sentence 1", "sentence 2")


def layernorm_stats(tokens: int = 4) -> pd.DataFrame:
    rows = []
    for layer, norms in ((-1, ["embed.ln"]), (0, ["ln1", "ln2"]), (1, ["ln1", "ln2"])):
        for norm in norms:
            for position in range(tokens):
                value = layer * 10 + position + (0.5 if norm == "ln2" else 0)
                rows.append(
                    dict(
                        layer=layer,
                        norm=norm,
                        sentence=0,
                        position=position,
                        in_mean=value,
                        in_std=value + 1,
                        out_mean=0.0,
                        out_std=1.0,
                    )
                )
    return pd.DataFrame(rows)


def test_layernorm_lines_are_each_norms_input_and_output_as_token_lines_data():
    tokens = ["[CLS]", "the", EVIL[0], "the"]
    stats = layernorm_stats()
    stats = stats[~((stats["norm"] == "ln2") & (stats["position"] == 3))]  # one value missing
    data = layernorm_lines(stats, tokens, 1)
    assert data["title"] == "Norm statistics in block 1: input (dotted) vs output (solid)"
    assert data["tokens"] == tokens  # as typed: the module draws them as text
    names = ["ln1 input", "ln1 output", "ln2 input", "ln2 output"]
    assert [s["name"] for s in data["series"]] == names
    assert [s["dashed"] for s in data["series"]] == [True, False, True, False]
    assert [p["short"] for p in data["panels"]] == ["mean", "std"]
    titles = ["mean over the d features", "standard deviation over the d features"]
    assert [p["title"] for p in data["panels"]] == titles
    layer = stats[stats["layer"] == 1]
    ln2 = layer[layer["norm"] == "ln2"].sort_values("position")
    mean, std = data["panels"]
    assert std["values"][2] == [*ln2["in_std"].tolist(), None]  # ln2 input: 11.5, 12.5, 13.5
    assert mean["values"][1] == [0.0, 0.0, 0.0, 0.0]  # ln1 output
    thirds = layernorm_stats().assign(in_mean=lambda table: table["in_mean"] / 3)
    embedding = layernorm_lines(thirds, ["[CLS]"], -1)  # positions past the sentence: padding
    assert embedding["tokens"] == ["[CLS]", PAD_TOKEN, PAD_TOKEN, PAD_TOKEN]
    assert embedding["panels"][0]["values"][0] == [-3.33333, -3.0, -2.66667, -2.33333]  # 6 digits
    assert [s["name"] for s in embedding["series"]] == ["embed.ln input", "embed.ln output"]
    with pytest.raises(ValueError, match="layer=5"):
        layernorm_lines(stats, tokens, 5)


def test_residual_norm_chart_draws_a_thin_line_per_token_and_a_thick_mean():
    resid = pd.DataFrame(
        [
            dict(depth=d, sentence=0, position=p, l2_norm=float(d * 10 + p))
            for d in range(4)
            for p in range(3)
        ]
    )
    fig = residual_norm_chart(resid, ["[CLS]", EVIL[1], "[SEP]"])
    tokens_line, mean_line = fig.data
    assert list(tokens_line.y) == [0, 10, 20, 30, None, 1, 11, 21, 31, None, 2, 12, 22, 32, None]
    assert list(mean_line.y) == [1.0, 11.0, 21.0, 31.0]
    assert mean_line.line.width > tokens_line.line.width
    assert "&lt;img" in tokens_line.customdata[5] and "<img" not in tokens_line.customdata[5]
    assert fig.layout.xaxis.ticktext == ("embeddings", "block 0", "block 1", "block 2")


def test_figures_keep_readable_fonts_and_a_colour_blind_safe_attention_scale():
    attention = softmax_attention(1, 2, 4, n_valid=4)
    figures = [
        attention_overview(attention, 4),
        attention_head(attention[0, 0], list("abcd"), 4, title="t"),
        batch_mask_grid([list("abcd")], np.ones((1, 4))),
    ]
    for fig in figures:
        assert fig.layout.font.size >= 13
    viridis = go.Heatmap(colorscale="Viridis").colorscale
    assert figures[0].data[0].colorscale == viridis == figures[1].data[0].colorscale


def test_figure_to_html_inlines_plotly_js_and_declares_the_language():
    def figure() -> go.Figure:
        return attention_head(np.eye(4), list("abcd"), 4, title="t")

    page = figure_to_html(figure())
    assert '<html lang="en" dir="ltr">' in page and "plotly.js v" in page
    assert len(page) > 3_000_000
    i18n.speak_now("ar")
    try:
        assert '<html lang="ar" dir="rtl">' in figure_to_html(figure())
    finally:
        i18n.speak_now(None)
    assert re.findall(r"<script[^>]*>", page) == ["<script>"] * 3  # inline only, no src=


def test_stretched_colours_end_at_the_largest_real_weight():
    rng = np.random.default_rng(1)
    attention = rng.uniform(0, 0.5, size=(2, 3, 6, 6)).astype(np.float32)  # [L, H, T, T]
    n_valid = 5  # position 5 is padding
    attention[1, 2, 3, 1] = 0.625  # the largest weight between real tokens
    attention[0, 1, 4, 4] = 0.55  # the largest real weight of head (0, 1)
    attention[0, 1, 2, 5] = 0.9  # a padded key: not part of the scale
    attention[0, 0, 5, 0] = 0.99  # a padded query: not part of the scale
    overview = attention_overview(attention, n_valid, stretch=True)
    assert overview.data[0].zmax == pytest.approx(0.625)
    assert "stretched to 0.625" in overview.data[0].colorbar.title.text
    assert attention_overview(attention, n_valid).data[0].zmax == 1
    tokens = list("abcde") + ["[PAD]"]
    head = attention_head(attention[0, 1], tokens, n_valid, title="t", stretch=True)
    assert head.data[0].zmax == pytest.approx(0.55)
    assert attention_head(attention[0, 1], tokens, n_valid, title="t").data[0].zmax == 1


def test_stretched_overview_of_a_long_input_ends_at_the_largest_block_weight():
    attention = np.full((1, 2, 8, 8), 1 / 8, dtype=np.float32)  # [L, H, T, T], uniform rows
    attention[0, 1, 2:4, :] = 0.4 / 6
    attention[0, 1, 2:4, 4:6] = 0.3  # queries 2 and 3 each give keys 4 and 5 together 0.6
    overview = attention_overview(attention, 8, max_tokens=4, stretch=True)  # blocks of 2
    assert overview.data[0].zmax == pytest.approx(0.6)


def _font_sizes(spec, where: str = "") -> list[tuple[str, float]]:
    """Every explicit text size in a figure's JSON: (path, px)."""
    if isinstance(spec, dict):
        found = [(where, spec["size"])] if "font" in where and "size" in spec else []
        for key, value in spec.items():
            if key != "template":
                found += _font_sizes(value, f"{where}.{key}")
        return found
    if isinstance(spec, list | tuple):
        return [found for item in spec for found in _font_sizes(item, where)]
    return []


def _legibility_figures() -> list[go.Figure]:
    """A figure of every kind that sets text sizes of its own: cells with text, annotations,
    subplots with titles, heatmaps with colour bars."""
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    return [
        attention_head(np.eye(4), tokens, 4, title="t<br><sup>below</sup>"),
        attention_overview(softmax_attention(2, 2, 4, n_valid=3), 3),
        batch_mask_grid([tokens, tokens[:3] + ["[PAD]"]], np.array([[1, 1, 1, 1], [1, 1, 1, 0]])),
    ]


def test_builders_set_no_text_under_the_smallest_size():
    """What a figure sets itself the page never raises (app.page.widgets.show): at least
    SMALLEST_TEXT px; what it leaves unset takes the template's (text_layout)."""
    from app.charts.common import SMALLEST_TEXT

    for fig in _legibility_figures():
        sizes = _font_sizes(fig.to_plotly_json())
        assert all(size >= SMALLEST_TEXT for _, size in sizes), [
            found for found in sizes if found[1] < SMALLEST_TEXT
        ]


def test_the_template_sizes_ticks_subtitles_and_the_body():
    from app.charts.common import PRESENTER_TEXT, SUP_SCALE, text_layout
    from app.page.widgets import page_template

    for smallest in (12, PRESENTER_TEXT):
        fig = page_template(attention_head(np.eye(4), list("abcd"), 4, title="t"), smallest)
        layout = fig.layout.template.layout
        assert layout.xaxis.tickfont.size == layout.yaxis.tickfont.size == smallest
        assert layout.font.size == layout.legend.font.size == smallest + 2
        assert layout.title.font.size * SUP_SCALE >= smallest  # a <sup> subtitle line
        assert layout.title.font.size * SUP_SCALE < smallest + 1
        assert text_layout(smallest)["font"]["family"].startswith('"Source Sans"')
        assert fig.layout.template.data.heatmap  # the trace types it draws keep their defaults
        assert not fig.layout.template.data.scatter3d


def test_presenter_sizes_raise_every_text_a_figure_sets_and_keep_larger_ones():
    from app.charts.common import PRESENTER_TEXT, legible

    for fig in _legibility_figures():
        before = dict(_font_sizes(fig.to_plotly_json()))
        legible(fig, PRESENTER_TEXT)
        after = _font_sizes(fig.to_plotly_json())
        assert after and all(size >= PRESENTER_TEXT for _, size in after), after
        for path, size in after:  # never smaller than it was
            assert size >= before.get(path, 0), path
    glyph = go.Figure(layout={"annotations": [{"text": "⊕", "font": {"size": 42}}]})
    legible(glyph, PRESENTER_TEXT)
    assert glyph.layout.annotations[0].font.size == 42  # a larger text stays as large


def test_a_narrow_figure_wraps_its_title_grows_its_top_and_moves_a_top_legend_below():
    from app.charts.common import MARGIN, TITLE_LINE, text_layout
    from app.charts.fitting import fit_narrow

    fig = residual_norm_chart(
        pd.DataFrame(
            {
                "sentence": 0,
                "depth": [0, 0, 1, 1],
                "position": [0, 1, 0, 1],
                "l2_norm": [1.0, 2.0, 1.5, 2.5],
            }
        ),  # fmt: skip
        ["a", "b"],
    )
    title, height = fig.layout.title.text, fig.layout.height
    assert "<br>" not in title and len(title) > 30
    fit_narrow(fig, 24)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) >= 2 and all(len(line) <= 24 for line in lines)
    assert " ".join(lines) == title  # broken at spaces, nothing lost
    title_px = text_layout()["title"]["font"]["size"]  # the template's title (20 px)
    extra = round((len(lines) - 1) * TITLE_LINE * title_px)
    assert fig.layout.height == height + extra
    assert fig.layout.margin.t == (MARGIN["t"]) + extra
    legend = fig.layout.legend  # at the figure's foot, under the axis' labels and title
    assert (legend.yref, legend.y, legend.yanchor) == ("container", 0, "bottom")


def test_a_subtitle_wraps_on_its_own_smaller_budget_and_stays_a_subtitle():
    from app.charts.common import new_figure
    from app.charts.fitting import wrap_title

    fig = new_figure(layout={"title": {"text": (
        "Block 0: 16 tokens x 1536 units before GELU<br>"
        "<sup>74.6% of these values are below 0 and the end bars count the rest</sup>"
    )}})  # fmt: skip
    lines = wrap_title(fig, 36).layout.title.text.split("<br>")
    assert lines[:2] == ["Block 0: 16 tokens x 1536 units", "before GELU"]
    subtitles = lines[2:]  # 36 / 0.7 = 51 characters of text a line, markup not counted
    assert [line.startswith("<sup>") and line.endswith("</sup>") for line in subtitles] == [
        True
    ] * 2
    assert subtitles == [
        "<sup>74.6% of these values are below 0 and the end bars</sup>",
        "<sup>count the rest</sup>",
    ]


def _token_charts(lang: str) -> list[dict]:
    """The lesson's step 6 on MiniLM in `lang`, its question skipped: the layouts of its charts
    whose x axis is an order of things (the sentence's tokens, the depths)."""
    from tests.app.helpers import open_page

    at = open_page(view="Lesson", lesson="6", source="pretrained", lang=lang)
    at.button(key="predict_skip").click().run()
    layouts = [json.loads(chart.proto.spec)["layout"] for chart in at.get("plotly_chart")]
    ordered = [layout.get("xaxis", {}) for layout in layouts]  # tokens (labels), depths
    return [
        layout
        for layout, axis in zip(layouts, ordered, strict=True)
        if "ticktext" in axis or axis.get("type") == "category"
    ]


def test_in_arabic_a_chart_of_tokens_reads_from_the_right() -> None:
    # the same charts in English and Arabic: in Arabic the tokens run from the right (as the
    # explorer and the tables beside them do), the y axis on the right, every panel, margin and
    # colour bar mirrored; in English as built
    english, arabic = _token_charts("en"), _token_charts("ar")
    assert len(english) == len(arabic) >= 2
    for left, right in zip(english, arabic, strict=True):
        assert left["xaxis"].get("autorange") != "reversed"
        assert right["xaxis"].get("autorange") == "reversed"
        assert left["yaxis"].get("side", "left") == "left" and right["yaxis"]["side"] == "right"
        assert (right["margin"]["l"], right["margin"]["r"]) == (
            left["margin"].get("r", 80),
            left["margin"].get("l", 80),
        )
        low, high = left["xaxis"].get("domain", [0, 1])
        assert right["xaxis"].get("domain", [0, 1]) == pytest.approx([1 - high, 1 - low])
        assert right["title"]["x"] == pytest.approx(1 - left["title"]["x"])
