"""The lesson's chapter on the heads: each head's own pattern, what switching the attention
step's head off changes, and what the heads move beside where they look."""

from __future__ import annotations

import math

import numpy as np

from app.charts.ablation import output_change_chart, residual_cosine_chart
from app.charts.heads import norm_weighted_figure
from app.i18n import _, localised
from app.lesson.asked import strongest_head
from app.lesson.text import ExplorerAt, Lesson, LessonStep, OpenIn, Step, Text, sentence
from app.page import readings
from app.page.figures import head_figure, overview_figure
from app.page.layout import header
from app.runs import ablation_effect
from encoder.inspect import moves
from encoder.inspect.lesson import BROAD_ENTROPY, CLEAR_SHARE, head_roles
from encoder.inspect.moves import MOVES_LITTLE
from encoder.inspect.predictions import Prediction
from encoder.inspect.token_kinds import CLS, SEP, SINK_KINDS, token_kind


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
        r, whose = roles.loc[role], (role, header(role))
        value = text.num("share", float(r["value"]), ".1%", whose=whose)
        layer = text.num("layer", int(r["layer"]), whose=whose)
        head = text.num("head", int(r["head"]), whose=whose)
        count = int(r["heads"])
        clear = text.num("heads above half", count, whose=whose)
        if count:
            values = {"count": clear, "target": target, "layer": layer, "head": head}
            text.say(
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
        else:
            text.say(
                _(
                    "No head puts more than half on {target}; the most, layer {layer}, head "
                    "{head}, {value}.",
                    target=target,
                    layer=layer,
                    head=head,
                    value=value,
                )
            )
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


def ablation_step(lesson: Lesson) -> Step:
    """Switching off the head whose absence changes the output most: the question's answer."""
    text, run, n = Text(), lesson.run, lesson.n
    q, s = lesson.query, lesson.sentence
    effects = lesson.head_effects
    layer, head = int(effects["layer"].iloc[0]), int(effects["head"].iloc[0])
    effect = ablation_effect(run, ((layer, head),))
    values = {"layer": text.num("layer", layer), "head": text.num("head", head)}
    text.say(
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


def moves_step(lesson: Lesson) -> Step:
    """Weights are not the whole story: what each head moves (Kobayashi et al. 2020)."""
    text, run, s, n = Text(), lesson.run, lesson.sentence, lesson.n
    shares = moves.sink_shares(run.trace, run.model(), run.tokens, sentence=s)
    shares["sinks"] = shares[list(SINK_KINDS)].sum(axis=1)
    raw = shares[shares["reading"] == moves.WEIGHT].reset_index(drop=True)
    moved = shares[shares["reading"] == moves.NORM_WEIGHTED].reset_index(drop=True)
    total = text.num("heads in all", len(raw))
    if float(raw["sinks"].max()) == 0:  # a toy task's sequences: no [CLS], [SEP], punctuation
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
    if moved_share < MOVES_LITTLE * weight_share:
        said = _(
            "Each key hands over weight × f(key), f being the head's value projection and its "
            "part of the output projection. Count the size of that instead of the weight alone "
            "and the share that comes from {opening}, {closing} and punctuation is {moved}, less "
            "than the {weight} of the weight: part of that weight is parked on tokens whose "
            "f(key) is short, and moves little.",
            **values,
        )
    elif moved_share > weight_share / MOVES_LITTLE:
        said = _(
            "Each key hands over weight × f(key), f being the head's value projection and its "
            "part of the output projection. Count the size of that instead of the weight alone "
            "and the share that comes from {opening}, {closing} and punctuation is {moved}, more "
            "than the {weight} of the weight: these tokens' f(key) is long.",
            **values,
        )
    else:
        said = _(
            "Each key hands over weight × f(key), f being the head's value projection and its "
            "part of the output projection. Count the size of that instead of the weight alone "
            "and the share that comes from {opening}, {closing} and punctuation is {moved}, "
            "about the {weight} of the weight: f(key) is about as long there as elsewhere.",
            **values,
        )
    text.say(said)
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


HEADS_DIFFER = LessonStep(lambda: _("Heads differ"), heads_step)
HEAD_OFF = LessonStep(
    lambda: _("Switching a head off"), ablation_step, question=strongest_head_question
)
MOVES = LessonStep(lambda: _("Weights are not the whole story"), moves_step)
