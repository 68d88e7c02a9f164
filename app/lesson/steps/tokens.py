"""The lesson's first chapter, the input: the tokens and their ids, then the embeddings and
positions the first block reads."""

from __future__ import annotations

import math

import numpy as np

from app.charts.steps import token_matrix, vector_strips
from app.lesson.text import Lesson, LessonStep, OpenIn, Said, Step, Text
from app.views.figures import token_table
from encoder import hooks
from encoder.core.options import NORM_TYPE_NAMES
from encoder.inspect.lesson import embedding_parts, is_special


def tokens_step(lesson: Lesson) -> Step:
    run, text = lesson.run, Text()
    tokens, n = lesson.tokens, lesson.n
    ids = run.input_ids[lesson.sentence, :n]
    vocab = text.num("vocabulary size", lesson.cfg.vocab_size, ",")
    if lesson.kind == "task":
        text.say(
            f"This model reads sequences, not sentences: {text.num('tokens', n)} symbols, each "
            f"its own token, and symbol i is id i. Its vocabulary has {vocab} ids, and there is "
            "no [CLS] or [SEP]: the model answers one class per position."
        )
    else:
        text.say(
            f"The tokenizer cut this sentence into {text.num('tokens', n)} tokens; each is a row "
            f"number, its id, in a vocabulary of {vocab} entries."
        )
        if is_special(tokens[0]) and is_special(tokens[-1]):
            text.say(
                Said(tokens[0]),
                f" (id {text.num('first id', int(ids[0]))}) opens every sentence and ",
                Said(tokens[-1]),
                f" (id {text.num('last id', int(ids[-1]))}) closes it.",
            )
        pieces = [i for i, token in enumerate(tokens) if token.startswith("##")]
        if pieces:
            text.say(
                f"{text.num('word pieces', len(pieces))} token(s) continue the word before them "
                "(they start with ##), such as ",
                Said(tokens[pieces[0]]),
                ".",
            )
    text.say(
        "The lesson follows one token, ",
        *lesson.query_said(text),
        f", id {text.num('query id', int(ids[lesson.query]))}.",
    )
    if lesson.random:
        text.say(
            "The weights are random, but the tokens and ids are MiniLM's: they do not depend on "
            "the weights."
        )
    table = token_table(run, lesson.sentence).T.astype(str)
    table.columns = [str(position) for position in table.columns]
    return Step(
        text,
        tables=[(f"The {lesson.unit}'s tokens by position", table)],
        links=[OpenIn("Tokens", {})],
        uses_query=True,
        wide=True,
    )


def embedding_step(lesson: Lesson) -> Step:
    run, cfg, text = lesson.run, lesson.cfg, Text()
    q = lesson.query
    parts = embedding_parts(run.trace, lesson.sentence, q)
    width = text.num("embedding width", cfg.embedding_width)
    token_norm = text.num("length of the token vector", float(np.linalg.norm(parts.token)), ".2f")
    if cfg.scale_embeddings:
        root = text.num("sqrt d_model", math.sqrt(cfg.d_model), ".2f")
        scale = f" after the multiplication by √d_model = {root}, as in the original Transformer."
    else:
        scale = ": this model does not multiply by √d_model (BERT and MiniLM do not)."
    row = (
        f"a vector of d_model = {width} numbers"
        if not cfg.embedding_size
        else f"a vector of {width} numbers, narrower than d_model = "
        f"{text.num('d_model', cfg.d_model)}"
    )
    text.say(
        f"Each id picks one row of the embedding table: {row}. ",
        *lesson.query_said(text),
        f" gets a vector of length {token_norm}{scale}",
    )
    rotary = cfg.positional == "rope"
    position_norm = text.num(
        "length of the position vector", float(np.linalg.norm(parts.position)), ".2f"
    )
    if rotary:
        text.say(
            "Nothing is added for its position: this model has no position table. Each block's "
            "attention turns q and k by their positions instead (RoPE, base "
            f"{text.num('RoPE base', cfg.rope_base, 'g')}), so positions enter where tokens "
            "meet; Attention steps shows the turn."
        )
    elif cfg.positional == "sinusoidal":
        text.say(
            f"Its position adds a fixed vector of sines and cosines at "
            f"{text.num('wavelengths', cfg.embedding_width // 2)} wavelengths (length "
            f"{position_norm}): no weights, the same for every model."
        )
    else:
        learned = "random rows, not yet learned" if lesson.random else "rows learned in training"
        text.say(
            f"Its position adds one of {text.num('max_len', cfg.max_len)} {learned} (length "
            f"{position_norm})."
        )
    out_norm = text.num("length of the block input", float(np.linalg.norm(parts.output)), ".2f")
    summed = "the token vector" if rotary else "the sum"
    if cfg.embedding_norm:
        token_type = "" if rotary or not cfg.type_vocab_size else "adds a token-type vector and "
        text.say(
            f"This model also {token_type}normalises {summed} with "
            f"{NORM_TYPE_NAMES[cfg.norm_type]}"
            + (f", then projects it to d_model = {text.num('d_model', cfg.d_model)}"
               if cfg.embedding_size else "")
            + f": the first block reads a vector of length {out_norm}."
        )  # fmt: skip
    elif cfg.embedding_size:
        text.say(
            f"A linear layer projects {summed} to d_model = {text.num('d_model', cfg.d_model)}: "
            f"the first block reads a vector of length {out_norm}."
        )
    else:
        text.say(f"The first block reads {summed}, a vector of length {out_norm}.")
    rows = [("token", parts.token)] + ([] if rotary else [("position", parts.position)])
    if not cfg.embedding_size:  # the block input is as wide as the rest
        rows.append(("block input", parts.output))
    strips = vector_strips(
        rows,
        title=f"Position {q}: " + ", ".join(name for name, _ in rows),
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
                    title=f"The position vectors of these {lesson.n} positions ({cfg.positional})",
                    colour_title="value",
                ),
            )
        )
    return Step(
        text,
        figures=figures,
        links=[lesson.attention_steps_link(layer=0)],
        uses_query=True,
    )


TOKENS = LessonStep("The tokens and their ids", tokens_step)
EMBEDDINGS = LessonStep("Embeddings and positions", embedding_step)
