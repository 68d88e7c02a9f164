"""The lesson's last chapter, training: random weights have no pattern (train a tiny model and
watch a head form), then the pre- vs post-norm training race."""

from __future__ import annotations

import math
from dataclasses import replace

from app.charts.diagram import block_diagram
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text
from app.settings import architecture_values
from app.views.figures import head_figure
from encoder.core import block
from encoder.core.options import placement_of
from encoder.train.duration import duration_text, training_seconds
from encoder.train.jobs import comparison_configs, comparison_warmup
from encoder.train.presets import TRAINING_PRESETS
from encoder.train.trainer import TrainConfig

TINY_PRESET = "default"  # the Training view's preset for "train a tiny model"
RACE_PRESET = "pre vs post: deep, high lr"  # ... and for the pre- vs post-norm race


def _training_values(preset: str) -> dict[str, object]:
    """The URL values that open the Training view on a preset: random weights with the preset's
    architecture in the sidebar."""
    cfg = TrainConfig(**TRAINING_PRESETS[preset])
    return {"source": "random", **architecture_values(cfg.encoder_config()), "train_preset": preset}


def training_step(lesson: Lesson) -> Step:
    text, n = Text(), lesson.n
    metrics = lesson.metrics
    sharpest = int(metrics["max_weight"].idxmax())
    row = metrics.iloc[sharpest]
    layer, head = int(row["layer"]), int(row["head"])
    peak = text.num("sharpest head: mean largest weight", float(row["max_weight"]), ".3f")
    even = text.num("even spread 1/n", 1 / n, ".3f")
    who = f"layer {text.num('sharpest layer', layer)}, head {text.num('sharpest head', head)}"
    if lesson.random:
        text.say(
            f"These weights are random, and so is their attention: the sharpest head, {who}, "
            f"gives its favourite key only {peak} of a row on average, where an even spread "
            f"gives {even} and a head that has learned to pick one key gives it the whole row. "
            "Patterns are learned."
        )
    else:
        text.say(
            f"{lesson.model_title} is trained: its sharpest head, {who}, gives its "
            f"favourite key {peak} of a row on average, "
            f"{text.num('times an even spread', float(row['max_weight']) * n, '.1f')} times the "
            f"{even} of an even spread."
        )
    tiny = TrainConfig(**TRAINING_PRESETS[TINY_PRESET])
    text.say(
        f"Train a tiny model and watch a head form: {text.num('tiny layers', tiny.num_layers)} "
        f"layers x {text.num('tiny heads', tiny.num_heads)} heads learn the {tiny.task} task on "
        f"sequences of {text.num('tiny sequence length', tiny.seq_len)} digits in "
        f"{text.num('tiny steps', tiny.steps)} steps, "
        f"{text.num('tiny training time', training_seconds(tiny), '.0f')} s by the estimate. "
        "Press Train in the Training view; when it is done, open the trained model and come "
        "back to the Lesson: every step then reads the model you trained."
    )
    figure = head_figure(lesson.run, lesson.sentence, layer, head, lesson.random)
    return Step(
        text,
        figures=[("lesson_sharpest", figure)],
        links=[OpenIn("Training", _training_values(TINY_PRESET))],
    )


def race_step(lesson: Lesson) -> Step:
    text, cfg = Text(), lesson.cfg
    race = TrainConfig(**TRAINING_PRESETS[RACE_PRESET])
    runs = comparison_configs(race)
    placement = placement_of(cfg.norm_first)
    text.say(
        f"{lesson.model_title} is {placement}-norm. Pre-norm, x + f(LN(x)), leaves "
        "the residual stream a straight path from the loss back to every layer; post-norm, "
        "LN(x + f(x)), sends the gradient through a norm in every block, which makes deep "
        "models hard to start training without a warmup."
    )
    text.say(
        f"The race trains one {text.num('race layers', race.num_layers)}-layer model on the "
        f"{race.task} task both ways, at learning rate {text.num('learning rate', race.lr, 'g')}, "
        f"with and without {text.num('warmup steps', comparison_warmup(race))} warmup steps: "
        f"{text.num('runs', len(runs))} runs of {text.num('race steps', race.steps)} steps, "
        f"{text.num('race time', duration_text(training_seconds(race, len(runs))))} here by the "
        "estimate."
    )
    chance = math.log(race.num_classes)
    text.say(
        f"Watch which losses leave ln {text.num('classes', race.num_classes)} = "
        f"{text.num('chance loss', chance, '.2f')}, the loss of guessing, and which stay there."
    )
    other = not cfg.norm_first
    text.say(
        f"The figure shows this model's block as it would be {placement_of(other)}-norm, with the "
        "same shapes."
    )
    B, T = lesson.run.input_ids.shape
    # the other placement; post-norm has a norm after every attention, block 0's too
    flipped = replace(
        cfg, norm_first=other, first_attention_norm=cfg.first_attention_norm or not other
    )
    diagram = block_diagram(block.block_ops(flipped, 0, B, T), flipped)
    return Step(
        text,
        figures=[("lesson_other_block", diagram)],
        links=[OpenIn("Training", _training_values(RACE_PRESET))],
    )


TRAIN_ONE = LessonStep("Random weights have no pattern: train one", training_step)
RACE = LessonStep("The pre- vs post-norm training race", race_step)
