"""The anywidget host of the attention explorer: the library's ES module joined with its
anywidget glue (encoder/web/glue/anywidget.js), whose `render` mounts it on the widget's element.

The payload (encoder.web.payload: every setup's tokens and weights in one bytes object) is a
synced Bytes trait, which ipywidgets sends as a binary buffer (no base64); the browser receives
a DataView. The explorer's settled selection comes back to Python as `layer` and `head`; when
the input is too long for every head to travel at full resolution, a settled head that did not
is sent then, in a new payload.

Saved and shown without a kernel: `save_html(path)` writes the explorer of the widget's current
state (its runs, opened at its layer and head) as one offline HTML file (encoder.web.offline).
Its display (`_repr_mimebundle_`) carries, beside anywidget's widget view, a still picture of the
head chosen when it is displayed (encoder.web.still: an SVG heatmap, as text/html under a
sentence of its numbers, and as image/svg+xml) and that sentence as text/plain. A front end with
the widget manager and a live kernel draws the widget; a notebook saved with its outputs and
opened where no kernel runs (nbconvert's HTML, so nbviewer, when no widget state was saved; GitHub)
shows the still picture and the sentence instead. JupyterLab always picks the widget view: after
a kernel restart it says "Error displaying widget: model not found", not the still picture.
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

from encoder.inspect.heads import head_sentence
from encoder.inspect.predictions import head_label
from encoder.notebook.setups import SentenceAttention
from encoder.web.hosts import explorer_style, host_module
from encoder.web.offline import explorer_html
from encoder.web.payload import build_setup, decode_header, encode
from encoder.web.still import Panel, heatmap_svg, still_html

HTML_SUFFIXES = (".html", ".htm")


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

    def _labels(self) -> list[int]:
        """The current layer's number in each run (head_view's include_layers keep theirs)."""
        return [
            run.layer_labels[self.layer] if run.layer_labels else self.layer for run in self._runs
        ]

    def sentences(self) -> list[str]:
        """The current head in words, one sentence per run (encoder.inspect.heads.head_sentence):
        its strongest query, key and weight, and the key most queries weigh most."""
        named = len(self._runs) > 1
        return [
            head_sentence(
                run.attention[self.layer, self.head],
                run.tokens,
                label,
                self.head,
                run.name if named else None,
            )
            for run, label in zip(self._runs, self._labels(), strict=True)
        ]

    def still_svg(self, sentences: list[str] | None = None) -> str:
        """The current head's attention matrix of every run, side by side, as one SVG named by
        `sentences` (default: `self.sentences()`)."""
        heads = [head_label(label, self.head) for label in self._labels()]
        named = len(self._runs) > 1
        panels = [
            Panel(
                run.attention[self.layer, self.head].detach().cpu().float().numpy(),
                run.tokens,
                f"{run.name}: {head}" if named else head[0].upper() + head[1:],
            )
            for run, head in zip(self._runs, heads, strict=True)
        ]
        setups = " and ".join(run.name for run in self._runs) if named else ""
        title = f"Attention explorer, {heads[0]}" + (f", {setups}" if setups else "")
        return heatmap_svg(panels, title, " ".join(sentences or self.sentences()))

    def _repr_mimebundle_(self, **kwargs):
        """anywidget's widget view, plus the still picture and its sentence for front ends that
        cannot draw the widget (no kernel, no widget manager)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        sentences = self.sentences()
        svg = self.still_svg(sentences)
        still = {
            "text/plain": "Attention explorer. " + " ".join(sentences),
            "text/html": still_html(svg, sentences),
            "image/svg+xml": svg,
        }
        return {**data, **still}, metadata

    def save_html(self, path: str | Path, title: str = "Attention explorer") -> Path:
        """Write this explorer, opened at its current layer and head, as one self-contained HTML
        file (works from file://, no server, no network: encoder.web.offline); return its path.

        ValueError when `path` does not end in .html or .htm; IsADirectoryError when it is a
        folder; FileNotFoundError when its folder does not exist.
        """
        path = Path(path).expanduser()
        if path.is_dir():
            raise IsADirectoryError(
                f"{path} is a folder: give a file name in it, e.g. {path / 'explorer.html'}"
            )
        if path.suffix.lower() not in HTML_SUFFIXES:
            raise ValueError(f"path={str(path)!r} must end in .html or .htm")
        if not path.parent.is_dir():
            raise FileNotFoundError(f"cannot write {path}: the folder {path.parent} does not exist")
        page = explorer_html(self.payload, title, layer=self.layer, head=self.head)
        path.write_text(page, encoding="utf-8")
        return path
