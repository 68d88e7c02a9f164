"""The head scatter on the page: a Custom Components v2 host of encoder/web's head_scatter.js.

The module and its stylesheet are the component's code; user text (tokens, sentences) travels only
in `data`. Hover and colouring are handled in the browser and send nothing back.
"""

from __future__ import annotations

import streamlit as st

from encoder.web import asset

NAME = "encoder_explorer.head_scatter"

# Appended to the module's text: CCv2 calls the default export again with each new `data` for the
# same element, and calls the function it returned when the element unmounts.
HOST_JS = """
const HOSTED = new WeakMap();

export default function (component) {
  const { data, parentElement } = component;
  let scatter = HOSTED.get(parentElement);
  if (scatter) {
    scatter.update(data);
  } else {
    scatter = mount(parentElement, data, {});
    HOSTED.set(parentElement, scatter);
  }
  return () => {
    scatter.destroy();
    HOSTED.delete(parentElement);
  };
}
"""

_scatter = st.components.v2.component(
    NAME, js=asset("head_scatter.js") + HOST_JS, css=asset("head_scatter.css")
)


def head_scatter(data: dict, *, key: str) -> None:
    """Draw encoder.web.scatter.scatter_data's `data`."""
    _scatter(key=key, data=data)
