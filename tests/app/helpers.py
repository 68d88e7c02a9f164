"""Helpers of the page tests (AppTest, no browser): open the page, read its charts and messages,
upload files through the sidebar, rebuild the model the page builds."""

from __future__ import annotations

import base64
import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
from babel.numbers import get_decimal_symbol, get_minus_sign_symbol, parse_decimal
from pandas.api.types import is_bool_dtype, is_integer_dtype, is_numeric_dtype
from streamlit import dataframe_util
from streamlit.testing.v1 import AppTest

from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.views.steps import STEP_LABELS
from encoder import TransformerEncoder
from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web.payload import decode_setup

APP = str(Path(__file__).resolve().parents[2] / "app" / "main.py")


def open_page(timeout_s: float = 120, **query: str) -> AppTest:
    """The page opened at this URL query, run once (AppTest's timeout per run: `timeout_s`)."""
    at = AppTest.from_file(APP, default_timeout=timeout_s)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def go(at: AppTest, view: str) -> AppTest:
    """Switch the page to `view`'s page, as a click on the navigation would (AppTest has no
    navigation to click: a switch the page itself makes, app.controls.state.open_view)."""
    at.session_state["_open_view"] = view
    return at.run()


def measured_page(at, timeout_s: float = 120.0):
    """Rerun the page (as the fragment's polling would) until no measurement is in progress."""
    deadline = time.monotonic() + timeout_s
    while any("in the background" in (p.proto.text or "") for p in at.get("progress")):
        assert time.monotonic() < deadline, "the measurement did not finish"
        time.sleep(0.5)
        at.run()
    return at


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """Open the tab named `label` of the tabs keyed `key`, as a click would (the others are then
    neither computed nor sent)."""
    at.session_state[key] = label
    return at.run()


STREAM_TAB = ("ln_section", "Stream by depth")  # the LayerNorm view's
# A two-block model small enough to measure in a second (the Cost view's background measurement)
TINY = {"d_model": "32", "num_heads": "4", "num_layers": "2", "d_ff": "64"}
# The Attention steps view's expanders, each step's key (app.views.steps), all to be opened
EVERY_STEP_OPEN = {key: True for _label, _opens, key in STEP_LABELS.values()}


def shown(text: str) -> str:
    """A message as the reader sees it (markdown escapes removed)."""
    return re.sub(r"\\(.)", r"\1", text)


def architecture_said(at: AppTest) -> str | None:
    """The sidebar's sentence with a trained model's architecture (its phrases, "post-norm, d_model
    384, ..."), or None when the architecture controls are drawn instead."""
    for caption in at.sidebar.caption:
        said = re.search(r"This model's architecture: (.*?)\. Trained weights", caption.value)
        if said:
            return said.group(1)
    return None


def assert_no_exception(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]


def train_to_the_end(at: AppTest, max_chunks: int) -> None:
    """Rerun a page whose Training job is running until the job ends (each rerun draws one
    chunk), at most `max_chunks` reruns; the page raised nothing."""
    for _ in range(max_chunks):
        if not at.session_state["_training_lab"].job.running:
            break
        at.run()
    assert not at.session_state["_training_lab"].job.running
    assert_no_exception(at)


def figure(at: AppTest, key: str) -> dict:
    """The plotly JSON of the chart created with `key`."""
    for chart in at.get("plotly_chart"):
        if chart.proto.id and key in chart.proto.id:
            return json.loads(chart.proto.spec)
    raise AssertionError(f"no chart with key {key!r}")


def module_data(at: AppTest, key: str) -> dict:
    """The data of the figure an ES module draws under `key` (app.components.module_figures)."""
    for drawn in at.get("bidi_component"):
        if drawn.proto.id.split("-")[-1] == key:
            return json.loads(drawn.proto.json)
    raise AssertionError(f"no module's figure with key {key!r}")


def explorer(at: AppTest, setup: int = 0) -> tuple[dict, np.ndarray]:
    """The attention explorer's payload on the page: one setup's header entry and its weights
    [layer, head, query, key] (every head at full resolution: inputs short enough)."""
    components = at.get("bidi_component")
    assert len(components) == 1, f"{len(components)} explorers on the page"
    entry, full, _ = decode_setup(components[0].proto.bytes, setup)
    weights = np.stack(
        [
            np.stack([full[layer, head] for head in range(entry["heads"])])
            for layer in range(entry["layers"])
        ]
    )
    return entry, weights


def array(values) -> np.ndarray:
    """A plotly JSON array: a plain list, or plotly's base64 typed-array form."""
    if isinstance(values, dict):
        raw = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        shape = values.get("shape")  # absent for 1-D arrays
        return raw.reshape([int(n) for n in shape.split(",")]) if shape else raw
    return np.asarray(values, dtype=float)


def heatmaps(spec: dict) -> list[dict]:
    """The figure's value heatmaps (not the grey overlay that masks padding)."""
    return [t for t in spec["data"] if t["type"] == "heatmap" and t.get("name") != "padding"]


def tokens_of(text: str) -> list[str]:
    return tokenize([text], load_tokenizer(), 512).tokens[0]


def upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    """Upload files (name, bytes) through the sidebar's uploader."""
    mime = {"zip": "application/zip", "json": "application/json"}
    at.file_uploader[0].set_value(
        [
            (name, data, mime.get(name.rsplit(".", 1)[-1], "application/octet-stream"))
            for name, data in files
        ]
    )
    return at.run()


def page_model(**values) -> TransformerEncoder:
    """The random-weights model the page builds from these sidebar values (the rest default)."""
    return TransformerEncoder(random_config({**DEFAULTS, **values})).eval()


def report_of(**changes) -> dict:
    """A cost report's rows with round numbers (what the sentences read)."""
    rows = [
        {"operation": "linear1", "kind": "feed-forward", "ms": 6.0, "flops": 800,
         "time_share": 0.6, "flop_share": 0.8, "gflops_per_s": 1.0, "measured": True},
        {"operation": "softmax", "kind": "softmax", "ms": 4.0, "flops": 200,
         "time_share": 0.4, "flop_share": 0.2, "gflops_per_s": 0.5, "measured": True},
    ]  # fmt: skip
    return {
        "by_operation": rows,
        "slowest_operation": rows[0],
        "clock": "CPU time of the thread running the pass (time.thread_time)",
        "batch": [1, 8],
        "total_ms": 9.0,
        "ops_ms": 10.0,
        "ops_over_total": 10.0 / 9.0,
        "repeats": 7,
        "scaling": [{"tokens": 8}, {"tokens": 64}],
        "scaling_exponents": {"ms": 0.5},
        "crossover_tokens": 128,
    } | changes


# what a table may show unmarked in the pseudo-language: numbers, the setups' letters, and names in
# the code (snake_case columns, hook names, the norms' and the ledger's layers' labels, operations
# named after their function, an equation's index), as they are or as a change (Δ)
WORD = re.compile(r"[^\W\d_]{2}")  # two letters in a row
CODE_NAMES = re.compile(
    r"^(Δ )?(\d+|A|B|B − A|[\w.]*[_.][\w.]*|embed|final|hook|(ln|linear)\d|softmax|GELU|j)$"
)


def table_words(at: AppTest, tokens: set[str]) -> list[str]:
    """Every header (as column_config labels it) and every text cell of the main area's tables
    (st.dataframe, st.table) that has words (`frame_words`)."""
    words = []
    for table in [*at.main.dataframe, *at.main.table]:
        config = json.loads(table.proto.columns or "{}") if hasattr(table.proto, "columns") else {}
        labels = {
            column: shown.get("label", column)
            for column in table.value.columns
            if not (shown := config.get(str(column), {})).get("hidden")
        }
        words += frame_words(table.value, tokens, labels)
    return words


def frame_words(frame, tokens: set[str], labels: dict | None = None) -> list[str]:
    """A table's headers (as `labels` name its columns, where it names them; the hidden ones
    left out), rows' names and text cells that have words: but the `tokens` the user typed, the
    names in the code, and numbers and shapes ("[1, 16] x [16, 32]")."""
    headers = list(frame.columns) if labels is None else list(labels.values())
    words = [
        *headers,
        *frame.index,
        *(cell for column in frame.columns for cell in frame[column]),
    ]
    return [
        word
        for word in words
        if isinstance(word, str)
        and WORD.search(word)
        and word not in tokens
        and not CODE_NAMES.match(word)
    ]


def written_numbers(at: AppTest) -> list[tuple[float, str | None]]:
    """Each number of the main area's tables (st.dataframe, st.table) beside the text the page
    shows for it: a Styler's display value, or the browser's printf of a NumberColumn's format
    ("%.3f", as Python's % writes it; a missing number blank); but whole numbers a table sends
    bare (token ids, layers: the browser writes them digit by digit, as every language does).
    A fraction sent bare without a format comes with None: the browser writes it as it likes,
    in English."""
    pairs = []
    for table in [*at.main.dataframe, *at.main.table]:
        frame = table.value
        sent = table.proto.arrow_data.styler.display_values
        texts = dataframe_util.convert_arrow_bytes_to_pandas_df(sent) if sent else None
        config = json.loads(getattr(table.proto, "columns", "") or "{}")
        for j, column in enumerate(frame.columns):
            values = frame.iloc[:, j]
            if is_bool_dtype(values) or not is_numeric_dtype(values):
                continue
            printf = config.get(str(column), {}).get("type_config", {}).get("format") or ""
            if texts is not None:
                shown = list(texts.iloc[:, j])
            elif printf.startswith("%"):
                shown = ["" if pd.isna(value) else printf % value for value in values]
            elif is_integer_dtype(values):
                continue
            else:
                shown = [None] * len(values)
            pairs += [(value, text) for value, text in zip(values, shown, strict=True)]
    return pairs


def assert_numbers_written_in(at: AppTest, locale: str) -> None:
    """Every number of the main area's tables (`written_numbers`) is shown as `locale` writes
    numbers (Babel's), and is the table's number to the digits shown; a missing one blank."""
    decimal = get_decimal_symbol(locale)
    numbers = written_numbers(at)
    for value, text in numbers:
        assert text is not None, f"{value} is sent bare: the browser writes it in English"
        if pd.isna(value) or math.isinf(value):
            assert text in ("", "−∞"), (value, text)
            continue
        digits = len(text.split(decimal)[1]) if decimal in text else 0
        # the locale's minus ("\u200e-" in Arabic), which Babel writes but does not read
        read = float(parse_decimal(text.replace(get_minus_sign_symbol(locale), "-"), locale=locale))
        assert abs(read - value) <= 0.5 * 10**-digits + 1e-9 * abs(value), (value, text)
