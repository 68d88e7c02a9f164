"""The floor page draws the app's own figures: a filled template is what app.charts builds."""

from __future__ import annotations

import json

import pytest

from app.charts import attention as attention_charts
from app.charts import common as common_charts
from app.charts import norms as norm_charts
from tests.bench import floor_page as floor

TEXT = 'A <b>bold</b> & "quoted" word.'  # HTML and JSON both need escaping here
LAYERS, HEADS = 2, 3


def as_json(figure) -> dict:
    return json.loads(figure.to_json())


def stringified(node) -> str:
    """As JSON.stringify writes it in the browser (the benchmark's markers are searched there)."""
    return json.dumps(node, ensure_ascii=False, separators=(",", ":"))


@pytest.fixture(scope="module")
def tokens() -> list[str]:
    found = floor.tokenizer().encode(TEXT).tokens
    assert {"<", ">", "&", '"'} <= set(found)
    return found


def test_another_head_is_the_figure_app_charts_builds_for_it(tokens):
    n = len(tokens)
    attention = floor.random_attention(LAYERS, HEADS, n)  # [layer, head, query, key]
    template = floor.head_template(LAYERS, HEADS, n, False)
    swaps = {floor.encoded(attention[0, 0]): floor.encoded(attention[1, 2])}
    drawn = floor.filled(template, tokens, swaps, layer=1, head=2)
    title = "Layer 1, head 2: each row is a query token's attention over the keys"
    assert drawn == as_json(
        attention_charts.attention_head(attention[1, 2], tokens, n, title=title)
    )
    labels = [common_charts.escape(token) for token in tokens]
    marker = dict(floor.FLOOR_VIEWS["Attention"].drawn)["head_detail"](labels)
    assert marker in stringified(drawn["layout"])


def test_layernorm_figures_are_the_figures_app_charts_builds(tokens):
    n = len(tokens)
    statistics, residual = floor.layernorm_templates(LAYERS, n, 1)
    stats, resid = floor.random_norm_tables(LAYERS, n)
    assert floor.filled(statistics, tokens, {}) == as_json(
        norm_charts.layernorm_chart(stats, tokens, 1)
    )
    assert floor.filled(residual, tokens, {}) == as_json(
        norm_charts.residual_norm_chart(resid, tokens)
    )
    labels = [common_charts.escape(token) for token in tokens]
    marker = dict(floor.FLOOR_VIEWS["LayerNorm"].drawn)["layernorm"](labels)
    assert marker in stringified(floor.filled(statistics, tokens, {})["layout"])


def test_the_shapes_marker_names_the_token_count(tokens):
    template = floor.block_template(512, 8, 2048, len(tokens))
    marker = dict(floor.FLOOR_VIEWS["Shapes"].drawn)["block_diagram"](tokens)
    assert marker == f"[1, {len(tokens)}, "
    assert marker in stringified(floor.filled(template, tokens, {})["layout"])


@pytest.mark.parametrize(
    ("view", "key", "build"),
    [
        ("Attention steps", "step_keys", lambda n: floor.steps_templates(512, 8, n, 0)),
        ("Activations", "act_cosine", lambda n: floor.activation_templates(LAYERS, 64, 256, n, 0)),
    ],
)
def test_the_new_views_markers_number_the_tokens(tokens, view, key, build):
    labels = [common_charts.escape(token) for token in tokens]
    marker = dict(floor.FLOOR_VIEWS[view].drawn)[key](labels)
    assert marker.startswith('["0 [CLS]","1 a"')
    assert marker in stringified(floor.filled(build(len(tokens))[key], tokens, {})["layout"])
