"""The lesson's first chapter, the input: the tokens and their ids, then the embeddings and
positions the first block reads."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from app.charts.steps import token_matrix, vector_strips
from app.i18n import _, n_
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text, Typed, sentence
from app.page.figures import token_table
from encoder import EncoderConfig, hooks
from encoder.core.options import NORM_TYPE_NAMES
from encoder.inspect.lesson import EmbeddingParts, embedding_parts, is_special


def _tokens_said(lesson: Lesson, text: Text, ids: np.ndarray) -> None:
    """How the tokenizer cut the text: the count, the vocabulary, the ends and the word pieces."""
    tokens, n = lesson.tokens, lesson.n
    vocab = text.num("vocabulary size", lesson.cfg.vocab_size, ",")
    if lesson.kind == "task":
        text.say(
            _(
                "This model reads sequences, not sentences: {count} symbols, each its own token, "
                "and symbol i is id i. Its vocabulary has {vocab} ids, and there is no [CLS] or "
                "[SEP]: the model answers one class per position.",
                count=text.num("tokens", n),
                vocab=vocab,
            )
        )
    else:
        text.say(
            _(
                "The tokenizer cut this sentence into {count} tokens; each is a row number, its "
                "id, in a vocabulary of {vocab} entries.",
                count=text.num("tokens", n),
                vocab=vocab,
            )
        )
        if is_special(tokens[0]) and is_special(tokens[-1]):
            text.say(
                *sentence(
                    _(
                        "{first} (id {first_id}) opens every sentence and {last} (id {last_id}) "
                        "closes it."
                    ),
                    first=Typed(tokens[0]),
                    first_id=text.num("first id", int(ids[0])),
                    last=Typed(tokens[-1]),
                    last_id=text.num("last id", int(ids[-1])),
                )
            )
        pieces = [i for i, token in enumerate(tokens) if token.startswith("##")]
        if pieces:
            text.num("word pieces", len(pieces))  # written by n_(), in the language's plural
            said = n_(
                "{count} token continues the word before it (it starts with ##): {token}.",
                "{count} tokens continue the word before them (they start with ##), such as "
                "{token}.",
                len(pieces),
                token="{token}",  # a placeholder still: the token is the user's, put in as Typed
            )
            text.say(*sentence(said, token=Typed(tokens[pieces[0]])))


def tokens_step(lesson: Lesson) -> Step:
    run, text = lesson.run, Text()
    ids = run.input_ids[lesson.sentence, : lesson.n]
    _tokens_said(lesson, text, ids)
    text.say(
        *sentence(
            _("The lesson follows one token, {query}, id {id}."),
            query=lesson.query_said(text),
            id=text.num("query id", int(ids[lesson.query])),
        )
    )
    if lesson.random:
        text.say(
            _(
                "The weights are random, but the tokens and ids are MiniLM's: they do not depend "
                "on the weights."
            )
        )
    table = token_table(run, lesson.sentence).T.astype(str)
    table.columns = [str(position) for position in table.columns]
    return Step(
        text,
        tables=[(_("The {unit}'s tokens by position", unit=lesson.unit), table)],
        links=[OpenIn("Tokens", {})],
        uses_query=True,
        wide=True,
    )


def _embedding_said(lesson: Lesson, text: Text, parts: EmbeddingParts) -> None:
    """The row the id picks, and the length the query's token vector gets."""
    cfg = lesson.cfg
    width = text.num("embedding width", cfg.embedding_width)
    token_norm = text.num("length of the token vector", float(np.linalg.norm(parts.token)), ".2f")
    if cfg.scale_embeddings:
        root = text.num("sqrt d_model", math.sqrt(cfg.d_model), ".2f")
        gets = _(
            "{query} gets a vector of length {length} after the multiplication by √d_model = "
            "{root}, as in the original Transformer."
        )
    else:
        root = ""
        gets = _(
            "{query} gets a vector of length {length}: this model does not multiply by "
            "√d_model (BERT and MiniLM do not)."
        )
    if not cfg.embedding_size:
        row = _(
            "Each id picks one row of the embedding table: a vector of d_model = {width} numbers.",
            width=width,
        )
    else:
        row = _(
            "Each id picks one row of the embedding table: a vector of {width} numbers, "
            "narrower than d_model = {d_model}.",
            width=width,
            d_model=text.num("d_model", cfg.d_model),
        )
    text.say(
        row + " ",
        *sentence(gets, query=lesson.query_said(text), length=token_norm, root=root),
    )


def _position_said(lesson: Lesson, text: Text, parts: EmbeddingParts) -> None:
    """What the position adds: nothing (RoPE turns q and k instead), sines, or a table's row."""
    cfg = lesson.cfg
    rotary = cfg.positional == "rope"
    position_norm = text.num(
        "length of the position vector", float(np.linalg.norm(parts.position)), ".2f"
    )
    if rotary:
        text.say(
            _(
                "Nothing is added for its position: this model has no position table. Each "
                "block's attention turns q and k by their positions instead (RoPE, base {base}), "
                "so positions enter where tokens meet; Attention steps shows the turn.",
                base=text.num("RoPE base", cfg.rope_base, "g"),
            )
        )
    elif cfg.positional == "sinusoidal":
        text.say(
            _(
                "Its position adds a fixed vector of sines and cosines at {count} wavelengths "
                "(length {length}): no weights, the same for every model.",
                count=text.num("wavelengths", cfg.embedding_width // 2),
                length=position_norm,
            )
        )
    elif lesson.random:
        text.say(
            _(
                "Its position adds one of {count} random rows, not yet learned (length {length}).",
                count=text.num("max_len", cfg.max_len),
                length=position_norm,
            )
        )
    else:
        text.say(
            _(
                "Its position adds one of {count} rows learned in training (length {length}).",
                count=text.num("max_len", cfg.max_len),
                length=position_norm,
            )
        )


def _normalised_said(
    cfg: EncoderConfig, text: Text, summed: str, out_norm: str, token_type: bool
) -> str:
    """What the first block reads where the embeddings are normalised (BERT): with a token-type
    vector or not, projected to d_model or not."""
    norm = NORM_TYPE_NAMES[cfg.norm_type]
    if cfg.embedding_size:
        d_model = text.num("d_model", cfg.d_model)
        return (
            _(
                "This model also adds a token-type vector and normalises {what} with {norm}, "
                "then projects it to d_model = {d_model}: the first block reads a vector of "
                "length {length}.",
                what=summed,
                norm=norm,
                d_model=d_model,
                length=out_norm,
            )
            if token_type
            else _(
                "This model also normalises {what} with {norm}, then projects it to "
                "d_model = {d_model}: the first block reads a vector of length {length}.",
                what=summed,
                norm=norm,
                d_model=d_model,
                length=out_norm,
            )
        )
    return (
        _(
            "This model also adds a token-type vector and normalises {what} with {norm}: "
            "the first block reads a vector of length {length}.",
            what=summed,
            norm=norm,
            length=out_norm,
        )
        if token_type
        else _(
            "This model also normalises {what} with {norm}: the first block reads a "
            "vector of length {length}.",
            what=summed,
            norm=norm,
            length=out_norm,
        )
    )


def _block_input_said(lesson: Lesson, text: Text, parts: EmbeddingParts) -> None:
    """What the first block reads: the sum (or the token vector), normalised or projected."""
    cfg = lesson.cfg
    rotary = cfg.positional == "rope"
    out_norm = text.num("length of the block input", float(np.linalg.norm(parts.output)), ".2f")
    summed = _("the token vector") if rotary else _("the sum")
    if cfg.embedding_norm:
        text.say(
            _normalised_said(cfg, text, summed, out_norm, not rotary and bool(cfg.type_vocab_size))
        )
    elif cfg.embedding_size:
        text.say(
            _(
                "A linear layer projects {what} to d_model = {d_model}: the first block reads a "
                "vector of length {length}.",
                what=summed,
                d_model=text.num("d_model", cfg.d_model),
                length=out_norm,
            )
        )
    else:
        text.say(
            _(
                "The first block reads {what}, a vector of length {length}.",
                what=summed,
                length=out_norm,
            )
        )


def _embedding_figures(lesson: Lesson, parts: EmbeddingParts) -> list[tuple[str, go.Figure]]:
    """The query's vectors as strips, and (unless RoPE) every position's vector."""
    run, cfg, q = lesson.run, lesson.cfg, lesson.query
    rotary = cfg.positional == "rope"
    rows = [(_("token"), parts.token)] + ([] if rotary else [(_("position"), parts.position)])
    if not cfg.embedding_size:  # the block input is as wide as the rest
        rows.append((_("block input"), parts.output))
    strips = vector_strips(
        rows,
        title=_(
            "Position {position}: {rows}",
            position=q,
            rows=", ".join(name for name, _vector in rows),
        ),
        robust=True,
    )
    title = strips.layout.title.text  # the colour note on a line of its own
    if " · " in title:
        strips.update_layout(title_text=title.replace(" · ", "<br><sup>", 1) + "</sup>")
    figures = [("lesson_embedding", strips)]
    if not rotary:
        positions = run.trace[hooks.embed().position][: lesson.n].float().numpy()
        figures.append(
            (
                "lesson_positions",
                token_matrix(
                    positions,
                    lesson.tokens,
                    lesson.n,
                    title=_(
                        "The position vectors of these {count} positions ({kind})",
                        count=lesson.n,
                        kind=cfg.positional,
                    ),
                    colour_title=_("value"),
                ),
            )
        )
    return figures


def embedding_step(lesson: Lesson) -> Step:
    text = Text()
    parts = embedding_parts(lesson.run.trace, lesson.sentence, lesson.query)
    _embedding_said(lesson, text, parts)
    _position_said(lesson, text, parts)
    _block_input_said(lesson, text, parts)
    return Step(
        text,
        figures=_embedding_figures(lesson, parts),
        links=[lesson.attention_steps_link(layer=0)],
        uses_query=True,
    )


TOKENS = LessonStep(lambda: _("The tokens and their ids"), tokens_step)
EMBEDDINGS = LessonStep(lambda: _("Embeddings and positions"), embedding_step)
