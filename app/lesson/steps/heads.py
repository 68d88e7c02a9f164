"""The lesson's chapter on the heads: each head's own pattern, what switching the attention
step's head off changes, and what the heads move beside where they look."""

from __future__ import annotations

import math

import numpy as np

from app.charts.ablation import output_change_chart, residual_cosine_chart
from app.charts.heads import norm_weighted_figure
from app.lesson.text import ExplorerAt, Lesson, LessonStep, OpenIn, Step, Text
from app.runs import ablation_effect
from app.views import readings
from app.views.figures import head_figure, overview_figure
from encoder.inspect import moves, predictions
from encoder.inspect.lesson import CLEAR_SHARE, head_roles
from encoder.inspect.moves import MOVES_LITTLE
from encoder.inspect.predictions import Prediction
from encoder.inspect.token_kinds import CLS, SEP, SINK_KINDS, token_kind


def heads_step(lesson: Lesson) -> Step:
    text, n = Text(), lesson.n
    roles = head_roles(lesson.metrics, n).set_index("role")
    total = text.num("heads in all", lesson.cfg.num_layers * lesson.cfg.num_heads)
    text.say(
        f"Each of the {total} heads has its own pattern. Read from the head metrics of this "
        f"{lesson.unit}:"
    )
    where = {
        "previous token": "the token just before",
        "next token": "the token just after",
        "first token": lesson.end_name("first"),
        "last token": lesson.end_name("last"),
    }
    for role, target in where.items():
        r = roles.loc[role]
        value = text.num(f"{role}: share", float(r["value"]), ".1%")
        who = (
            f"layer {text.num(f'{role}: layer', int(r['layer']))}, "
            f"head {text.num(f'{role}: head', int(r['head']))}"
        )
        count = int(r["heads"])
        clear = text.num(f"{role}: heads above half", count)
        if count:
            heads = f"{clear} head puts" if count == 1 else f"{clear} heads put"
            its = "its" if count == 1 else "their"
            text.say(
                f"{heads} more than half of {its} weight on {target}; the most, {who}, {value}."
            )
        else:
            text.say(f"No head puts more than half on {target}; the most, {who}, {value}.")
    broad = roles.loc["broad"]
    text.say(
        f"The broadest, layer {text.num('broad: layer', int(broad['layer']))}, head "
        f"{text.num('broad: head', int(broad['head']))}, has entropy "
        f"{text.num('broad: entropy', float(broad['value']), '.2f')} nats; an even spread over "
        f"{text.num('n', n)} tokens has ln n = {text.num('ln n', math.log(n), '.2f')}."
    )
    even = text.num("even spread 1/n", 1 / n, ".1%")
    shares = roles.drop(index="broad")
    clearest = shares["value"].astype(float).idxmax()
    best = shares.loc[clearest]
    if lesson.random:
        times = text.num("largest share over 1/n", float(best["value"]) * n, ".1f")
        text.say(
            f"With random weights no head has learned a role: the largest of these shares is "
            f"{times} times the {even} of an even spread. Trained models grow previous- and "
            "next-token heads, heads that park on [CLS] or [SEP] when they have nothing to do, "
            "and broad heads that average."
        )
    else:
        text.say(f"For comparison, an even spread gives each token {even}.")
    table = roles.reset_index()[["role", "layer", "head", "value", "even", "heads"]]
    table = table.rename(columns={"heads": f"heads above {CLEAR_SHARE:g} (broad: 0.9 ln n)"})
    figure = overview_figure(lesson.run, lesson.sentence, stretch=lesson.random)
    layer, head = int(best["layer"]), int(best["head"])
    return Step(
        text,
        figures=[("lesson_overview", figure)],
        tables=[("The head that plays each role most", table)],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
        explorer=ExplorerAt("lesson_overview", layer, head, "heads"),
    )


def ablation_step(lesson: Lesson) -> Step:
    text, run, n = Text(), lesson.run, lesson.n
    layer, head, q, s = lesson.layer, lesson.head, lesson.query, lesson.sentence
    effect = ablation_effect(run, ((layer, head),))
    text.say(
        f"Switch off layer {text.num('layer', layer)}, head {text.num('head', head)}, the head of "
        f"the attention step, and run the {lesson.unit} again: its output is zeroed, so "
        + (
            f"nothing before block {text.num('layer', layer)} changes."
            if layer
            else "the embeddings stay as they were."
        )
    )
    change = effect.output_change[s, :n]
    cosine = effect.output_cosine[s, :n]
    text.say(
        "At the model's output, ",
        *lesson.query_said(text),
        f" changes by {text.num('query change', float(change[q]), '.1%')} (cosine "
        f"{text.num('query cosine', float(cosine[q]), '.4f')}); the mean cosine over the "
        f"{lesson.unit} is {text.num('mean cosine', float(np.mean(cosine)), '.4f')}.",
    )
    most = int(np.nanargmax(change))
    text.say(
        "The token that moved most: ",
        lesson.said(most),
        f" (position {text.num('most moved position', most)}), by "
        f"{text.num('most moved change', float(change[most]), '.1%')}.",
    )
    if layer < lesson.cfg.num_layers - 1:
        moved = effect.head_changes(s, n).iloc[0]
        text.say(
            "Later heads read the changed stream, so their attention moves: most, layer "
            f"{text.num('moved layer', int(moved['layer']))}, head "
            f"{text.num('moved head', int(moved['head']))}, which sends "
            f"{text.num('moved share', float(moved['moved']), '.1%')} of its attention elsewhere."
        )
    else:
        text.say("It is in the last layer, so no later head can change.")
    if lesson.kind == "pretrained":
        text.say(
            "The sentence embedding (the mean of the outputs) keeps a cosine of "
            f"{text.num('sentence cosine', float(effect.sentence_cosine[s]), '.4f')}."
        )
    if lesson.random:
        text.say(
            "With random weights the head carried no skill: what changes is its random share of "
            "the sum. In a trained model, switching off a head with a role can break what it did."
        )
    stream = residual_cosine_chart(
        effect.residual_cosine[:, s, :n],
        effect.mean_residual_cosine[:, s],
        lesson.tokens,
        title=f"Without layer {layer}, head {head}: cosine of each token's stream with vs without",
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


def strongest_head_question(lesson: Lesson) -> Prediction:
    """Which head, switched off, changes the model's output most."""
    run = lesson.run
    effects = predictions.head_effects(
        run.trace, lambda head: run.heads_off((head,)).trace, lesson.sentence
    )
    return predictions.strongest_head(effects)


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
            f"{lesson.model_title}'s {lesson.unit}s have no [CLS], [SEP] or punctuation for a "
            "head to park its weight on. In MiniLM, much of the weight sits on [CLS] yet moves "
            "little: switch to MiniLM to see weight and what is moved part."
        )
        return Step(text, links=[OpenIn("Attention", {"layer": lesson.layer, "head": lesson.head})])
    # the sentence's own opening and closing tokens ([CLS] and [SEP], <s> and </s>, ...)
    opening, closing = (
        next((t for t in lesson.tokens if token_kind(t) == kind), kind) for kind in (CLS, SEP)
    )
    sinks_named = f"{opening}, {closing} and punctuation"
    over_half = text.num(
        "heads above half on the opening token", int((raw[CLS] > CLEAR_SHARE).sum())
    )
    text.say(
        f"A head's weights say where it looks, not what it takes. In this {lesson.unit}, "
        f"{over_half} of the {total} heads put more than half of their weight on {opening}. "
        f"Averaged over the heads, {text.num('weight on sinks', float(raw['sinks'].mean()), '.0%')}"
        f" of the weight goes to {sinks_named}."
    )
    weight_share, moved_share = float(raw["sinks"].mean()), float(moved["sinks"].mean())
    weighed = text.num("weight on sinks", weight_share, ".0%")
    if moved_share < MOVES_LITTLE * weight_share:
        why = (
            f"less than the {weighed} of the weight: part of that weight is parked on tokens "
            "whose f(key) is short, and moves little"
        )
    elif moved_share > weight_share / MOVES_LITTLE:
        why = f"more than the {weighed} of the weight: these tokens' f(key) is long"
    else:
        why = f"about the {weighed} of the weight: f(key) is about as long there as elsewhere"
    text.say(
        "Each key hands over weight × f(key), f being the head's value projection and its part "
        "of the output projection. Count the size of that instead of the weight alone and the "
        f"share that comes from {sinks_named} is "
        f"{text.num('moved from sinks', moved_share, '.0%')}, {why}."
    )
    best = int(raw["sinks"].idxmax())
    layer, head = int(raw.loc[best, "layer"]), int(raw.loc[best, "head"])
    head_weight, head_moved = float(raw.loc[best, "sinks"]), float(moved.loc[best, "sinks"])
    text.say(
        f"The most extreme: layer {text.num('sink layer', layer)}, head "
        f"{text.num('sink head', head)} puts "
        f"{text.num('sink head weight', head_weight, '.0%')} of its weight there, "
        + ("yet only " if head_moved < MOVES_LITTLE * head_weight else "and ")
        + f"{text.num('sink head moved', head_moved, '.0%')} of what it moves comes from there."
    )
    if lesson.random:
        sinks = sum(token_kind(token) in SINK_KINDS for token in lesson.tokens)
        text.say(
            "With random weights no head has learned to park its weight: an even spread would "
            f"give these {text.num('sink tokens', sinks)} tokens "
            f"{text.num('even spread on sinks', sinks / n, '.0%')}. Switch to MiniLM to see the "
            "two readings part."
        )
    tokens = run.padded_tokens[s]
    weights = head_figure(run, s, layer, head, stretch=False)
    moved_matrix = readings.norm_weighted_head(run, layer, s, head)
    title = f"Layer {layer}, head {head}: what is moved, ||weight x f(key)||"
    return Step(
        text,
        figures=[
            ("lesson_moves_weights", weights),
            ("lesson_moves_norms", norm_weighted_figure(moved_matrix, tokens, n, title)),
        ],
        links=[OpenIn("Attention", {"layer": layer, "head": head})],
    )


HEADS_DIFFER = LessonStep("Heads differ", heads_step)
HEAD_OFF = LessonStep("Switching that head off", ablation_step, question=strongest_head_question)
MOVES = LessonStep("Weights are not the whole story", moves_step)
