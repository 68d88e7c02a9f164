"""The notebook widget away from its kernel: `save_html` writes the explorer of its current state
as one offline file, and its display carries, beside the widget view, a still picture (an SVG
heatmap of the current head) and a sentence of that head's numbers, which a notebook saved with
its outputs keeps for nbviewer, nbconvert and GitHub."""

from __future__ import annotations

import base64
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.inspect.heads import head_sentence
from encoder.notebook import AttentionExplorer, explore, head_view
from encoder.notebook.setups import SentenceAttention
from encoder.web.payload import decode_header
from encoder.web.still import MAX_DRAWN, viridis
from tests.shared import SENTENCE

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parents[2]
PAYLOAD = re.compile(r'data-explorer-for="explorer">([A-Za-z0-9+/=]+)<')
SAID = re.compile(  # head_sentence's shape, read back into its numbers
    r"Layer (?P<layer>\d+), head (?P<head>\d+)(?: of (?P<setup>\w+))?: "
    r"“(?P<query>.*?)” \(position (?P<q>\d+)\) gives (?P<weight>\d\.\d\d) to "
    r"(?:itself|“(?P<key>.*?)” \(position (?P<k>\d+)\)); "
    r"(?P<count>\d+) of (?P<n>\d+) tokens? (?:puts|put) most weight on "
    r"“(?P<chosen>.*?)” \(position (?P<c>\d+)\)\."
)


def tiny_model(vocab_size: int, layers: int = 2, heads: int = 2) -> TransformerEncoder:
    torch.manual_seed(3)
    cfg = EncoderConfig(vocab_size=vocab_size, d_model=16, num_heads=heads, num_layers=layers,
                        d_ff=32)  # fmt: skip
    return TransformerEncoder(cfg).eval()


def tiny_explorer(minilm, layer: int = 1, head: int = 1, **options) -> AttentionExplorer:
    model = tiny_model(minilm.model.cfg.vocab_size)
    return explore(SENTENCE, model, minilm.tokenizer, layer=layer, head=head, **options)


def svg_of(widget: AttentionExplorer) -> ET.Element:
    return ET.fromstring(widget._repr_mimebundle_()[0]["image/svg+xml"])


def cells(svg: ET.Element) -> list[ET.Element]:
    return [rect for group in svg.iter(f"{SVG}g") for rect in group.iter(f"{SVG}rect")]


def test_save_html_writes_the_explorer_opened_at_the_widgets_head(minilm, tmp_path):
    widget = tiny_explorer(minilm, layer=0, head=0)
    widget.layer, widget.head = 1, 1  # as the browser reports a settled head
    path = widget.save_html(tmp_path / "mine.html", title="My <sentence>")
    assert path == tmp_path / "mine.html"
    page = path.read_text(encoding="utf-8")
    assert page.count("function mount(") == 1 and "My &lt;sentence&gt;" in page
    (data,) = PAYLOAD.findall(page)
    header = decode_header(base64.b64decode(data))
    assert header["start"] == {"layer": 1, "head": 1, "mode": "lines"}
    assert header["setups"] == decode_header(widget.payload)["setups"]


def test_save_html_names_a_path_it_cannot_write(minilm, tmp_path):
    widget = tiny_explorer(minilm)
    with pytest.raises(IsADirectoryError, match="is a folder: give a file name in it"):
        widget.save_html(tmp_path)
    with pytest.raises(ValueError, match=r"must end in \.html or \.htm"):
        widget.save_html(tmp_path / "explorer.txt")
    with pytest.raises(FileNotFoundError, match="the folder .*nowhere does not exist"):
        widget.save_html(tmp_path / "nowhere" / "explorer.html")


def test_head_views_returned_html_opens_at_its_layer_and_head():
    attention = tuple(torch.full((1, 3, 2, 2), 0.5) for _ in range(4))
    page = head_view(attention, ["a", "b"], layer=2, heads=[1], html_action="return").data
    (data,) = PAYLOAD.findall(page)
    assert decode_header(base64.b64decode(data))["start"]["layer"] == 2
    assert decode_header(base64.b64decode(data))["start"]["head"] == 1


def test_the_display_carries_the_widget_view_and_the_still_picture(minilm):
    widget = tiny_explorer(minilm)
    data, _ = widget._repr_mimebundle_()
    assert data[WIDGET_VIEW]["model_id"] == widget.model_id  # the live widget, unchanged
    assert "object at 0x" not in data["text/plain"] and "\n" not in data["text/plain"]
    assert data["text/plain"] == "Attention explorer. " + widget.sentences()[0]
    html = data["text/html"]
    assert widget.sentences()[0].replace("'", "&#x27;") in html
    assert "<svg" in html and "<script" not in html
    widget.close()  # a closed widget displays as nothing, as ipywidgets does
    assert widget._repr_mimebundle_ is None


def test_the_sentence_states_the_heads_own_maxima(minilm):
    model = tiny_model(minilm.model.cfg.vocab_size, layers=3, heads=2)
    widget = explore(SENTENCE, model, minilm.tokenizer, layer=2, head=1)
    batch = minilm.batch(SENTENCE)
    weights = model.trace(batch.input_ids, batch.attention_mask).attention[2, 0, 1]  # [q, k]
    tokens = batch.tokens[0]
    (sentence,) = widget.sentences()
    said = SAID.fullmatch(sentence)
    assert said, sentence
    q = int(weights.max(dim=1).values.argmax())
    k = int(weights[q].argmax())
    counts = torch.bincount(weights.argmax(dim=1), minlength=len(tokens))
    assert (int(said["layer"]), int(said["head"]), said["setup"]) == (2, 1, None)
    assert (int(said["q"]), said["query"]) == (q, tokens[q])
    assert said["k"] is None if k == q else (int(said["k"]), said["key"]) == (k, tokens[k])
    assert float(said["weight"]) == pytest.approx(float(weights[q, k]), abs=0.005)
    assert int(said["c"]) == int(counts.argmax()) and said["chosen"] == tokens[int(counts.argmax())]
    assert (int(said["count"]), int(said["n"])) == (int(counts.max()), len(tokens))


def test_the_sentence_counts_in_words_and_names_the_setups(minilm):
    spread = torch.tensor([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])
    assert head_sentence(spread, ["a", "b", "c"], 4, 0) == (
        "Layer 4, head 0: “a” (position 0) gives 0.80 to “b” (position 1); "
        "1 of 3 tokens puts most weight on “a” (position 0)."
    )
    assert head_sentence(torch.ones(1, 1), ["x"], 0, 2, "B") == (
        "Layer 0, head 2 of B: “x” (position 0) gives 1.00 to itself; "
        "1 of 1 token puts most weight on “x” (position 0)."
    )
    with pytest.raises(ValueError, match=r"over the 2 tokens; got shape \(3, 3\)"):
        head_sentence(spread, ["a", "b"], 0, 0)
    model = tiny_model(minilm.model.cfg.vocab_size)
    compared = tiny_explorer(minilm, compare=(model, minilm.tokenizer))
    a, b = compared.sentences()
    assert a.startswith("Layer 1, head 1 of A: ") and b.startswith("Layer 1, head 1 of B: ")


def test_the_still_picture_draws_the_current_head_with_escaped_tokens():
    tokens = ["<b>&", "x", "y"]
    layers = [torch.eye(3)[None, None].repeat(1, 2, 1, 1) for _ in range(2)]  # [1, 2, 3, 3]
    layers[1][0, 1] = torch.tensor([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    widget = head_view(layers, tokens, include_layers=[0, 1], layer=1, heads=[1])
    data, _ = widget._repr_mimebundle_()
    svg = ET.fromstring(data["image/svg+xml"])
    assert svg.get("role") == "img" and svg.get("aria-label") == widget.sentences()[0]
    assert svg.find(f"{SVG}title").text == "Attention explorer, layer 1, head 1"
    texts = [element.text for element in svg.iter(f"{SVG}text")]
    assert "Layer 1, head 1" in texts and texts.count("<b>&") == 2  # a row and a column
    drawn = {(int(r.get("y")), int(r.get("x"))): r.get("fill") for r in cells(svg)}
    assert len(cells(svg)) == len(drawn) == 9
    assert drawn[(0, 1)] == drawn[(2, 2)] == viridis(1.0) == "#fde725"  # shared.js's ends
    assert drawn[(0, 0)] == drawn[(1, 0)] == viridis(0.0) == "#440154"
    for text in (data["image/svg+xml"], data["text/html"]):
        assert "&lt;b&gt;&amp;" in text and "<b>&" not in text
    assert "“&lt;b&gt;&amp;” (position 0)" not in data["text/plain"]  # plain text: not escaped
    widget.layer, widget.head = 0, 0  # another head settles: the picture follows it
    moved = svg_of(widget)
    assert moved.find(f"{SVG}title").text == "Attention explorer, layer 0, head 0"
    assert {(int(r.get("y")), int(r.get("x"))) for r in cells(moved) if r.get("fill") ==
            "#fde725"} == {(0, 0), (1, 1), (2, 2)}  # fmt: skip
    kept = head_view(layers, tokens, include_layers=[1], layer=1)  # layers keep their numbers
    assert kept.layer == 0 and svg_of(kept).find(f"{SVG}title").text.endswith("layer 1, head 0")
    assert kept.sentences()[0].startswith("Layer 1, head 0: ")


def test_a_compared_still_draws_a_and_b_titled():
    half = torch.full((1, 1, 2, 2), 0.5)
    runs = [SentenceAttention(half, ["a", "b"], name) for name in ("A", "B")]
    svg = svg_of(AttentionExplorer(runs))
    texts = [element.text for element in svg.iter(f"{SVG}text")]
    assert "A: layer 0, head 0" in texts and "B: layer 0, head 0" in texts
    assert len(cells(svg)) == 8
    assert svg.find(f"{SVG}title").text == "Attention explorer, layer 0, head 0, A and B"


def test_a_long_input_draws_its_first_tokens_and_says_so():
    n = MAX_DRAWN + 6
    attention = (torch.softmax(torch.randn(1, 1, n, n, generator=torch.Generator().manual_seed(0)),
                               -1),)  # fmt: skip
    svg = svg_of(head_view(attention, [f"t{i}" for i in range(n)]))
    assert len(cells(svg)) == MAX_DRAWN * MAX_DRAWN
    texts = [element.text for element in svg.iter(f"{SVG}text")]
    assert f"The first {MAX_DRAWN} of {n} tokens are drawn." in texts
    assert f"t{MAX_DRAWN - 1}" in texts and f"t{MAX_DRAWN}" not in texts


CELLS = [
    "import torch\nfrom encoder.notebook import head_view",
    "head_view((torch.tensor([[[[0.25, 0.75], [0.5, 0.5]]]]),), ['<i>a', 'b'])",
]


@pytest.mark.timeout(120)
def test_a_saved_notebook_keeps_the_still_picture_for_where_no_kernel_runs(monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nbconvert = pytest.importorskip("nbconvert")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nbclient.NotebookClient(notebook, timeout=90, kernel_name="python3").execute()
    (output,) = notebook.cells[1].outputs
    assert WIDGET_VIEW in output["data"] and "<svg" in output["data"]["text/html"]
    assert output["data"]["text/plain"].startswith("Attention explorer. Layer 0, head 0: ")
    saved = nbformat.reads(nbformat.writes(notebook), as_version=4)  # as a file keeps it
    # JupyterLab saves no widget state unless asked to (Settings > Save Widget State
    # Automatically): without it, nbconvert and nbviewer skip the widget view
    del saved.metadata["widgets"]
    page, _ = nbconvert.HTMLExporter().from_notebook_node(saved)  # nbviewer's way, no state
    said = "Layer 0, head 0: “&lt;i&gt;a” (position 0) gives 0.75 to “b” (position 1)"
    assert said in page.replace("&#x27;", "'")  # the sentence, then the picture
    assert 'class="cells"' in page and "<title>Attention explorer, layer 0, head 0</title>" in page
