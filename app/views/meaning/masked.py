"""What it is for: the masked word. Where a sentence holds the model's mask token, the words its
masked-LM head predicts there and the lens (the same head on every layer's stream at the mask:
lens_grid.js, a mask or a layer is chosen in the browser); where none does, how to type one, with
an example a click away; a model without a head says why and offers the way to one. Bad input is
a message, never a traceback (encoder.inspect.masked's Saids)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from app.components.module_figures import module_figure
from app.i18n import _, percent, told
from app.page.figures import Drawn
from app.page.layout import headers, key_for, side_by_side
from app.page.training import MASKED_PRESET, training_link_values
from app.runs import Run, Runs
from app.sources import no_head_text
from app.user_text import literal, quoted
from encoder.inspect.masked import (
    MASK_TOKENS,
    checked_positions,
    fills,
    lens_probabilities,
    mask_positions,
    mask_token_of,
)
from encoder.web import hosts
from encoder.web.lens_grid import lens_payload

Follow = Callable[[str, dict[str, object]], None]
KEYS = ()
EXAMPLE = "The capital of France is {mask}."
TOP = 5


def example_for(run: Run, mask: str) -> str:
    """A sentence with the model's mask token to try: a masked-word model's own (its words)."""
    return EXAMPLE.format(mask=mask) if run.task_model is None else run.task_model.example


def draw(runs: Runs, follow: Follow) -> None:
    st.subheader(_("The masked word, layer by layer"))
    for name, run in side_by_side(runs):
        head, why = run.masked_head()
        if head is None:
            _no_head(why, follow, name)
            continue
        _panel(run, head, follow, name)


def _no_head(why: str, follow: Follow, name: str) -> None:
    """Why this model predicts no words, and the way to one that does."""
    said = no_head_text(why)
    st.info(literal(said))
    st.button(
        _("Train a masked-word model"),
        key=key_for("meaning_train", name),
        on_click=follow,
        args=("Training", training_link_values(MASKED_PRESET)),
    )


def _panel(run: Run, head, follow: Follow, name: str) -> None:
    mask = mask_token_of(run.source.reader)
    model = run.cpu_model()
    shown = 0
    for s, text in enumerate(run.sentences):
        tokens = run.tokens[s]
        positions = mask_positions(tokens, mask)
        foreign = [token for token in MASK_TOKENS if token != mask and token in text.lower()]
        if not positions and not foreign:
            continue
        shown += 1  # a sentence with a mask: its words, or why there are none
        try:
            if not positions:  # another family's mask token, as typed (the tokens may split it)
                checked_positions(text.split(), mask)
            found = fills(model, head, run.trace, tokens, mask, s, TOP, tokenizer=run.source.reader)
        except ValueError as error:
            st.warning(literal(_("Sentence {number}: {said}", number=s + 1, said=told(error))))
            continue
        _fills(run, head, model, s, found, name)
    if shown == 0:
        st.info(
            literal(
                _(
                    "Type {mask} in a sentence where this model should predict a word (its mask "
                    "token: {mask}), and see its guesses at every layer.",
                    mask=mask,
                )
            )
        )
        st.button(
            _("Try an example"),
            key=key_for("meaning_example", name),
            on_click=follow,
            args=("What it is for", {"text": example_for(run, mask)}),
        )


def _fills(run: Run, head, model, sentence: int, found: list, name: str) -> None:
    """One sentence's masks: each one's top words at the output, and the lens grid."""
    tokens = run.tokens[sentence]
    for fill in found:
        best = fill.top[0]
        st.markdown(
            _(
                "Sentence {number}, the mask at position {position}: the model's top word is "
                "{word} ({probability}).",
                number=sentence + 1,
                position=fill.position,
                word=quoted(best.token),
                probability=percent(best.probability, 1),
            )
        )
    table = pd.DataFrame(
        [
            {"position": fill.position, "rank": rank + 1, "token": word.token,
             "probability": word.probability}
            for fill in found for rank, word in enumerate(fill.top)
        ]
    )  # fmt: skip
    height = 38 + 35 * min(len(table), 10)
    st.dataframe(
        table, hide_index=True, width="content", height=height, column_config=headers(table)
    )
    positions = [fill.position for fill in found]
    probabilities = lens_probabilities(model, head, run.trace, sentence, positions)
    layers = [_("after block {block}", block=layer) for layer in range(run.cfg.num_layers)]
    words = {"title": _("Sentence {number}: the top word at each layer", number=sentence + 1)}
    data = lens_payload(found, probabilities.numpy(), tokens, layers, words)
    module_figure(Drawn(hosts.LENS, data), key=key_for(f"meaning_lens_{sentence}", name))
