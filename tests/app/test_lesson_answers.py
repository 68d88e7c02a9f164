"""A lesson answer and the text and figures beside it are about the same thing, in the same words
and numbers (issue 50, item 4), on random weights and on MiniLM: the head switched off is the
question's answer, the feed-forward answer counts the block the text counts, a skipped pair says
so once, the weighted sum says why z can be as long as its largest term, step 12's title is true
of the head it shows; the lesson's tables write whole numbers as its text does; quotation marks
are each language's."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

from app.i18n import quoted, speak_now
from app.lesson.page import _rounded
from app.lesson.steps.attention import ONE_QUERY, WEIGHT
from app.lesson.steps.block import FEED_FORWARD, LAYERNORM
from app.lesson.steps.heads import HEAD_OFF
from app.lesson.steps.training import TRAIN_ONE
from app.lesson.text import Lesson
from app.run_cache import run_for
from app.sources import built_in, pretrained_config
from encoder import hooks
from tests.app.lesson_runs import our_text, random_run
from tests.shared import SENTENCE

NUMBER = r"(-?\d[\d,]*(?:\.\d+)?)"


@pytest.fixture(scope="module", params=["pretrained", "random"])
def lesson(request) -> Lesson:
    if request.param == "pretrained":
        cfg = pretrained_config()
        run = run_for(cfg, built_in("pretrained", cfg), "cpu", [SENTENCE], None)
    else:
        run = random_run("pre", [SENTENCE])
    return Lesson(run, 0)


def said(lesson: Lesson, listed) -> str:
    return " ".join(our_text(paragraph) for paragraph in listed.build(lesson).text.paragraphs)


def test_the_head_switched_off_is_the_questions_answer(lesson) -> None:
    run, n = lesson.run, lesson.n
    base = run.trace.output[0, :n].double()
    changes = {}
    for layer in range(run.cfg.num_layers):  # every head switched off alone, recomputed here
        for head in range(run.cfg.num_heads):
            off = run.heads_off(((layer, head),)).trace.output[0, :n].double()
            changes[layer, head] = ((off - base).norm(dim=-1) / base.norm(dim=-1)).mean().item()
    layer, head = max(changes, key=changes.get)
    asked = HEAD_OFF.question(lesson)
    assert asked.truth == f"layer {layer}, head {head}"
    step = HEAD_OFF.build(lesson)
    assert (step.text.values["layer"], step.text.values["head"]) == (layer, head)
    stream = dict(step.figures)["lesson_ablation_stream"]
    assert stream.layout.title.text.startswith(f"Without layer {layer}, head {head}:")
    text = said(lesson, HEAD_OFF)
    assert f"{100 * changes[layer, head]:.1f}%" in text  # the answer's number, in the text
    assert f"{100 * changes[layer, head]:.1f}%" in asked.explain("")


def test_the_feed_forward_answer_counts_what_the_text_counts(lesson) -> None:
    layer, n = lesson.layer, lesson.n
    pre = lesson.run.trace[hooks.block(layer).mlp.pre][0, :n].double()  # [n, F]
    relu = (pre <= 0).double().mean().item()
    gelu = (torch.nn.functional.gelu(pre.float()) == 0).double().mean().item()
    asked = FEED_FORWARD.question(lesson)
    assert asked.question.startswith(f"In block {layer}, ")
    explained, text = asked.explain(""), said(lesson, FEED_FORWARD)
    assert f"In block {layer}, " in text
    for name, share in (("ReLU", relu), ("GELU", gelu)):
        (shown,) = re.findall(rf"in block {layer}, {name} sets {NUMBER}% of", explained)
        assert float(shown) == pytest.approx(100 * share, abs=0.06)
        assert f"{shown}%" in text, (name, shown, text)  # the same number, the same block
    assert f"{pre.numel():,} values" in explained and f"{pre.numel():,} values" in text


@pytest.mark.parametrize("listed", [LAYERNORM, FEED_FORWARD], ids=["step 8", "step 9"])
def test_a_skipped_pair_says_so_once(lesson, listed) -> None:
    explained = listed.question(lesson).explain("")
    assert explained.count("You skipped") == 1, explained
    sentences = [s.strip() for s in re.split(r"(?<=[.;])\s", explained) if s.strip()]
    assert len(sentences) == len(set(sentences)), explained


def test_the_layernorm_answer_writes_the_texts_numbers(lesson) -> None:
    text, explained = said(lesson, LAYERNORM), LAYERNORM.question(lesson).explain("")
    own = "pre-norm" if lesson.cfg.norm_first else "post-norm"
    (first, last) = re.findall(
        rf"this {own} run the stream's mean norm goes from {NUMBER} at the embeddings to "
        rf"{NUMBER} after",
        explained,
    )[0]
    assert f"goes from {first} after the embeddings to {last} after" in text


def test_the_weighted_sum_says_what_the_other_terms_add(lesson) -> None:
    steps = lesson.run.attention_steps(lesson.sentence, lesson.layer, lesson.head, lesson.query)
    terms = steps.weighted_values[: lesson.n].astype(np.float64)  # [keys, dk]
    top = int(np.linalg.norm(terms, axis=-1).argmax())
    rest = terms.sum(0) - terms[top]
    angle = math.degrees(
        math.acos(rest @ terms[top] / np.linalg.norm(rest) / np.linalg.norm(terms[top]))
    )
    text = said(lesson, WEIGHT)
    length, others, rest_length, shown_angle = re.findall(
        rf"has length {NUMBER} on its own; the other (\d+) terms add up to a vector of length "
        rf"{NUMBER} at {NUMBER}°",
        text,
    )[0]
    assert float(length) == pytest.approx(np.linalg.norm(terms[top]), abs=1e-3)
    assert int(others) == lesson.n - 1
    assert float(rest_length) == pytest.approx(np.linalg.norm(rest), abs=1e-3)
    assert float(shown_angle) == pytest.approx(angle, abs=0.5)
    assert ("nearly at right angles" in text) == (abs(angle - 90) <= 10)


def test_step_12s_title_is_true_of_the_head_it_shows(lesson) -> None:
    step, n = TRAIN_ONE.build(lesson), lesson.n
    shown = dict(step.figures)["lesson_sharpest"]
    layer, head = (int(v) for v in re.findall(r"\d+", shown.layout.title.text)[:2])
    weights = lesson.run.attention[layer, 0, head, :n, :n]
    patterned = float(weights.max(-1).mean()) > 2 / n  # twice an even spread's 1/n
    claims_none = "no pattern" in TRAIN_ONE.title.lower()
    assert not (patterned and claims_none), (TRAIN_ONE.title, float(weights.max(-1).mean()))


def test_the_lessons_tables_write_whole_numbers_as_its_text_does() -> None:
    table = pd.DataFrame({"component": ["all"], "params": [11_720_448], "share": [0.5]})
    html = _rounded(table).to_html()
    assert "11,720,448" in html and "11720448" not in html
    speak_now("es")
    try:
        assert "11.720.448" in _rounded(table).to_html()
    finally:
        speak_now(None)


@pytest.mark.parametrize(
    "language, marks", [("en", "“”"), ("es", "«»"), ("zh", "“”"), ("ar", "”“")]
)
def test_a_quote_takes_its_languages_marks(language, marks) -> None:
    speak_now(language)
    try:
        said = quoted("it")
    finally:
        speak_now(None)
    assert said[0] == marks[0] and said[-1] == marks[1] and "it" in said


def test_the_answer_quotes_a_token_as_the_text_beside_it_does(lesson) -> None:
    token = lesson.tokens[lesson.query]
    asked = ONE_QUERY.question(lesson)
    assert f"“{token}” (position {lesson.query})" in asked.question  # as the step's text says it
    assert f"“{token}” (position {lesson.query})" in asked.explain("")
