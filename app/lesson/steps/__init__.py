"""The lesson's steps, in order: each chapter's module (tokens, attention, heads and moves,
block, training, interventions, what it is for) declares its steps (app.lesson.text.LessonStep:
title, builder, question); the lesson lists them here, and the page, the handout and the step
count read this list."""

from __future__ import annotations

from app.lesson.steps import (
    attention,
    block,
    heads,
    interventions,
    meaning,
    moves,
    tokens,
    training,
)
from app.lesson.text import LessonStep

STEPS: tuple[LessonStep, ...] = (
    tokens.TOKENS,
    tokens.EMBEDDINGS,
    attention.ONE_QUERY,
    attention.WEIGHT,
    heads.HEADS_DIFFER,
    heads.HEAD_OFF,
    moves.MOVES,
    block.LAYERNORM,
    block.FEED_FORWARD,
    block.NUMPY_BLOCK,
    block.COST,
    training.TRAIN_ONE,
    training.RACE,
    interventions.DECIDING,
    meaning.MEANING,
)
TITLES = tuple(step.title for step in STEPS)
