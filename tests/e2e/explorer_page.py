"""A small page that draws the attention explorer for MiniLM (or two setups with `compare=1`):
the component's host, tested before the Attention view uses it, with both more readings (what
each head moves, rollout) from the library. URL: text, compare, layer, head, large (presenter
mode's large text), window (a random-weight model with RoPE and that local window in every layer
but each third, instead of MiniLM)."""

from __future__ import annotations

import streamlit as st
import torch

from app.components.attention_explorer import attention_explorer
from encoder import EncoderConfig, TransformerEncoder, load_pretrained
from encoder.inspect.moves import value_norms
from encoder.inspect.neuron import qk_vectors
from encoder.inspect.rollout import trace_rollout
from encoder.io.tokenize import tokenize
from encoder.web.payload import build_setup, encode, layer_windows, with_large_text


@st.cache_resource
def model():
    return load_pretrained()


WINDOWED = dict(  # the random model's architecture but its window (ModernBERT's choices, small)
    d_model=64, num_heads=4, num_layers=3, d_ff=96, positional="rope", activation="geglu",
    global_every=3,
)  # fmt: skip


@st.cache_resource
def windowed_model(window: int):
    """A random-weight model with MiniLM's vocabulary, RoPE and a local window of `window`."""
    tokenizer = model()[1]
    cfg = EncoderConfig(vocab_size=tokenizer.get_vocab_size(), attention_window=window, **WINDOWED)
    return TransformerEncoder(cfg).eval(), tokenizer


def setup_of(text: str, name: str, chosen: tuple[int, int], ablate: tuple = (), window: int = 0):
    """One setup of MiniLM (or, with a `window`, the windowed random model) on `text`, with its
    value norms, rollout, each layer's window and every head's q and k (the neuron view)."""
    encoder, tokenizer = windowed_model(window) if window else model()
    batch = tokenize([text], tokenizer, encoder.cfg.max_len)
    with torch.no_grad():
        trace = encoder.trace(batch.input_ids, batch.attention_mask, ablate_heads=ablate)
        norms = value_norms(trace, encoder)[:, 0]  # [layer, head, key]
    return build_setup(
        trace.attention[:, 0],  # [layer, head, T, T]
        batch.tokens[0],
        name=name,
        chosen=[chosen],
        norms=norms,
        rollout=trace_rollout(trace)[:, 0],  # [layer, T, T]
        windows=layer_windows(encoder.cfg),
        qk=qk_vectors(trace, 0, len(batch.tokens[0])),
    )


st.title("Attention explorer")


def follow_explorer() -> None:
    """The settled selection into the URL (the app keeps it in the session's layer and head)."""
    chosen = (st.session_state.get("explorer") or {}).get("selection")
    if chosen:
        st.query_params.update(layer=chosen["layer"], head=chosen["head"])


text = st.text_input("Text", st.query_params.get("text", "The animal was too tired."), key="text")
chosen = (int(st.query_params.get("layer", 0)), int(st.query_params.get("head", 0)))
setups = [setup_of(text, "A", chosen, window=int(st.query_params.get("window", 0)))]
if st.query_params.get("compare") == "1":
    setups.append(setup_of(text, "B", chosen, ablate=((0, 0), (1, 3))))
payload = with_large_text(encode(setups), st.query_params.get("large") == "1")
selection = attention_explorer(payload, key="explorer", on_select=follow_explorer)
st.caption(f"settled selection: {selection}")
