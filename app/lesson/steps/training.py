"""The lesson's last chapter, training: attention patterns are learned (train a tiny model and
watch a head form), then the pre- vs post-norm training race."""

from __future__ import annotations

import math
from dataclasses import replace

from app.i18n import _, told
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text, placement_name
from app.page.figures import Drawn, head_figure
from app.page.training import training_link_values
from encoder.core import block
from encoder.train.duration import duration_text, training_seconds
from encoder.train.jobs import comparison_configs, comparison_warmup
from encoder.train.presets import TRAINING_PRESETS
from encoder.web import hosts
from encoder.web.block_diagram import block_diagram_data

TINY_PRESET = "default"  # the Training view's preset for "train a tiny model"
RACE_PRESET = "pre vs post: deep, high lr"  # ... and for the pre- vs post-norm race


def training_step(lesson: Lesson) -> Step:
    text, n = Text(), lesson.n
    metrics = lesson.metrics
    sharpest = int(metrics["max_weight"].idxmax())
    row = metrics.iloc[sharpest]
    layer, head = int(row["layer"]), int(row["head"])
    peak = text.num("sharpest head: mean largest weight", float(row["max_weight"]), ".3f")
    even = text.num("even spread 1/n", 1 / n, ".3f")
    values = {
        "layer": text.num("sharpest layer", layer),
        "head": text.num("sharpest head", head),
        "peak": peak,
        "even": even,
    }
    if lesson.random:
        text.say(
            _(
                "These weights are random, and so is their attention: the sharpest head, layer "
                "{layer}, head {head}, gives its favourite key only {peak} of a row on average, "
                "where an even spread gives {even} and a head that has learned to pick one key "
                "gives it the whole row. Patterns are learned.",
                **values,
            )
        )
    else:
        text.say(
            _(
                "{model} is trained: its sharpest head, layer {layer}, head {head}, gives its "
                "favourite key {peak} of a row on average, {times} times the {even} of an even "
                "spread.",
                model=lesson.model_title,
                times=text.num("times an even spread", float(row["max_weight"]) * n, ".1f"),
                **values,
            )
        )
    tiny = TRAINING_PRESETS[TINY_PRESET]
    text.say(
        _(
            "Train a tiny model and watch a head form: {layers} layers x {heads} heads learn the "
            "{task} task on sequences of {length} digits in {steps} steps, {seconds} s by the "
            "estimate. Press Train in the Training view; when it is done, open the trained model "
            "and come back to the Lesson: every step then reads the model you trained.",
            layers=text.num("tiny layers", tiny.model.num_layers),
            heads=text.num("tiny heads", tiny.model.num_heads),
            task=tiny.task,
            length=text.num("tiny sequence length", tiny.seq_len),
            steps=text.num("tiny steps", tiny.steps),
            seconds=text.num("tiny training time", training_seconds(tiny), ".0f"),
        )
    )
    figure = head_figure(lesson.run, lesson.sentence, layer, head, lesson.random)
    return Step(
        text,
        figures=[("lesson_sharpest", figure)],
        links=[OpenIn("Training", training_link_values(TINY_PRESET))],
    )


def race_step(lesson: Lesson) -> Step:
    text, cfg = Text(), lesson.cfg
    race = TRAINING_PRESETS[RACE_PRESET]
    runs = comparison_configs(race)
    text.say(
        _(
            "{model} is {placement}. Pre-norm, x + f(LN(x)), leaves the residual stream a "
            "straight path from the loss back to every layer; post-norm, LN(x + f(x)), sends the "
            "gradient through a norm in every block, which makes deep models hard to start "
            "training without a warmup.",
            model=lesson.model_title,
            placement=placement_name(cfg.norm_first),
        )
    )
    text.say(
        _(
            "The race trains one {layers}-layer model on the {task} task both ways, at learning "
            "rate {rate}, with and without {warmup} warmup steps: {runs} runs of {steps} steps, "
            "{time} here by the estimate.",
            layers=text.num("race layers", race.model.num_layers),
            task=race.task,
            rate=text.num("learning rate", race.lr, "g"),
            warmup=text.num("warmup steps", comparison_warmup(race)),
            runs=text.num("runs", len(runs)),
            steps=text.num("race steps", race.steps),
            time=text.num("race time", told(duration_text(training_seconds(race, len(runs))))),
        )
    )
    chance = math.log(race.num_classes)
    text.say(
        _(
            "Watch which losses leave ln {classes} = {loss}, the loss of guessing, and which stay "
            "there.",
            classes=text.num("classes", race.num_classes),
            loss=text.num("chance loss", chance, ".2f"),
        )
    )
    other = not cfg.norm_first
    text.say(
        _(
            "The figure shows this model's block as it would be {placement}, with the same shapes.",
            placement=placement_name(other),
        )
    )
    B, T = lesson.run.input_ids.shape
    # the other placement; post-norm has a norm after every attention, block 0's too
    flipped = replace(
        cfg, norm_first=other, first_attention_norm=cfg.first_attention_norm or not other
    )
    diagram = Drawn(hosts.DIAGRAM, block_diagram_data(block.block_ops(flipped, 0, B, T), flipped))
    return Step(
        text,
        figures=[("lesson_other_block", diagram)],
        links=[OpenIn("Training", training_link_values(RACE_PRESET))],
    )


TRAIN_ONE = LessonStep(lambda: _("Attention patterns are learned: train a model"), training_step)
RACE = LessonStep(lambda: _("The pre- vs post-norm training race"), race_step)
