"""What it is for: search a corpus by meaning (the bundled corpus or the user's own lines), at the
output or at a chosen depth, and a token's nearest tokens in the corpus at that depth. The
corpus' index (every line's embeddings at every depth: encoder.inspect.search) is built once per
model and corpus, with a spinner, and kept in the shared memory budget (app.memory.CACHE)."""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from app.i18n import _, number, told
from app.keys import Key
from app.memory import CACHE
from app.page.corpus_choice import KEYS as CORPUS_KEYS
from app.page.corpus_choice import chosen_sentences
from app.page.figures import depth_names
from app.page.layout import number_table, side_by_side
from app.runs import Run, Runs
from app.user_text import quoted
from encoder.inspect.limits import BYTES_PER_VALUE
from encoder.inspect.search import CorpusIndex, corpus_index
from encoder.inspect.similarity import states_at

TOP = 5  # hits shown
KEYS = (*CORPUS_KEYS, Key("meaning_query", ""))
BYTES_PER_TOKEN = 160  # a line's token as Python objects, at most


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def index_for(run: Run, lines: list[str]) -> CorpusIndex:
    """The corpus' index for `run`'s model, built once per (model source, corpus) with a spinner
    and kept in the shared memory budget; RunTooLarge (the budget's message) when it cannot fit."""
    cfg = run.cfg
    depths, values = cfg.num_layers + 1, len(lines) * (cfg.num_layers + 1) * cfg.d_model

    def build() -> CorpusIndex:
        with st.spinner(_("Embedding {count} lines with this model…", count=number(len(lines)))):
            return corpus_index(run.cpu_model(), run.source.reader, lines, run.pooling)

    return CACHE.get_or_build(
        ("corpus index", cfg, run.key.source, _digest(lines)),
        build,
        lambda index: index.nbytes,
        # the embeddings at every depth, and one batch's states while they are built
        reserve=BYTES_PER_VALUE * values * 2 + BYTES_PER_TOKEN * sum(map(len, lines)) * depths,
        what=_("The corpus' {count} lines, embedded", count=len(lines)),
        tag=run.source.tag,
    )


def token_states_for(run: Run, index: CorpusIndex, depth: int) -> None:
    """Every corpus token's state at `depth`, which the index builds when first asked and keeps:
    counted in the memory budget as an entry of its own (the index counted its embeddings)."""
    tokens = sum(len(ids) for ids in index.ids)
    CACHE.get_or_build(
        ("corpus token states", run.cfg, run.key.source, _digest(index.lines), depth),
        lambda: index.token_states(run.cpu_model(), depth),
        lambda states: states.numel() * states.element_size(),
        reserve=2 * BYTES_PER_VALUE * tokens * run.cfg.d_model,
        what=_("The corpus' {count} tokens at one depth", count=number(tokens)),
        tag=run.source.tag,
    )


def draw(runs: Runs) -> None:
    """The query, the corpus, the depth; each setup's hits and a token's nearest tokens."""
    if any(run.source is None or run.source.reads_symbols for _n, run in runs.named()):
        st.info(_("This model reads a toy task's symbols, not sentences: nothing to search."))
        return
    run = runs.a
    query = (
        st.text_input(
            _("Query (empty: the first sentence)"), key="meaning_query", persist_state="session"
        ).strip()
        or run.sentences[0]
    )
    lines = chosen_sentences()
    if lines is None:
        return
    names = depth_names(run)
    depth = st.select_slider(
        _("Depth"),
        range(len(names)),
        value=len(names) - 1,
        key=f"meaning_search_depth_{len(names)}",
        format_func=lambda d: names[d],
    )
    for name, setup in side_by_side(runs):
        if depth > setup.cfg.num_layers:
            st.info(_("Setup {name} has no depth {depth}.", name=name, depth=depth))
            continue
        try:
            index = index_for(setup, lines)
        except (ValueError, MemoryError) as error:
            st.warning(told(error))
            continue
        _hits(setup, index, query, depth, names[depth])
        _nearest_tokens(setup, index, depth, names[depth], name)


def _hits(run: Run, index: CorpusIndex, query: str, depth: int, depth_name: str) -> None:
    hits = index.search(index.embed(run.cpu_model(), [query])[depth, 0], depth, top=TOP)
    table = pd.DataFrame(
        {"rank": range(1, len(hits) + 1), "cosine": [hit.cosine for hit in hits],
         "sentence": [hit.text for hit in hits]}
    )  # fmt: skip
    best = hits[0]
    st.markdown(
        _(
            "At {depth}, the line closest in meaning to {query} is line {line}, cosine {cosine}.",
            depth=depth_name,
            query=quoted(query),
            line=best.line + 1,
            cosine=number(best.cosine, 3),
        )
    )
    number_table(table, ("rank", "sentence"), height=38 + 35 * len(hits))


def _nearest_tokens(run: Run, index: CorpusIndex, depth: int, depth_name: str, name: str) -> None:
    """A token of the chosen sentence and the corpus' tokens whose states at `depth` are
    closest to its (cosine)."""
    tokens = run.tokens[0]
    position = st.selectbox(
        _("A token of the first sentence"),
        range(len(tokens)),
        index=min(1, len(tokens) - 1),
        key=f"meaning_token_{name or 'A'}",
        format_func=lambda p: f"{p}: {tokens[p]}",
    )
    token_states_for(run, index, depth)
    state = states_at(run.trace, depth)[0, position]
    hits = index.nearest_tokens(run.cpu_model(), state, depth, top=TOP)
    st.markdown(
        _(
            "At {depth}, the corpus' tokens nearest to {token}: the same word in other "
            "sentences, or words used alike.",
            depth=depth_name,
            token=quoted(tokens[position]),
        )
    )
    table = pd.DataFrame(
        {"token": [hit.token for hit in hits], "cosine": [hit.cosine for hit in hits],
         "sentence": [index.lines[hit.line] for hit in hits]}
    )  # fmt: skip
    number_table(table, ("token", "sentence"), height=38 + 35 * len(hits))
