"""The lesson's chapter on the heads: each head's own pattern, then what switching the attention
step's head off changes (what the heads move beside where they look: app.lesson.steps.moves)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from app.charts.ablation import output_change_chart, residual_cosine_chart
from app.i18n import _, localised
from app.lesson.asked import strongest_head
from app.lesson.text import ExplorerAt, Lesson, LessonStep, OpenIn, Step, Text, sentence
from app.page.figures import overview_figure
from app.page.layout import header
from app.runs import ablation_effect
from encoder.inspect.ablation import AblationEffect
from encoder.inspect.lesson import BROAD_ENTROPY, CLEAR_SHARE, head_roles
from encoder.inspect.predictions import Prediction


def _role_said(text: Text, role: str, r: pd.Series, target: str) -> str:
    """How many heads put more than half of their weight on a role's target, and the most."""
    whose = (role, header(role))
    value = text.num("share", float(r["value"]), ".1%", whose=whose)
    layer = text.num("layer", int(r["layer"]), whose=whose)
    head = text.num("head", int(r["head"]), whose=whose)
    count = int(r["heads"])
    clear = text.num("heads above half", count, whose=whose)
    if not count:
        return _(
            "No head puts more than half on {target}; the most, layer {layer}, head "
            "{head}, {value}.",
            target=target,
            layer=layer,
            head=head,
            value=value,
        )
    values = {"count": clear, "target": target, "layer": layer, "head": head}
    return (
        _(
            "{count} head puts more than half of its weight on {target}; the most, "
            "layer {layer}, head {head}, {value}.",
            value=value,
            **values,
        )
        if count == 1
        else _(
            "{count} heads put more than half of their weight on {target}; the most, "
            "layer {layer}, head {head}, {value}.",
            value=value,
            **values,
        )
    )


def _spread_said(lesson: Lesson, text: Text, roles: pd.DataFrame) -> pd.Series:
    """The broadest head against an even spread, and the clearest role's head (returned)."""
    n = lesson.n
    broad, broad_role = roles.loc["broad"], ("broad", header("broad"))
    text.say(
        _(
            "The broadest, layer {layer}, head {head}, has entropy {entropy} nats; an even "
            "spread over {count} tokens has ln n = {ln_n}.",
            layer=text.num("layer", int(broad["layer"]), whose=broad_role),
            head=text.num("head", int(broad["head"]), whose=broad_role),
            entropy=text.num("entropy", float(broad["value"]), ".2f", whose=broad_role),
            count=text.num("n", n),
            ln_n=text.num("ln n", math.log(n), ".2f"),
        )
    )
    even = text.num("even spread 1/n", 1 / n, ".1%")
    shares = roles.drop(index="broad")
    clearest = shares["value"].astype(float).idxmax()
    best = shares.loc[clearest]
    if lesson.random:
        times = text.num("largest share over 1/n", float(best["value"]) * n, ".1f")
        text.say(
            _(
                "With random weights no head has learned a role: the largest of these shares is "
                "{times} times the {even} of an even spread. Trained models grow previous- and "
                "next-token heads, heads that park on [CLS] or [SEP] when they have nothing to "
                "do, and broad heads that average.",
                times=times,
                even=even,
            )
        )
    else:
        text.say(_("For comparison, an even spread gives each token {even}.", even=even))
    return best


def heads_step(lesson: Lesson) -> Step:
    text, n = Text(), lesson.n
    roles = head_roles(lesson.metrics, n).set_index("role")
    total = text.num("heads in all", lesson.cfg.num_layers * lesson.cfg.num_heads)
    text.say(
        _(
            "Each of the {count} heads has its own pattern. Read from the head metrics of this "
            "{unit}:",
            count=total,
            unit=lesson.unit,
        )
    )
    where = {
        "previous token": _("the token just before"),
        "next token": _("the token just after"),
        "first token": lesson.end_name("first"),
        "last token": lesson.end_name("last"),
    }
    for role, target in where.items():
        text.say(_role_said(text, role, roles.loc[role], target))
    best = _spread_said(lesson, text, roles)
    table = roles.reset_index()[["role", "layer", "head", "value", "even", "heads"]]
    above = _(
        "heads above {share} (broad: {broad} ln n)",
        share=localised(f"{CLEAR_SHARE:g}"),
        broad=localised(f"{BROAD_ENTROPY:g}"),
    )
    table = table.rename(columns={"heads": above})
    figure = overview_figure(lesson.run, lesson.sentence, stretch=lesson.random)
    layer, head = int(best["layer"]), int(best["head"])
    return Step(
        text,
        figures=[("lesson_overview", figure)],
        tables=[(_("The head that plays each role most"), table)],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
        explorer=ExplorerAt("lesson_overview", layer, head, "heads"),
    )


def _switch_off_said(lesson: Lesson, text: Text, layer: int, head: int) -> str:
    """Which head the step switches off, and what stays as it was."""
    values = {"layer": text.num("layer", layer), "head": text.num("head", head)}
    return (
        _(
            "Switch off layer {layer}, head {head}, the head whose absence changes the output "
            "most, and run the {unit} again: its output is zeroed, so nothing before block "
            "{layer} changes.",
            unit=lesson.unit,
            **values,
        )
        if layer
        else _(
            "Switch off layer {layer}, head {head}, the head whose absence changes the output "
            "most, and run the {unit} again: its output is zeroed, so the embeddings stay as "
            "they were.",
            unit=lesson.unit,
            **values,
        )
    )


def ablation_step(lesson: Lesson) -> Step:
    """Switching off the head whose absence changes the output most: the question's answer."""
    text, run, n = Text(), lesson.run, lesson.n
    q, s = lesson.query, lesson.sentence
    effects = lesson.head_effects
    layer, head = int(effects["layer"].iloc[0]), int(effects["head"].iloc[0])
    effect = ablation_effect(run, ((layer, head),))
    text.say(_switch_off_said(lesson, text, layer, head))
    text.say(_head_off_against(lesson, effects, text))
    change = effect.output_change[s, :n]
    cosine = effect.output_cosine[s, :n]
    text.say(
        *sentence(
            _(
                "At the model's output, {query} changes by {change} (cosine {cosine}); the mean "
                "cosine over the {unit} is {mean}."
            ),
            query=lesson.query_said(text),
            change=text.num("query change", float(change[q]), ".1%"),
            cosine=text.num("query cosine", float(cosine[q]), ".4f"),
            unit=lesson.unit,
            mean=text.num("mean cosine", float(np.mean(cosine)), ".4f"),
        )
    )
    _spread_of_change(lesson, text, effect, layer, change)
    stream = residual_cosine_chart(
        effect.residual_cosine[:, s, :n],
        effect.mean_residual_cosine[:, s],
        lesson.tokens,
        title=_(
            "Without layer {layer}, head {head}: cosine of each token's stream with vs without",
            layer=layer,
            head=head,
        ),
    )
    return Step(
        text,
        figures=[
            ("lesson_ablation", output_change_chart(change, cosine, lesson.tokens)),
            ("lesson_ablation_stream", stream),
        ],
        links=[OpenIn("Attention", {"layer": layer, "head": head, "ablate": f"{layer}.{head}"})],
        uses_query=True,
    )


def _spread_of_change(
    lesson: Lesson, text: Text, effect: AblationEffect, layer: int, change: np.ndarray
) -> None:
    """Where the change goes: the token moved most, the later heads, the sentence embedding."""
    s, n = lesson.sentence, lesson.n
    most = int(np.nanargmax(change))
    text.say(
        *sentence(
            _("The token that moved most: {token} (position {position}), by {change}."),
            token=lesson.said(most),
            position=text.num("most moved position", most),
            change=text.num("most moved change", float(change[most]), ".1%"),
        )
    )
    if layer < lesson.cfg.num_layers - 1:
        moved = effect.head_changes(s, n).iloc[0]
        text.say(
            _(
                "Later heads read the changed stream, so their attention moves: most, layer "
                "{layer}, head {head}, which sends {share} of its attention elsewhere.",
                layer=text.num("moved layer", int(moved["layer"])),
                head=text.num("moved head", int(moved["head"])),
                share=text.num("moved share", float(moved["moved"]), ".1%"),
            )
        )
    else:
        text.say(_("It is in the last layer, so no later head can change."))
    if lesson.kind == "pretrained":
        text.say(
            _(
                "The sentence embedding (the mean of the outputs) keeps a cosine of {cosine}.",
                cosine=text.num("sentence cosine", float(effect.sentence_cosine[s]), ".4f"),
            )
        )
    if lesson.random:
        text.say(
            _(
                "With random weights the head carried no skill: what changes is its random "
                "share of the sum. In a trained model, switching off a head with a role can "
                "break what it did."
            )
        )


def _head_off_against(lesson: Lesson, effects, text: Text) -> str:
    """The step's head against the others and the attention step's head, in the answer's words."""
    change = effects.set_index(["layer", "head"])["change"]
    values = {
        "change": text.num("mean change", float(effects["change"].iloc[0]), ".1%"),
        "count": text.num("heads in all", len(effects)),
        "median": text.num("median head's change", float(effects["change"].median()), ".1%"),
    }
    own = (lesson.layer, lesson.head)
    if own == tuple(int(v) for v in effects[["layer", "head"]].iloc[0]):
        return _(
            "Alone, it changes the output by {change} on average over the tokens, the most of "
            "the {count} heads (the median head: {median}). It is also the head of the attention "
            "step.",
            **values,
        )
    return _(
        "Alone, it changes the output by {change} on average over the tokens, the most of the "
        "{count} heads (the median head: {median}); the head of the attention step, layer "
        "{layer}, head {head}, changes it by {own}.",
        layer=text.num("attention step's layer", lesson.layer),
        head=text.num("attention step's head", lesson.head),
        own=text.num("attention step's head's change", float(change[own]), ".1%"),
        **values,
    )


def strongest_head_question(lesson: Lesson) -> Prediction:
    """Which head, switched off, changes the model's output most (the step then switches it
    off)."""
    return strongest_head(lesson.head_effects)


HEADS_DIFFER = LessonStep(lambda: _("Heads differ"), heads_step)
HEAD_OFF = LessonStep(
    lambda: _("Switching a head off"), ablation_step, question=strongest_head_question
)
