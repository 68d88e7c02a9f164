"""encoder.web.similarity_matrix.similarity_payload and encoder.web.lens_grid.lens_payload: the data
of similarity_matrix.js and lens_grid.js holds the input's numbers (rounded to encoder.web.DIGITS
decimals), in the input's shape and order, each depth's or mask's sentence computed from them, the
depths' and layers' names as given; bad shapes are refused; the page's host, the notebook's widget
and an offline file carry the same data."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from encoder.web import DIGITS
from encoder.web.lens_grid import LENS_TOP, lens_payload, settled_from
from encoder.web.similarity_matrix import similarity_payload

LABELS = ["The cat sat on the mat.", "A cat sat on a rug.", "Markets fell.", "Rain in <Paris>"]
DEPTHS = ["embeddings", "after block 0", "after block 1", "output"]


def cosines(depths: int = 4, n: int = 4, seed: int = 0) -> np.ndarray:
    """[depths, n, n]: the cosines of random unit vectors (a real cosine matrix at each depth)."""
    x = np.random.default_rng(seed).normal(size=(depths, n, 8))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    return np.einsum("dik,djk->dij", x, x)


def test_the_similarity_payload_holds_every_depths_matrix_in_order():
    sims = cosines()
    data = similarity_payload(sims, LABELS, DEPTHS, {"notes": ["mean pooling"]})
    assert data["labels"] == LABELS and data["depths"] == DEPTHS
    assert data["depth"] == 3  # the output, unless told
    values = np.array(data["values"])
    assert values.shape == (4, 4, 4)
    np.testing.assert_allclose(values, sims, atol=0.5 * 10**-DIGITS)
    assert all(type(v) is float for v in values.ravel().tolist())
    json.dumps(data)  # plain JSON
    assert data["notes"] == ["mean pooling"]
    assert data["title"] == "Cosine similarity of 4 sentences at each depth"


def test_each_depths_caption_names_its_most_and_least_alike_pair():
    sims = cosines()
    data = similarity_payload(sims, LABELS, DEPTHS)
    for depth, caption in enumerate(data["captions"]):
        pairs = {(i, j): sims[depth, i, j] for i in range(4) for j in range(i + 1, 4)}
        (a, b), (c, d) = max(pairs, key=pairs.get), min(pairs, key=pairs.get)
        assert caption == (
            f"{DEPTHS[depth]}: the most alike pair is sentences {a + 1} and {b + 1} (cosine "
            f"{pairs[a, b]:.2f}); the least alike, {c + 1} and {d + 1} ({pairs[c, d]:.2f})."
        )
        assert caption.template.startswith("{depth}: ")  # a Said: told in the page's language


def test_alike_depths_and_the_opening_depth_are_kept_and_checked():
    alike = np.full((4, 4), -1)
    alike[0, 1] = alike[1, 0] = 2
    alike[2, 3] = 9  # not a depth: dropped
    data = similarity_payload(cosines(), LABELS, DEPTHS, depth=0, alike=alike)
    assert data["depth"] == 0 and data["alike"] == [[0, 1, 2]]
    # or the library's pairs (encoder.inspect.similarity.alike_depths: a, b, depth, said)
    pairs = [AlikePair(0, 1, 2, "settles"), AlikePair(2, 3, 0, "alike at once")]
    found = similarity_payload(cosines(), LABELS, DEPTHS, alike=pairs)["alike"]
    assert found == [[0, 1, 2, "settles"], [2, 3, 0, "alike at once"]]
    with pytest.raises(ValueError, match="depth=4"):
        similarity_payload(cosines(), LABELS, DEPTHS, depth=4)
    with pytest.raises(ValueError, match=r"\(3, 4, 4\)"):
        similarity_payload(cosines()[:3], LABELS, DEPTHS)
    with pytest.raises(ValueError, match="NaN"):
        similarity_payload(np.full((4, 4, 4), np.nan), LABELS, DEPTHS)


def test_compare_mode_carries_b_and_refuses_other_sentences():
    b = similarity_payload(cosines(depths=3, seed=1), LABELS, DEPTHS[:3], name="B")
    data = similarity_payload(cosines(), LABELS, DEPTHS, b=b)
    assert data["b"]["name"] == "B" and data["b"]["depths"] == DEPTHS[:3]
    np.testing.assert_allclose(data["b"]["values"], cosines(3, seed=1), atol=0.5 * 10**-DIGITS)
    assert data["difference"] == "B − A"
    other = similarity_payload(cosines(seed=1), LABELS[::-1], DEPTHS, name="B")
    with pytest.raises(ValueError, match="other sentences"):
        similarity_payload(cosines(), LABELS, DEPTHS, b=other)


@dataclass(frozen=True)
class AlikePair:  # encoder.inspect.similarity's, as a duck type
    a: int
    b: int
    depth: int
    said: str


@dataclass(frozen=True)
class Word:  # encoder.inspect.masked's shapes, as duck types
    token: str
    id: int
    probability: float


@dataclass(frozen=True)
class MaskFill:
    position: int
    top: list
    by_layer: list


VOCAB = ["paris", "london", "the", "city", "france", "rome", "it"]


def lens_case(layers: int = 3, masks: int = 2, seed: int = 0):
    """Softmax probabilities [layers, masks, vocab] and the MaskFills read from them."""
    rng = np.random.default_rng(seed)
    probabilities = rng.dirichlet(np.full(len(VOCAB), 0.5), size=(layers, masks))
    fills = []
    for m in range(masks):
        by_layer = [
            [Word(VOCAB[i], int(i), float(probabilities[layer, m, i])) for i in order[:LENS_TOP]]
            for layer, order in enumerate(np.argsort(-probabilities[:, m], axis=-1))
        ]
        fills.append(MaskFill(2 + 3 * m, by_layer[-1], by_layer))
    return probabilities, fills


def test_the_lens_payload_holds_each_cells_top_words_by_layer_then_mask():
    probabilities, fills = lens_case()
    tokens = ["[CLS]", "a", "[MASK]", "b", "c", "[MASK]", "[SEP]"]
    names = ["after block 0", "after block 1", "after block 2"]
    data = lens_payload(fills, probabilities, tokens, names)
    json.dumps(data)
    assert data["layers"] == names and data["tokens"] == tokens and data["masks"] == [2, 5]
    for layer in range(3):
        for m in range(2):
            order = np.argsort(-probabilities[layer, m])[:LENS_TOP]
            assert data["top_tokens"][layer][m] == [VOCAB[i] for i in order]
            np.testing.assert_allclose(
                data["top_p"][layer][m], probabilities[layer, m, order], atol=0.5 * 10**-DIGITS
            )
            # the prediction's probability at every layer, from the whole vector
            predicted = int(np.argmax(probabilities[-1, m]))
            assert data["final"][layer][m] == pytest.approx(
                probabilities[layer, m, predicted], abs=0.5 * 10**-DIGITS
            )


def test_each_masks_caption_says_from_which_layer_its_prediction_stays_on_top():
    probabilities, fills = lens_case(layers=4, masks=3, seed=3)
    names = [f"after block {b}" for b in range(4)]
    data = lens_payload(fills, None, ["x"] * 12, names)
    assert "final" not in data
    for m, fill in enumerate(fills):
        tops = [words[0].token for words in fill.by_layer]
        first = settled_from(tops)
        assert all(t == tops[-1] for t in tops[first:]) and (
            first == 0 or tops[first - 1] != tops[-1]
        )
        caption = data["notes"][m]
        assert caption.startswith(f"Mask {m + 1} (position {fill.position}): “{tops[-1]}”")
        if first < 3:
            assert caption.endswith(f"is on top from block {first} on.")
        else:
            assert caption.endswith("is on top only at the last layer.")


def test_the_lens_payload_takes_dicts_and_refuses_bad_shapes():
    probabilities, fills = lens_case()
    as_dicts = [
        {
            "position": f.position,
            "top": [w.__dict__ for w in f.top],
            "by_layer": [[w.__dict__ for w in ws] for ws in f.by_layer],
        }
        for f in fills
    ]
    names = ["1", "2", "3"]
    assert lens_payload(as_dicts, probabilities, [], names) == lens_payload(
        fills, probabilities, [], names
    )
    unnamed = [{**as_dicts[0], "by_layer": [[{"token": None, "id": 7, "probability": 0.5}]] * 3}]
    assert lens_payload(unnamed, None, [], names)["top_tokens"][0][0] == ["#7"]
    with pytest.raises(ValueError, match="No mask"):
        lens_payload([], None, [], names)
    with pytest.raises(ValueError, match="3 layers, not 2"):
        lens_payload(fills, None, [], names[:2])
    with pytest.raises(ValueError, match="probabilities have shape"):
        lens_payload(fills, probabilities[:, :1], [], names)


def test_the_page_and_the_notebook_and_an_offline_file_carry_the_same_data(tmp_path):
    from app.components import module_figures
    from encoder.notebook import LensGrid, SimilarityMatrix
    from encoder.web.hosts import HOSTS, LENS, SIMILARITY
    from encoder.web.offline import figure_html

    for module in (SIMILARITY, LENS):
        stem = module.removesuffix(".js")
        assert {f"streamlit_{stem}", f"offline_{stem}", f"anywidget_{stem}"} <= HOSTS.keys()
        assert module in module_figures.MODULES
    data = similarity_payload(cosines(), LABELS, DEPTHS)
    widget = SimilarityMatrix(data=data)
    assert widget.data == data and "similarity_matrix.js" in widget._esm
    page = figure_html(SIMILARITY, data, "t", lang="en", direction="ltr")
    assert "<Paris>" not in page  # the user's text never ends the data's element
    saved = widget.save_html(tmp_path / "s.html").read_text(encoding="utf-8")
    assert saved == page.replace("<title>t<", "<title>Similarity matrix<").replace(
        "<h1>t<", "<h1>Similarity matrix<"
    )
    probabilities, fills = lens_case()
    lens = lens_payload(fills, probabilities, [], ["1", "2", "3"])
    assert LensGrid(data=lens).data == lens
