"""The lesson's attention chapter: one query's attention (the strongest link from the lesson's
token, over every layer and head), then how that weight is computed (q·k, ÷ √d_k, softmax, the
weighted sum of values)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from app.charts.steps import softmax_comparison
from app.i18n import _
from app.lesson.asked import top_key
from app.lesson.text import ExplorerAt, Lesson, LessonStep, OpenIn, Step, Text, sentence
from app.page.figures import head_figure
from encoder.inspect.attention_steps import AttentionSteps
from encoder.inspect.lesson import MIN_DISTANCE, is_pronoun, is_special
from encoder.inspect.predictions import Prediction

LINK_ROWS = 10  # rows of the attention step's table shown: the chosen link and runners-up
RIGHT_ANGLE_BAND = 10  # degrees from 90 within which a sum barely changes a vector's length


def _query_sentence(lesson: Lesson) -> str:
    """Which token the lesson follows, and why: a message with a {query} placeholder."""
    if lesson.chosen_query is not None:
        return _("The query is {query}: you chose it.")
    if is_pronoun(lesson.tokens[lesson.query]):
        return _("The query is {query}: it is the sentence's last pronoun.")
    if lesson.kind == "task":
        return _("The query is {query}: it is the sequence's last symbol.")
    return _("The query is {query}: it is the sentence's last content token.")


def _link_rule(lesson: Lesson, text: Text) -> str:
    """Which keys the lesson's link may go to (app.lesson.text.Lesson.links' rule), in words."""
    specials = any(is_special(token) for token in lesson.tokens)
    if lesson.links.rule == "content":
        distance = text.num("minimum distance", MIN_DISTANCE)
        return (
            _(
                "a content token (not {first}, {last} or punctuation) at least {distance} "
                "positions away",
                first=lesson.end_name("first"),
                last=lesson.end_name("last"),
                distance=distance,
            )
            if specials
            else _("a token at least {distance} positions away", distance=distance)
        )
    if lesson.links.rule == "other":
        return _("another token (none is both content and far enough)")
    return _("itself (it is the only token)")


def _spread_said(lesson: Lesson, text: Text) -> None:
    """The link's weight against an even spread, over the sentence or a local layer's window."""
    cfg, n, layer = lesson.cfg, lesson.n, lesson.layer
    even = text.num("even spread 1/n", 1 / n, ".3f")
    text.say(
        _(
            "An even spread over the {count} tokens would give each {weight}.",
            count=text.num("n", n),
            weight=even,
        )
    )
    if cfg.is_local(layer):
        half = cfg.attention_window // 2
        seen = min(n - 1, lesson.query + half) - max(0, lesson.query - half) + 1
        spread = text.num("even spread over the window", 1 / seen, ".3f")
        text.say(
            _(
                "But layer {layer} is local: this query sees only the {count} keys within {half} "
                "positions of it (the others get no weight), and an even spread over them would "
                "give each {weight}.",
                layer=text.num("layer", layer),
                count=text.num("keys in the window", seen),
                half=text.num("half window", half),
                weight=spread,
            )
        )
    if lesson.random:
        text.say(
            _(
                "These weights are random: no head has learned where to look, so the strongest "
                "link is chance. A trained model such as MiniLM puts most of a row on a few "
                "tokens, and links a pronoun to the noun it stands for."
            )
        )


def attention_step(lesson: Lesson) -> Step:
    text, links = Text(), lesson.links
    layer, head, key = lesson.layer, lesson.head, lesson.key
    cfg = lesson.cfg
    weight = text.num("weight", float(links.chosen["weight"]), ".3f")
    text.say(*sentence(_query_sentence(lesson), query=lesson.query_said(text)))
    rule = _link_rule(lesson, text)
    text.say(
        *sentence(
            _(
                "Over all {layers} layers x {heads} heads, its largest weight on {rule} is in "
                "layer {layer}, head {head}: {weight} on {key} (position {position})."
            ),
            layers=text.num("layers", cfg.num_layers),
            heads=text.num("heads", cfg.num_heads),
            rule=rule,
            layer=text.num("layer", layer),
            head=text.num("head", head),
            weight=weight,
            key=lesson.said(key),
            position=text.num("key position", key),
        )
    )
    table = links.table
    other = table[table["key"] != key]
    if len(other):
        row = other.iloc[0]
        text.say(
            *sentence(
                _(
                    "The strongest link to a different token: layer {layer}, head {head} gives "
                    "{weight} to {token} (position {position})."
                ),
                layer=text.num("runner-up layer", int(row["layer"])),
                head=text.num("runner-up head", int(row["head"])),
                weight=text.num("runner-up weight", float(row["weight"]), ".3f"),
                token=lesson.said(int(row["key"])),
                position=text.num("runner-up key position", int(row["key"])),
            )
        )
    _spread_said(lesson, text)
    figure = head_figure(lesson.run, lesson.sentence, layer, head, lesson.random)
    return Step(
        text,
        figures=[("lesson_head", figure)],
        tables=[
            (
                _("The chosen link, then the runners-up (one row per head; positions from 0)"),
                table.head(LINK_ROWS),
            ),
        ],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
        uses_query=True,
        explorer=ExplorerAt("lesson_head", layer, head, "lines", lesson.query),
    )


def top_key_question(lesson: Lesson) -> Prediction:
    """Which token the step's head attends to most from the lesson's token."""
    n = lesson.n
    attention = lesson.run.attention[:, lesson.sentence, :, :n, :n]  # [L, H, n, n]
    return top_key(attention, lesson.tokens, lesson.query, lesson.layer, lesson.head)


def weight_step(lesson: Lesson) -> Step:
    text = Text()
    layer, head, key, q = lesson.layer, lesson.head, lesson.key, lesson.query
    steps = lesson.run.attention_steps(lesson.sentence, layer, head, q)
    table = steps.table[~steps.table["padding"]]
    row = table.loc[key]
    dk = steps.head_dim
    said = (
        _(
            "q·k: layer {layer}, head {head} turns {query} into a query vector q and every token "
            "into a key vector k, each d_k = {d_k} numbers, then turns q and every k by its "
            "position (RoPE). For {key}, q·k = {dot}."
        )
        if steps.rotated_q is not None
        else _(
            "q·k: layer {layer}, head {head} turns {query} into a query vector q and every token "
            "into a key vector k, each d_k = {d_k} numbers. For {key}, q·k = {dot}."
        )
    )
    text.say(
        *sentence(
            said,
            layer=text.num("layer", layer),
            head=text.num("head", head),
            query=lesson.said(q),
            d_k=text.num("d_k", dk),
            key=lesson.said(key),
            dot=text.num("q·k", float(row["q_dot_k"]), ".3f"),
        )
    )
    root = text.num("sqrt d_k", math.sqrt(dk), ".3f")
    scaled = float(row["scaled"])
    text.say(
        _(
            "÷ √d_k: dividing by {root} gives the score {score}, so that scores do not grow with "
            "the size of the head.",
            root=root,
            score=text.num("score", scaled, ".3f"),
        )
    )
    text.say(_softmax_said(text, steps, table, key))
    text.say(*_weighted_sum(lesson, steps, table, text))
    figure = softmax_comparison(
        lesson.tokens,
        table["weight"].to_numpy(),
        steps.unscaled_weight[: lesson.n],
        head_dim=dk,
        entropies=(steps.entropy, steps.unscaled_entropy),
    )
    shown = table[["position", "key", "q_dot_k", "scaled", "weight"]]
    return Step(
        text,
        figures=[("lesson_softmax", figure)],
        tables=[(_("Every key's score and weight for this query"), shown)],
        links=[lesson.attention_steps_link()],
        uses_query=True,
    )


def _softmax_said(text: Text, steps: AttentionSteps, table: pd.DataFrame, key: int) -> str:
    """The softmax of the key's score over the keys the query sees (its window's, if local)."""
    seen = table[~table["outside_window"]]  # the keys the softmax spreads over
    row, layer = table.loc[key], steps.layer
    scaled = float(row["scaled"])
    scores = seen["scaled"].to_numpy(dtype=np.float64)
    total = float(np.exp(scores).sum())
    exp_key = math.exp(scaled)
    hidden = len(table) - len(seen)
    values = {}
    if hidden:
        values = {
            "hidden": text.num("keys outside the window", hidden),
            "layer": text.num("layer", layer),
            "window": text.num("window", steps.window),
        }
    values |= {
        "exp": text.num("e^score", exp_key, ".4g"),
        "count": text.num("keys seen", len(seen)),
        "total": text.num("sum of e^score", total, ".4g"),
        "weight": text.num("weight", exp_key / total, ".3f"),
        "model_weight": text.num("model weight", float(row["weight"]), ".3f"),
    }
    return (
        _(
            "softmax: e^score = {exp}, over the sum of e^score of all {count} keys in its window "
            "(the other {hidden} get −∞: layer {layer} is local, a window of {window}), {total}: "
            "weight = {weight}, the model's own {model_weight}.",
            **values,
        )
        if hidden
        else _(
            "softmax: e^score = {exp}, over the sum of e^score of all {count} keys, {total}: "
            "weight = {weight}, the model's own {model_weight}.",
            **values,
        )
    )


def _weighted_sum(lesson: Lesson, steps, table, text: Text) -> tuple:
    """z, its largest term and what the other terms add (their sum's length and angle to that
    term), so that a z as long as its largest term reads as what it is."""
    top = int(table["contribution_norm"].idxmax())
    terms = steps.weighted_values[table.index.to_numpy()]  # [keys, dk] weight_j v_j
    term = terms[list(table.index).index(top)]
    rest = terms.sum(axis=0) - term
    cosine = float(rest @ term) / max(float(np.linalg.norm(rest) * np.linalg.norm(term)), 1e-30)
    angle = math.degrees(math.acos(min(1.0, max(-1.0, cosine))))
    values = {
        "d_k": text.num("d_k", steps.head_dim),
        "length": text.num("length of z", float(np.linalg.norm(steps.z)), ".3f"),
        "token": lesson.said(top),
        "term": text.num("largest term", float(table["contribution_norm"][top]), ".3f"),
        "others": text.num("other terms", len(table) - 1),
        "rest": text.num("length of the other terms' sum", float(np.linalg.norm(rest)), ".3f"),
        "angle": text.num("angle between them", angle, ".0f"),
    }
    across = abs(angle - 90) <= RIGHT_ANGLE_BAND
    said = (
        _(
            "The weighted sum of values: z = Σ weight × v, {d_k} numbers of length {length}. Its "
            "largest term, from {token}, has length {term} on its own; the other {others} terms "
            "add up to a vector of length {rest} at {angle}° to it: nearly at right angles, so "
            "they barely change its length."
        )
        if across
        else _(
            "The weighted sum of values: z = Σ weight × v, {d_k} numbers of length {length}. Its "
            "largest term, from {token}, has length {term} on its own; the other {others} terms "
            "add up to a vector of length {rest} at {angle}° to it."
        )
    )
    return sentence(said, **values)


ONE_QUERY = LessonStep(
    lambda: _("One query's attention"), attention_step, question=top_key_question
)
WEIGHT = LessonStep(lambda: _("How the weight is computed"), weight_step)
