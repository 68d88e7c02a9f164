"""The lesson's attention chapter: one query's attention (the strongest link from the lesson's
token, over every layer and head), then how that weight is computed (q·k, ÷ √d_k, softmax, the
weighted sum of values)."""

from __future__ import annotations

import math

import numpy as np

from app.charts.steps import softmax_comparison
from app.lesson.text import ExplorerAt, Lesson, LessonStep, OpenIn, Step, Text
from app.views.figures import head_figure
from encoder.inspect import predictions
from encoder.inspect.lesson import MIN_DISTANCE, is_pronoun, is_special
from encoder.inspect.predictions import Prediction

LINK_ROWS = 10  # rows of the attention step's table shown: the chosen link and runners-up


def _why_query(lesson: Lesson) -> str:
    if lesson.chosen_query is not None:
        return "you chose it"
    if is_pronoun(lesson.tokens[lesson.query]):
        return "it is the sentence's last pronoun"
    if lesson.kind == "task":
        return "it is the sequence's last symbol"
    return f"it is the {lesson.unit}'s last content token"


def attention_step(lesson: Lesson) -> Step:
    text, links = Text(), lesson.links
    layer, head, key = lesson.layer, lesson.head, lesson.key
    cfg, n = lesson.cfg, lesson.n
    weight = text.num("weight", float(links.chosen["weight"]), ".3f")
    text.say("The query is ", *lesson.query_said(text), f": {_why_query(lesson)}.")
    specials = any(is_special(token) for token in lesson.tokens)
    rule = {
        "content": (
            (
                f"a content token (not {lesson.end_name('first')}, {lesson.end_name('last')} or "
                "punctuation)"
                if specials
                else "a token"
            )  # fmt: skip
            + f" at least {text.num('minimum distance', MIN_DISTANCE)} positions away"
        ),
        "other": "another token (none is both content and far enough)",
        "self": "itself (it is the only token)",
    }[links.rule]
    text.say(
        f"Over all {text.num('layers', cfg.num_layers)} layers x "
        f"{text.num('heads', cfg.num_heads)} heads, its largest weight on {rule} is in "
        f"layer {text.num('layer', layer)}, head {text.num('head', head)}: {weight} on ",
        lesson.said(key),
        f" (position {text.num('key position', key)}).",
    )
    table = links.table
    other = table[table["key"] != key]
    if len(other):
        row = other.iloc[0]
        runner_up = text.num("runner-up layer", int(row["layer"]))
        text.say(
            f"The strongest link to a different token: layer {runner_up}, "
            f"head {text.num('runner-up head', int(row['head']))} gives "
            f"{text.num('runner-up weight', float(row['weight']), '.3f')} to ",
            lesson.said(int(row["key"])),
            f" (position {text.num('runner-up key position', int(row['key']))}).",
        )
    even = text.num("even spread 1/n", 1 / n, ".3f")
    text.say(f"An even spread over the {text.num('n', n)} tokens would give each {even}.")
    if cfg.is_local(layer):
        half = cfg.attention_window // 2
        seen = min(n - 1, lesson.query + half) - max(0, lesson.query - half) + 1
        spread = text.num("even spread over the window", 1 / seen, ".3f")
        text.say(
            f"But layer {text.num('layer', layer)} is local: this query sees only the "
            f"{text.num('keys in the window', seen)} keys within "
            f"{text.num('half window', half)} positions of it (the others get no weight), and an "
            f"even spread over them would give each {spread}."
        )
    if lesson.random:
        text.say(
            "These weights are random: no head has learned where to look, so the strongest link "
            "is chance. A trained model such as MiniLM puts most of a row on a few tokens, and "
            "links a pronoun to the noun it stands for."
        )
    figure = head_figure(lesson.run, lesson.sentence, layer, head, lesson.random)
    return Step(
        text,
        figures=[("lesson_head", figure)],
        tables=[
            (
                "The chosen link, then the runners-up (one row per head; positions from 0)",
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
    return predictions.top_key(attention, lesson.tokens, lesson.query, lesson.layer, lesson.head)


def weight_step(lesson: Lesson) -> Step:
    text = Text()
    layer, head, key, q = lesson.layer, lesson.head, lesson.key, lesson.query
    steps = lesson.run.attention_steps(lesson.sentence, layer, head, q)
    table = steps.table[~steps.table["padding"]]
    seen = table[~table["outside_window"]]  # the keys the softmax spreads over
    row = table.loc[key]
    dk = steps.head_dim
    rotary = (
        ", then turns q and every k by its position (RoPE)" if steps.rotated_q is not None else ""
    )
    text.say(
        f"q·k: layer {text.num('layer', layer)}, head {text.num('head', head)} turns ",
        lesson.said(q),
        " into a query vector q and every token into a key vector k, each "
        f"d_k = {text.num('d_k', dk)} numbers{rotary}. For ",
        lesson.said(key),
        f", q·k = {text.num('q·k', float(row['q_dot_k']), '.3f')}.",
    )
    root = text.num("sqrt d_k", math.sqrt(dk), ".3f")
    scaled = float(row["scaled"])
    text.say(
        f"÷ √d_k: dividing by {root} gives the score {text.num('score', scaled, '.3f')}, so "
        "that scores do not grow with the size of the head."
    )
    scores = seen["scaled"].to_numpy(dtype=np.float64)
    total = float(np.exp(scores).sum())
    exp_key = math.exp(scaled)
    hidden = len(table) - len(seen)
    window = (
        f" in its window (the other {text.num('keys outside the window', hidden)} get −∞: "
        f"layer {text.num('layer', layer)} is local, a window of "
        f"{text.num('window', steps.window)})"
        if hidden
        else ""
    )
    text.say(
        f"softmax: e^score = {text.num('e^score', exp_key, '.4g')}, over the sum of e^score "
        f"of all {text.num('keys seen', len(seen))} keys{window}, "
        f"{text.num('sum of e^score', total, '.4g')}: "
        f"weight = {text.num('weight', exp_key / total, '.3f')}, the model's own "
        f"{text.num('model weight', float(row['weight']), '.3f')}."
    )
    top = int(table["contribution_norm"].idxmax())
    text.say(
        f"The weighted sum of values: z = Σ weight × v, {text.num('d_k', dk)} numbers of length "
        f"{text.num('length of z', float(np.linalg.norm(steps.z)), '.3f')}; its largest term, "
        "from ",
        lesson.said(top),
        ", has length "
        f"{text.num('largest term', float(table['contribution_norm'][top]), '.3f')} on its own.",
    )
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
        tables=[("Every key's score and weight for this query", shown)],
        links=[lesson.attention_steps_link()],
        uses_query=True,
    )


ONE_QUERY = LessonStep("One query's attention", attention_step, question=top_key_question)
WEIGHT = LessonStep("How the weight is computed", weight_step)
