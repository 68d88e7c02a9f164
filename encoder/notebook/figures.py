"""What the encoder is for, in a notebook: `similarity` (the cosine of every pair of sentences at
every depth, similarity_matrix.js) and `fill` (the masked words and their lens, lens_grid.js).

Each returns a `FigureWidget`: an anywidget whose ES module is the library's own (the figure the
page and an offline file draw, encoder/web/glue/anywidget_figure.js); its depth slider and cells
are read in the browser alone. `save_html(path)` writes it as an offline HTML file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anywidget
import torch
import traitlets

from encoder.core.said import Said
from encoder.io.tokenize import bundled_model_dir, tokenize
from encoder.notebook.setups import ModelLike, TokenizerLike, resolve
from encoder.web.hosts import LENS, SIMILARITY, figure_style, host_module
from encoder.web.lens_grid import lens_payload
from encoder.web.offline import figure_html
from encoder.web.similarity_matrix import similarity_payload

TITLES = {SIMILARITY: "Similarity matrix", LENS: "Lens grid"}


def depth_names(num_layers: int) -> list[str]:
    """Every depth's name as the page says it: "embeddings", then "after block k" (from 0)."""
    return [Said("embeddings")] + [Said("after block {block}", block=b) for b in range(num_layers)]


class FigureWidget(anywidget.AnyWidget):
    """A figure module (its `_module`: hosts.SIMILARITY or hosts.LENS) drawn from its `data`
    (JSON, its words in English)."""

    _module = ""
    data = traitlets.Dict().tag(sync=True)

    def _repr_mimebundle_(self, **kwargs):
        """anywidget's widget view, and the figure's title and notes as text where no widget is
        drawn."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        said = " ".join([str(self.data.get("title", "")), *map(str, self.data.get("notes", []))])
        return {**data, "text/plain": said}, metadata

    def save_html(self, path: str | Path) -> Path:
        """Write this figure as one self-contained HTML file (works from file://); its path.
        ValueError when `path` does not end in .html or .htm."""
        path = Path(path).expanduser()
        if path.suffix.lower() not in (".html", ".htm"):
            raise ValueError(f"path={str(path)!r} must end in .html or .htm")
        title = TITLES[self._module]
        path.write_text(
            figure_html(self._module, self.data, title, lang="en", direction="ltr"),
            encoding="utf-8",
        )
        return path


class SimilarityMatrix(FigureWidget):
    """The similarity matrix (similarity_matrix.js) in a notebook cell."""

    _module = SIMILARITY
    _esm = host_module("anywidget_similarity_matrix")
    _css = figure_style(SIMILARITY)


class LensGrid(FigureWidget):
    """The lens grid (lens_grid.js) in a notebook cell."""

    _module = LENS
    _esm = host_module("anywidget_lens_grid")
    _css = figure_style(LENS)


def _directory(model: ModelLike) -> Path | None:
    if model is None:
        return bundled_model_dir()
    return Path(model) if isinstance(model, (str, Path)) and Path(model).is_dir() else None


def similarity(
    sentences: Sequence[str],
    model: ModelLike = None,
    tokenizer: TokenizerLike = None,
    depth: int | None = None,
) -> SimilarityMatrix:
    """The cosine of every pair of `sentences` at every depth of `model` (default: the bundled
    all-MiniLM-L6-v2; or one of ours, a checkpoint directory, a found model's name), pooled as
    its sentence-transformers config says (encoder.inspect.similarity), opened at `depth` (0:
    the embeddings; default: the output)."""
    from encoder.inspect.similarity import (
        alike_depths,
        cosine_matrix,
        embeddings_by_depth,
        pooling_of,
    )

    sentences = [sentences] if isinstance(sentences, str) else list(sentences)
    setup = resolve(model, tokenizer)
    batch = tokenize(sentences, setup.tokenizer, setup.model.cfg.max_len)
    pooling = pooling_of(_directory(model))
    with torch.no_grad():
        trace = setup.model.trace(batch.input_ids, batch.attention_mask, names=())
        sims = cosine_matrix(embeddings_by_depth(trace, batch.attention_mask, pooling))
    names = depth_names(setup.model.cfg.num_layers)
    names[-1] = Said("output")
    data = similarity_payload(
        sims.numpy(),
        sentences,
        names,
        {"notes": [pooling.why]},
        depth=depth,
        alike=alike_depths(sims, sentences),
    )
    return SimilarityMatrix(data=data)


def fill(text: str, checkpoint: str | Path | None = None, top: int = 5) -> LensGrid:
    """The words a masked-LM checkpoint (a directory with its head, e.g. a BERT's) predicts at
    each [MASK] of `text`, and its lens: the head at every layer (encoder.inspect.masked).
    ValueError, saying why, for a checkpoint without a head (MiniLM's was never trained) or a
    text without a mask."""
    from encoder.inspect.masked import fills, lens_probabilities, mask_token_of
    from encoder.io.checkpoints import load_checkpoint

    loaded = load_checkpoint(checkpoint)
    if loaded.mlm_head is None:
        raise ValueError(loaded.no_head)
    model, head = loaded.encoder, loaded.mlm_head
    batch = tokenize([text], loaded.tokenizer, model.cfg.max_len)
    with torch.no_grad():
        trace = model.trace(batch.input_ids, batch.attention_mask, names=())
        mask = mask_token_of(loaded.tokenizer)
        tokens = batch.tokens[0]
        found = fills(model, head, trace, tokens, mask, top=top, tokenizer=loaded.tokenizer)
        probabilities = lens_probabilities(model, head, trace, 0, [f.position for f in found])
    names = depth_names(model.cfg.num_layers)[1:]
    data = lens_payload(found, probabilities, batch.tokens[0], names)
    return LensGrid(data=data)
