"""The attention explorer in notebooks (Jupyter, JupyterLab, Colab, VS Code, marimo).

    from encoder.notebook import explore, head_view
    explore("The animal didn't cross the street because it was too tired.")  # MiniLM
    head_view(outputs.attentions, tokens)  # any Hugging Face model's, as BertViz takes them
    similarity(["A cat sat.", "A dog lay."])  # the cosine of every pair, at every depth
    fill("Paris is the [MASK] of France.", checkpoint="bert-base-uncased")  # and its lens

Both return an anywidget that displays itself; its ES module is the library's own
(encoder/web), so the explorer is the one the page and the offline files draw. A widget's
`save_html(path)` writes it as an offline HTML file; a notebook saved with its outputs shows, where
no kernel runs (nbviewer, nbconvert, GitHub), a still picture of its head and a sentence of that
head's numbers instead of the widget. Needs the
`notebook` extra (anywidget); importing this package never imports Streamlit.
"""

from __future__ import annotations

try:
    import anywidget  # noqa: F401  (checked here so the message names the extra)
except ImportError as error:
    raise ImportError(
        'encoder.notebook needs anywidget: pip install "encoder-explorer[notebook]"'
    ) from error

from encoder.notebook.figures import LensGrid, SimilarityMatrix, fill, similarity
from encoder.notebook.views import explore, head_view
from encoder.notebook.widget import AttentionExplorer

__all__ = [
    "AttentionExplorer",
    "LensGrid",
    "SimilarityMatrix",
    "explore",
    "fill",
    "head_view",
    "similarity",
]
