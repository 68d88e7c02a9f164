"""The lesson's questions in this run's language: the encoder's predictions
(encoder.inspect.predictions) give each question's id, options and truth (what a class stores:
the same in every language); these give its text and explanation in this run's language (in
English, the encoder's own words), and the answers' display. No Streamlit: the lesson's chapters
(app.lesson.steps) build their questions here, and app.lesson.questions draws them."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pandas as pd

from app.i18n import _, localised, percent, quoted
from encoder.core.capture import Trace
from encoder.inspect import predictions
from encoder.inspect.norms import mean_norm_by_depth, residual_norms
from encoder.inspect.predictions import GROWS, SHRINKS, STAYS, Prediction

HEAD_LABEL = re.compile(r"layer (\d+), head (\d+)")


def head_text(label: str) -> str:
    """A head as an answer ("layer 2, head 1", the stored value) in this run's language."""
    found = HEAD_LABEL.fullmatch(label)
    if found is None:
        return label
    return _("layer {layer}, head {head}", layer=found[1], head=found[2])


def choice_text(choice: str) -> str:
    """A norm-growth answer (the stored value: GROWS, STAYS or SHRINKS) in this run's language."""
    return {GROWS: _("grows"), STAYS: _("stays about the same"), SHRINKS: _("shrinks")}.get(
        choice, choice
    )


def option_text(prediction: Prediction, option: str) -> str:
    """One answer as shown (a head, a choice in this run's language; a token as it is)."""
    if prediction.kind == "head":
        return head_text(option)
    if prediction.kind == "choice":
        return choice_text(option)
    return option


def _token_named(tokens: list[str], position: int) -> str:
    return _(
        "{token} (position {position})", token=quoted(str(tokens[position])), position=position
    )


def _two(value: float) -> str:
    return localised(f"{value:.2f}")


def top_key(
    attention: np.ndarray, tokens: list[str], query: int, layer: int, head: int
) -> Prediction:
    """predictions.top_key, said in this run's language."""
    asked = predictions.top_key(attention, tokens, query, layer, head)
    row = np.asarray(attention[layer, head, query], dtype=np.float64)  # [key]
    best = int(row.argmax())
    where = head_text(predictions.head_label(layer, head))
    q = _token_named(tokens, query)

    def explain(guess: str) -> str:
        truth = _(
            "in {head}, {query} gives its most attention, {weight}, to {key}",
            head=where,
            query=q,
            weight=_two(row[best]),
            key=_token_named(tokens, best),
        )
        picked = predictions._position(guess, len(tokens))
        if picked is None:
            return _("You skipped: {said}.", said=truth)
        if picked == best:
            return _("Right: {said}.", said=truth)
        ratio = row[best] / max(row[picked], 1e-12)
        return _(
            "Not quite: {said}; your {token} gets {weight}, {ratio}x less.",
            said=truth,
            token=quoted(str(tokens[picked])),
            weight=_two(row[picked]),
            ratio=localised(f"{ratio:.1f}"),
        )

    question = _("In {head}, which token does {query} attend to most?", head=where, query=q)
    return replace(asked, question=question, _explain=explain)


def strongest_head(effects: pd.DataFrame) -> Prediction:
    """predictions.strongest_head, said in this run's language."""
    asked = predictions.strongest_head(effects)
    in_order = effects.sort_values(["layer", "head"])
    change = {predictions.head_label(r.layer, r.head): r.change for r in in_order.itertuples()}
    truth = asked.truth
    median = float(effects["change"].median())

    def explain(guess: str) -> str:
        said = _(
            "switching off {head} changes the output by {change} on average over the tokens, the "
            "most of the {count} heads (the median head: {median})",
            head=head_text(truth),
            change=percent(change[truth], 1),
            count=len(change),
            median=percent(median, 1),
        )
        if guess not in change:
            return _("You skipped: {said}.", said=said)
        if guess == truth:
            return _("Right: {said}.", said=said)
        return _(
            "Not quite: {said}; your {head} changes it by {change}.",
            said=said,
            head=head_text(guess),
            change=percent(change[guess], 1),
        )

    question = _("Which head, switched off, changes the model's output most?")
    return replace(asked, question=question, _explain=explain)


def _zero_share_explain(trace: Trace, sentence: int, layer: int, activation: str):
    """A part's explanation: its numbers alone for "" (the pair says it was skipped)."""
    share, count = predictions.zero_share_of(trace, sentence, layer, activation)
    values = {
        "layer": layer,
        "share": localised(format(share, predictions.share_spec(share))),
        "count": localised(f"{count:,}"),
    }
    said = (
        _(
            "in block {layer}, ReLU sets {share} of the {count} values before the activation to "
            "exactly zero: it turns every negative input into exactly 0",
            **values,
        )
        if activation == "relu"
        else _(
            "in block {layer}, GELU sets {share} of the {count} values before the activation to "
            "exactly zero: GELU is exactly 0 only at an input of 0 and at inputs of {limit} or "
            "below, where float32 rounds x·Φ(x) to 0",
            limit=_two(predictions.gelu_zero_from()),
            **values,
        )
    )

    def explain(guess: str) -> str:
        picked = predictions._percent(guess)
        if picked is None:
            return said
        gap = picked - 100 * share
        points = localised(f"{abs(gap):.0f}")
        how = (
            _("spot on")
            if abs(gap) < 5
            else _("{points} points too high", points=points)
            if gap > 0
            else _("{points} points too low", points=points)
        )
        return _(
            "You said {guess}%, {how}: {said}.",
            guess=localised(f"{picked:g}"),
            how=how,
            said=said,
        )

    return explain


def zero_shares(trace: Trace, sentence: int, layer: int) -> Prediction:
    """predictions.zero_shares, said in this run's language."""
    asked = predictions.zero_shares(trace, sentence, layer)
    relu, gelu = (_zero_share_explain(trace, sentence, layer, name) for name in ("relu", "gelu"))
    return replace(
        asked,
        question=_(
            "In block {layer}, what share of the feed-forward values do ReLU, and GELU, set to "
            "exactly zero? (percent)",
            layer=layer,
        ),
        parts=(_("after ReLU"), _("after GELU")),
        _explain=_paired(relu, gelu),
    )


def _paired(first, second):
    """Two parts' explanations as one: "You skipped" said once where both were skipped."""

    def explain(guess: str) -> str:
        guesses = predictions.split_guess(guess, 2)
        if not any(guesses):
            return _("You skipped: {first}; {second}.", first=first(""), second=second(""))
        return " ".join(
            said(g) if g else _("You skipped: {said}.", said=said(""))
            for said, g in zip((first, second), guesses, strict=True)
        )

    return explain


def _norm_growth_explain(trace: Trace, sentence: int, norm_first: bool):
    norms = mean_norm_by_depth(residual_norms(trace), sentence)
    first, last = float(norms.iloc[0]), float(norms.iloc[-1])
    ratio = last / first
    truth = predictions.growth(ratio)
    values = {
        "first": localised(f"{first:.2f}"),  # as the step's text writes them
        "last": localised(f"{last:.2f}"),
        "block": len(norms) - 2,  # depth d is the stream after block d - 1
        "ratio": localised(f"{ratio:.2f}"),
    }

    def explain(guess: str) -> str:
        said = (
            _(
                "in this pre-norm run the stream's mean norm goes from {first} at the embeddings "
                "to {last} after block {block} (x{ratio}): it {change}",
                change=choice_text(truth),
                **values,
            )
            if norm_first
            else _(
                "in this post-norm run the stream's mean norm goes from {first} at the "
                "embeddings to {last} after block {block} (x{ratio}): it {change}",
                change=choice_text(truth),
                **values,
            )
        )
        if guess not in predictions.GROWTH_CHOICES:  # its numbers alone: the pair says so
            return said
        if guess == truth:
            return _("Right: {said}.", said=said)
        return _("Not quite: you said it {guess}; {said}.", guess=choice_text(guess), said=said)

    return explain


def norm_growths(traces: dict[bool, Trace], sentence: int) -> Prediction:
    """predictions.norm_growths, said in this run's language."""
    asked = predictions.norm_growths(traces, sentence)
    pre, post = (_norm_growth_explain(traces[first], sentence, first) for first in (True, False))
    return replace(
        asked,
        question=_(
            "Through the blocks, does the residual stream's norm grow: in a pre-norm model, and "
            "in a post-norm one?"
        ),
        parts=(_("pre-norm"), _("post-norm")),
        _explain=_paired(pre, post),
    )
