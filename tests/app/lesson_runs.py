"""Runs the lesson's tests and the claims test share: random weights pre- or post-norm with the
sidebar's default architecture (or with ModernBERT's choices: RoPE, GeGLU, a local window, no
biases), a model trained here on a toy task; and a paragraph's own text."""

from __future__ import annotations

import functools

from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.lesson.text import Typed
from app.run_cache import run_for
from app.settings import ARCHITECTURE_KEYS
from app.sources import ModelSource, built_in
from encoder.tasks.tasks import example_sequence
from encoder.train.config import TrainConfig
from encoder.train.trainer import train

# ModernBERT's architecture choices, as the sidebar's keys say them: rotary positions, a gated
# GELU feed-forward, a local window (global every third layer), no biases
MODERN = dict(
    positional="rope", activation="geglu", window=4, global_every=3, bias="off", norm_bias="off"
)


def random_run(norm: str, sentences: list[str], **architecture):
    """Random weights with the sidebar's default architecture (changed by `architecture`, the
    sidebar's keys), pre- or post-norm."""
    values = {name: DEFAULTS[name] for name in (*ARCHITECTURE_KEYS, "seed")}
    return run_for(
        cfg := random_config({**values, "norm": norm, **architecture}),
        built_in("random", cfg),
        "cpu",
        sentences,
        None,
    )


@functools.cache
def trained_run():
    """A model trained here on a toy task (reverse, 2 layers, briefly), run on one sequence."""
    model = train(
        TrainConfig(task="reverse", steps=40, held_out_examples=50).with_model(
            d_model=32, num_layers=2
        )
    ).task_model()
    source = ModelSource("trained-lesson-test", model.tokenizer, model.check_text, model.encoder,
                         model)  # fmt: skip
    sequence = example_sequence(model.seq_len, model.vocab)
    return run_for(model.cfg, source, "cpu", [sequence], None)


def our_text(paragraph) -> str:
    return " ".join(part for part in paragraph if not isinstance(part, Typed))
