"""The heads chapter's last step: weights are not the whole story. Where a head puts its weight
is not what it moves: what each key hands over is weight × f(key) (Kobayashi et al. 2020)."""

from __future__ import annotations

import pandas as pd

from app.charts.heads import norm_weighted_figure
from app.i18n import _
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text
from app.page import readings
from app.page.figures import head_figure
from encoder.inspect import moves
from encoder.inspect.lesson import CLEAR_SHARE
from encoder.inspect.moves import MOVES_LITTLE
from encoder.inspect.token_kinds import CLS, SEP, SINK_KINDS, token_kind


def _no_sinks_step(lesson: Lesson, text: Text) -> Step:
    """The moves step where no token is a sink (a toy task's or a plain sentence's)."""
    text.say(
        _(
            "{model}'s sequences have no [CLS], [SEP] or punctuation for a head to park its "
            "weight on. In MiniLM, much of the weight sits on [CLS] yet moves little: switch "
            "to MiniLM to see weight and what is moved part.",
            model=lesson.model_title,
        )
        if lesson.kind == "task"
        else _(
            "{model}'s sentences have no [CLS], [SEP] or punctuation for a head to park its "
            "weight on. In MiniLM, much of the weight sits on [CLS] yet moves little: switch "
            "to MiniLM to see weight and what is moved part.",
            model=lesson.model_title,
        )
    )
    return Step(text, links=[OpenIn("Attention", {"layer": lesson.layer, "head": lesson.head})])


def _moved_said(weight_share: float, moved_share: float, values: dict[str, str]) -> str:
    """What the heads move from the sinks, against the weight they put there."""
    if moved_share < MOVES_LITTLE * weight_share:
        return _(
            "Each key hands over weight × f(key), f being the head's value projection and its "
            "part of the output projection. Count the size of that instead of the weight alone "
            "and the share that comes from {opening}, {closing} and punctuation is {moved}, less "
            "than the {weight} of the weight: part of that weight is parked on tokens whose "
            "f(key) is short, and moves little.",
            **values,
        )
    if moved_share > weight_share / MOVES_LITTLE:
        return _(
            "Each key hands over weight × f(key), f being the head's value projection and its "
            "part of the output projection. Count the size of that instead of the weight alone "
            "and the share that comes from {opening}, {closing} and punctuation is {moved}, more "
            "than the {weight} of the weight: these tokens' f(key) is long.",
            **values,
        )
    return _(
        "Each key hands over weight × f(key), f being the head's value projection and its "
        "part of the output projection. Count the size of that instead of the weight alone "
        "and the share that comes from {opening}, {closing} and punctuation is {moved}, "
        "about the {weight} of the weight: f(key) is about as long there as elsewhere.",
        **values,
    )


def _extreme_said(
    lesson: Lesson, text: Text, raw: pd.DataFrame, moved: pd.DataFrame
) -> tuple[int, int]:
    """The head that parks most weight on the sinks, what it moves from them (its layer and
    head returned), and what an even spread would give them under random weights."""
    n = lesson.n
    best = int(raw["sinks"].idxmax())
    layer, head = int(raw.loc[best, "layer"]), int(raw.loc[best, "head"])
    head_weight, head_moved = float(raw.loc[best, "sinks"]), float(moved.loc[best, "sinks"])
    values = {
        "layer": text.num("sink layer", layer),
        "head": text.num("sink head", head),
        "weight": text.num("sink head weight", head_weight, ".0%"),
        "moved": text.num("sink head moved", head_moved, ".0%"),
    }
    text.say(
        _(
            "The most extreme: layer {layer}, head {head} puts {weight} of its weight there, yet "
            "only {moved} of what it moves comes from there.",
            **values,
        )
        if head_moved < MOVES_LITTLE * head_weight
        else _(
            "The most extreme: layer {layer}, head {head} puts {weight} of its weight there, and "
            "{moved} of what it moves comes from there.",
            **values,
        )
    )
    if lesson.random:
        sinks = sum(token_kind(token) in SINK_KINDS for token in lesson.tokens)
        text.say(
            _(
                "With random weights no head has learned to park its weight: an even spread "
                "would give these {count} tokens {share}. Switch to MiniLM to see the two "
                "readings part.",
                count=text.num("sink tokens", sinks),
                share=text.num("even spread on sinks", sinks / n, ".0%"),
            )
        )
    return layer, head


def moves_step(lesson: Lesson) -> Step:
    """Weights are not the whole story: what each head moves (Kobayashi et al. 2020)."""
    text, run, s, n = Text(), lesson.run, lesson.sentence, lesson.n
    shares = moves.sink_shares(run.trace, run.model(), run.tokens, sentence=s)
    shares["sinks"] = shares[list(SINK_KINDS)].sum(axis=1)
    raw = shares[shares["reading"] == moves.WEIGHT].reset_index(drop=True)
    moved = shares[shares["reading"] == moves.NORM_WEIGHTED].reset_index(drop=True)
    total = text.num("heads in all", len(raw))
    if float(raw["sinks"].max()) == 0:  # a toy task's sequences: no [CLS], [SEP], punctuation
        return _no_sinks_step(lesson, text)
    # the sentence's own opening and closing tokens ([CLS] and [SEP], <s> and </s>, ...)
    opening, closing = (
        next((t for t in lesson.tokens if token_kind(t) == kind), kind) for kind in (CLS, SEP)
    )
    over_half = text.num(
        "heads above half on the opening token", int((raw[CLS] > CLEAR_SHARE).sum())
    )
    text.say(
        _(
            "A head's weights say where it looks, not what it takes. In this {unit}, {count} of "
            "the {total} heads put more than half of their weight on {opening}. Averaged over "
            "the heads, {share} of the weight goes to {opening}, {closing} and punctuation.",
            unit=lesson.unit,
            count=over_half,
            total=total,
            opening=opening,
            closing=closing,
            share=text.num("weight on sinks", float(raw["sinks"].mean()), ".0%"),
        )
    )
    weight_share, moved_share = float(raw["sinks"].mean()), float(moved["sinks"].mean())
    weighed = text.num("weight on sinks", weight_share, ".0%")
    moved_from = text.num("moved from sinks", moved_share, ".0%")
    values = {"opening": opening, "closing": closing, "moved": moved_from, "weight": weighed}
    text.say(_moved_said(weight_share, moved_share, values))
    layer, head = _extreme_said(lesson, text, raw, moved)
    tokens = run.padded_tokens[s]
    weights = head_figure(run, s, layer, head, stretch=False)
    moved_matrix = readings.norm_weighted_head(run, layer, s, head)
    title = _(
        "Layer {layer}, head {head}: what is moved, ||weight x f(key)||", layer=layer, head=head
    )
    return Step(
        text,
        figures=[
            ("lesson_moves_weights", weights),
            ("lesson_moves_norms", norm_weighted_figure(moved_matrix, tokens, n, title)),
        ],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
    )


MOVES = LessonStep(lambda: _("Weights are not the whole story"), moves_step)
