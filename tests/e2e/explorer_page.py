"""A small page that draws the attention explorer for MiniLM (or two setups with `compare=1`):
the component's host, tested before the Attention view uses it. URL: text, compare, layer, head."""

from __future__ import annotations

import streamlit as st
import torch

from app.components.attention_explorer import attention_explorer
from encoder import load_pretrained
from encoder.io.tokenize import tokenize
from encoder.web.payload import build_setup, encode


@st.cache_resource
def model():
    return load_pretrained()


def attention_of(text: str, ablate: tuple = ()):
    encoder, tokenizer = model()
    batch = tokenize([text], tokenizer, encoder.cfg.max_len)
    with torch.no_grad():
        trace = encoder.trace(batch.input_ids, batch.attention_mask, ablate_heads=ablate)
    return trace.attention[:, 0], batch.tokens[0]  # [layer, head, T, T], tokens


st.title("Attention explorer")


def follow_explorer() -> None:
    """The settled selection into the URL (the app keeps it in the session's layer and head)."""
    chosen = (st.session_state.get("explorer") or {}).get("selection")
    if chosen:
        st.query_params.update(layer=chosen["layer"], head=chosen["head"])


text = st.text_input("Text", st.query_params.get("text", "The animal was too tired."), key="text")
chosen = (int(st.query_params.get("layer", 0)), int(st.query_params.get("head", 0)))
attention, tokens = attention_of(text)
setups = [build_setup(attention, tokens, name="A", chosen=[chosen])]
if st.query_params.get("compare") == "1":
    ablated, _ = attention_of(text, ablate=((0, 0), (1, 3)))
    setups.append(build_setup(ablated, tokens, name="B", chosen=[chosen]))
selection = attention_explorer(encode(setups), key="explorer", on_select=follow_explorer)
st.caption(f"settled selection: {selection}")
