"""The anywidget host of the attention explorer: the library's ES module joined with its
anywidget glue (encoder/web/glue/anywidget.js), whose `render` mounts it on the widget's element.

The payload (encoder.web.payload: every setup's tokens and weights in one bytes object) is a
synced Bytes trait, which ipywidgets sends as a binary buffer (no base64); the browser receives
a DataView. The explorer's settled selection comes back to Python as `layer` and `head`; when
the input is too long for every head to travel at full resolution, a settled head that did not
is sent then, in a new payload.
"""

from __future__ import annotations

import anywidget
import traitlets

from encoder.notebook.setups import SentenceAttention
from encoder.web.hosts import explorer_style, host_module
from encoder.web.payload import build_setup, decode_header, encode


def payload_of(runs: list[SentenceAttention], layer: int, head: int) -> bytes:
    """The explorer's payload for these runs (A, and B to compare), with each layer's local
    window; (layer, head) travels at full resolution even where the input is too long for every
    head to."""
    return encode(
        [
            build_setup(
                run.attention,
                run.tokens,
                name=run.name,
                layer_labels=run.layer_labels,
                chosen=((layer, head),),
                windows=run.windows,
            )
            for run in runs
        ]
    )


class AttentionExplorer(anywidget.AnyWidget):
    """The explorer in a notebook cell: one setup, or two (A and B) to compare."""

    _esm = host_module("anywidget_explorer")  # render: mount, follow payloads, report
    _css = explorer_style()
    payload = traitlets.Bytes().tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)  # the settled selection: positions in the payload
    head = traitlets.Int(0).tag(sync=True)

    def __init__(self, runs: list[SentenceAttention], layer: int = 0, head: int = 0) -> None:
        self._runs = runs  # before the traits, which the observer below reads
        super().__init__(payload=payload_of(runs, layer, head))
        with self.hold_trait_notifications():
            self.layer, self.head = layer, head

    @traitlets.observe("layer", "head")
    def _send_the_chosen_head(self, _change) -> None:
        setups = decode_header(self.payload)["setups"]
        if any([self.layer, self.head] not in setup["full"] for setup in setups):
            self.payload = payload_of(self._runs, self.layer, self.head)
