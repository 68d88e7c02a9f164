"""What it is for: the two outputs an encoder is trained to give, and how each forms layer by
layer. Sentence embeddings: the cosine matrix of the batch's sentences at every depth
(similarity_matrix.js: a depth change is drawn in the browser), the closest pair, the depth at
which pairs become alike, and which tokens make two sentences alike (their signed shares of the
cosine); a search of a corpus by meaning (search.py). The masked word: the top words at each
mask and the lens, the head on every layer's stream (masked.py).
The sections below the matrix compute only while open."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st
import torch

from app.components.module_figures import module_figure
from app.i18n import _, number, told, told_sentence
from app.keys import Key, Selection
from app.page.changes import what_changed
from app.page.figures import depth_names, matrix_figure
from app.page.layout import key_for, number_table, side_by_side
from app.runs import Run, Runs
from app.user_text import literal, quoted
from app.views.meaning import masked, search
from encoder.inspect.closest import CLOSEST_SENTENCES, closest_pair
from encoder.inspect.similarity import ALIKE_RULE, token_shares

Follow = Callable[[str, dict[str, object]], None]
SHARES, SEARCH = "meaning_shares", "meaning_search"  # the sections' expanders (their keys)
KEYS = (
    Key(SHARES, False),
    Key(SEARCH, False),
    *search.KEYS,
    *masked.KEYS,
)
EXAMPLE = "\n".join(CLOSEST_SENTENCES)  # the lesson's question's sentences


def matrix_said(run: Run) -> str:
    """Beside the figure's own captions (each depth's closest and farthest pair): the depth at
    which the closest pair at the output becomes alike, and how the embedding is pooled."""
    a, b, _cosine = closest_pair(run.similarity[-1])
    alike = next(pair for pair in run.alike if (pair.a, pair.b) == (a, b))
    said = (alike.said, run.pooling.why)
    return " ".join(told_sentence(one) for one in said)


def draw(runs: Runs, chosen: Selection, follow: Follow) -> None:
    st.header(_("What it is for"))
    st.markdown(
        _(
            "Everything the other views show serves two outputs. A sentence embedding: the "
            "stream pooled into one vector per sentence, whose cosine says how alike two "
            "meanings are (search, retrieval, clustering). And the masked word: the word a "
            "model trained to fill gaps predicts where a sentence says [MASK]. Here both, at "
            "every depth."
        )
    )
    what_changed(runs)
    st.subheader(_("Which sentences mean alike"))
    if len(runs.a.sentences) < 2:
        st.info(
            _("Type two or more sentences in the sidebar, one a line, to compare their meanings.")
        )
        st.button(
            _("Try four sentences"),
            key="meaning_two",
            on_click=follow,
            args=("What it is for", {"text": EXAMPLE}),
        )
    else:
        _matrices(runs)
        _section(SHARES, _("Which tokens make two sentences alike"), lambda: _shares(runs))
    _section(SEARCH, _("Search a corpus by meaning"), lambda: search.draw(runs))
    masked.draw(runs, follow)


def _section(key: str, label: str, draw_open: Callable[[], None]) -> None:
    """An expander whose content is computed and sent only while it is open."""
    box = st.expander(label, key=key, on_change="rerun")
    with box:
        if box.open:
            draw_open()


def _matrices(runs: Runs) -> None:
    """Setup A's matrix (and B's beside it, with B − A, where both have as many depths)."""
    runs_drawn = [run for _name, run in runs.named()]
    if len(runs_drawn) == 2 and runs.a.similarity.shape != runs.b.similarity.shape:
        st.info(
            _(
                "A has {a} depths and B {b}: each is drawn alone, without B − A.",
                a=runs.a.similarity.shape[0],
                b=runs.b.similarity.shape[0],
            )
        )
        runs_drawn = [[run] for run in runs_drawn]
    else:
        runs_drawn = [runs_drawn]
    title = _("Cosine of each pair of sentences")
    for drawn in runs_drawn:
        key = key_for("meaning_matrix", "B" if drawn[0] is runs.b else "")
        module_figure(matrix_figure(drawn, title), key=key)
    for name, run in runs.named():
        said = matrix_said(run)
        st.info(literal(_("Setup {name}: {said}", name=name, said=said) if runs.b else said))
    st.caption(told(ALIKE_RULE))


def _shares(runs: Runs) -> None:
    """Sentence a's tokens' shares of its cosine with sentence b, at a chosen depth."""
    run = runs.a
    count = len(run.sentences)
    left, right, depth_box = st.columns(3)
    a = left.selectbox(_("Sentence"), range(count), key="meaning_share_a",
                       format_func=lambda s: f"{s + 1}")  # fmt: skip
    b = right.selectbox(_("Compared with"), range(count), index=1 if count > 1 else 0,
                        key="meaning_share_b", format_func=lambda s: f"{s + 1}")  # fmt: skip
    names = depth_names(run)
    depth = depth_box.select_slider(
        _("Depth"),
        range(len(names)),
        value=len(names) - 1,
        key=f"meaning_share_depth_{len(names)}",
        format_func=lambda d: names[d],
    )
    for name, setup in side_by_side(runs):
        if depth >= setup.similarity.shape[0]:
            st.info(_("Setup {name} has no depth {depth}.", name=name, depth=depth))
            continue
        try:
            shares = token_shares(
                setup.trace, _mask(setup), setup.pooling, a, b, depth
            ).numpy()  # fmt: skip
        except ValueError as error:
            st.info(told(error))
            continue
        cosine = float(setup.similarity[depth, a, b])
        tokens = setup.tokens[a]
        table = pd.DataFrame({"position": range(len(tokens)), "token": tokens, "share": shares})
        top = int(np.argmax(shares))
        st.markdown(
            _(
                "At {depth}, sentence {a}'s tokens' shares sum to its cosine with sentence {b}, "
                "{cosine}. The largest share, {share}, is {token}'s; {negative} of {count} "
                "tokens pull the two apart (a negative share).",
                depth=names[depth],
                a=a + 1,
                b=b + 1,
                cosine=number(cosine, 3),
                share=number(float(shares[top]), 3),
                token=quoted(tokens[top]),
                negative=int((shares < 0).sum()),
                count=len(tokens),
            )
        )
        number_table(table, ("position", "token"), height=min(38 + 35 * len(tokens), 420))


def _mask(run: Run) -> torch.Tensor:
    return torch.from_numpy(run.attention_mask)
