"""The corpus a view reads: the bundled one or the user's own sentences, one a line (the radio
and the text area, their keys shared by every view that reads a corpus: Heads across a corpus,
What it is for's search)."""

from __future__ import annotations

import streamlit as st

from app.i18n import _, number, told_sentence
from app.keys import Key
from encoder.inspect.corpus import (
    MAX_CHARS,
    MAX_SENTENCES,
    MAX_TOKENS,
    bundled_corpus,
    bundled_corpus_source,
    parse_corpus,
)

BUNDLED, PASTED = "the bundled corpus", "my own sentences"  # the radio's values (keys)


def _source_name(choice: str) -> str:
    """The radio's option as the reader sees it."""
    return _("the bundled corpus") if choice == BUNDLED else _("my own sentences")


KEYS = (  # the bundled corpus or the user's own sentences
    Key("corpus_source"),
    Key("corpus_text", ""),
)


def chosen_sentences() -> list[str] | None:
    """The corpus the user picked, or None after saying what is wrong with a pasted one."""
    choice = st.radio(
        _("Corpus"),
        (BUNDLED, PASTED),
        format_func=_source_name,
        key="corpus_source",
        persist_state="session",
        horizontal=True,
    )
    if choice == BUNDLED:
        sentences = bundled_corpus()
        st.caption(
            (
                _("1 sentence.")
                if len(sentences) == 1
                else _("{count} sentences.", count=number(len(sentences)))
            )
            + f" {bundled_corpus_source()}"
        )
        return sentences
    text = st.text_area(
        _(
            "Your sentences, one a line (2 to {most}, at most {tokens} tokens each)",
            most=number(MAX_SENTENCES),
            tokens=MAX_TOKENS,
        ),
        key="corpus_text",
        persist_state="session",
        height=160,
    )
    try:
        return parse_corpus(text)
    except ValueError as error:
        st.info(
            told_sentence(error) + " " + _("(At most {chars} characters.)", chars=number(MAX_CHARS))
        )
        return None
