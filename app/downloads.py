"""Downloads built from a Run: plain functions returning bytes (no Streamlit)."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

from app.runs import Run
from encoder.inspect.attention_steps import step_table


def head_csv(run: Run, sentence: int, layer: int, head: int) -> bytes:
    """One head's attention as CSV: a row per query token, a column per key token."""
    n = run.n_valid(sentence)
    tokens = run.tokens[sentence]
    labels = [f"{i}:{token}" for i, token in enumerate(tokens)]
    pattern = run.attention[layer, sentence, head, :n, :n]  # [query, key]
    frame = pd.DataFrame(pattern, index=pd.Index(labels, name="query \\ key"), columns=labels)
    return frame.to_csv(float_format="%.8g").encode("utf-8")


def table_csv(frame: pd.DataFrame) -> bytes:
    """A table as CSV, without the index."""
    return frame.to_csv(index=False, float_format="%.8g").encode("utf-8")


def steps_csv(run: Run, sentence: int, layer: int, head: int, query: int) -> bytes:
    """The Attention steps table of one query: a row per key position (padding included), every
    number at full precision (masked padding scores are -inf)."""
    table = step_table(run.trace, sentence, layer, head, query, run.padded_tokens[sentence])
    return table.to_csv(index=False).encode("utf-8")


def _columns(frame: pd.DataFrame, prefix: str) -> dict[str, np.ndarray]:
    """A table as plain arrays, `prefix.column` each, loadable without pickle."""
    return {
        f"{prefix}.{name}": column.to_numpy(
            dtype=None if pd.api.types.is_numeric_dtype(column) else str
        )
        for name, column in frame.items()
    }


def run_npz(run: Run) -> bytes:
    """The whole run as one NPZ: attention [L, B, H, T, T], mask, ids, tokens and statistics."""
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        attention=run.attention,
        attention_mask=run.attention_mask,
        input_ids=run.input_ids,
        tokens=np.array(run.padded_tokens, dtype=str),
        config=np.array(json.dumps(run.cfg.to_dict())),
        **_columns(run.layernorm_stats, "layernorm_stats"),
        **_columns(run.residual_norms, "residual_norms"),
    )
    return buffer.getvalue()


def run_json(run: Run) -> bytes:
    """The whole run as one JSON document (attention trimmed to each sentence's real tokens)."""
    sentences = []
    for s, sentence in enumerate(run.sentences):
        n = run.n_valid(s)
        sentences.append(
            {
                "text": sentence,
                "tokens": run.tokens[s],
                "input_ids": run.input_ids[s, :n].tolist(),
                # [layer][head][query][key]
                "attention": run.attention[:, s, :, :n, :n].round(6).tolist(),
                "head_metrics": run.head_metrics(s).to_dict(orient="records"),
            }
        )
    document = {
        "config": run.cfg.to_dict(),
        "device": run.device,
        "sentences": sentences,
        "layernorm_stats": run.layernorm_stats.to_dict(orient="records"),
        "residual_norms": run.residual_norms.to_dict(orient="records"),
        "shape_ledger": run.ledger.to_dict(orient="records"),
        "cost": run.cost,
    }
    return json.dumps(document, default=float).encode("utf-8")
