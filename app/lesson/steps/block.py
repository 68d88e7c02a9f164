"""The lesson's chapter on the rest of the block: LayerNorm and the residual stream, the
feed-forward layer, then the whole block in plain NumPy and what it costs."""

from __future__ import annotations

import inspect

from app.charts.activations import GATED_INNER
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text
from app.views.changes import norm_does, stream_growth, stream_held, stream_size
from app.views.figures import block_figure, histogram_figure, layernorm_figure, residual_figure
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES, placement_of
from encoder.inspect import activations, numpy_block, predictions
from encoder.inspect.lesson import numpy_block_check
from encoder.inspect.predictions import Prediction
from encoder.measure import scaling


def layernorm_step(lesson: Lesson) -> Step:
    text, run, cfg, s, layer = Text(), lesson.run, lesson.cfg, lesson.sentence, lesson.layer
    size = stream_size(run, s)
    kind = NORM_TYPE_NAMES[cfg.norm_type]
    if cfg.norm_first:
        text.say(
            f"This model is pre-norm: x + f({kind}(x)). Each block normalises a copy of the "
            "residual stream before attention and before the feed-forward, and adds the result "
            "back; the stream itself is never normalised, so nothing holds its size: the mean "
            f"length of a token's vector {stream_growth(size, text.num)}. A final {kind} closes it."
        )
    else:
        text.say(
            f"This model is post-norm, like BERT and the original Transformer: {kind}(x + f(x)). "
            "The stream is normalised after every residual add: the mean length of a token's "
            f"vector {stream_growth(size, text.num)}, and it is {stream_held(size, text.num)}."
        )
    stats = run.layernorm_stats
    rows = stats[
        (stats["sentence"] == s)
        & (stats["layer"] == layer)
        & (stats["norm"] == "ln1")
        & (stats["position"] == lesson.query)
    ]
    if rows.empty:  # ModernBERT's block 0: the embeddings' norm already normalised its input
        text.say(
            f"Block {text.num('layer', layer)} has no ln1: its attention reads the stream as it "
            "is, which the embeddings' norm has just normalised."
        )
    else:
        row = rows.iloc[0]
        text.say(
            f"Inside block {text.num('layer', layer)}, ln1 "
            f"{norm_does(cfg.norm_type, bias=cfg.norm_bias)}: ",
            *lesson.query_said(text),
            f" goes in with mean {text.num('ln1 input mean', float(row['in_mean']), '.3f')} and "
            f"std {text.num('ln1 input std', float(row['in_std']), '.3f')}, and comes out with "
            f"mean {text.num('ln1 output mean', float(row['out_mean']), '.3f')} and std "
            f"{text.num('ln1 output std', float(row['out_std']), '.3f')}.",
        )
    other = placement_of(not cfg.norm_first)
    if not cfg.has_attention_norm(0):
        text.say(
            "The first block of this model has no norm before its attention, so its weights "
            f"cannot be placed {other}-norm, which needs a norm after every attention: the "
            "comparison "
            "with the other placement does not apply to this model."
        )
    else:
        swapped = stream_size(run.variant(norm_first=not cfg.norm_first), s)

        def other_num(name: str, value: object, spec: str = "") -> str:
            return text.num(f"{other}-norm: {name}", value, spec)

        text.say(
            f"The same weights placed {other}-norm, on the same {lesson.unit}: the mean length "
            f"{stream_growth(swapped, other_num)}."
        )
    return Step(
        text,
        figures=[
            ("lesson_residual", residual_figure(run, s)),
            ("lesson_layernorm", layernorm_figure(run, s, layer)),
        ],
        links=[OpenIn("LayerNorm", {"ln_layer": layer})],
        uses_query=True,
    )


def norm_growth_question(lesson: Lesson) -> Prediction | None:
    """Whether the stream's norm grows through the blocks, pre-norm and post-norm: the run's
    placement and the other, with the same weights; None for weights that cannot be placed the
    other way (block 0 without an attention norm: the step says so)."""
    run = lesson.run
    if not run.cfg.has_attention_norm(0):
        return None
    first = run.cfg.norm_first
    traces = {first: run.trace, not first: run.variant(norm_first=not first).trace}
    return predictions.norm_growths(traces, lesson.sentence)


def feed_forward_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    s, layer, q = lesson.sentence, lesson.layer, lesson.query
    name = ACTIVATION_NAMES[cfg.activation]
    row = run.activation_summary(s).feed_forward.iloc[layer]
    d, ff = text.num("d_model", cfg.d_model), text.num("d_ff", cfg.d_ff)
    if cfg.gated:
        inner = GATED_INNER[cfg.activation]
        text.say(
            "After attention, every token goes through the same gated network on its own: "
            f"from d_model = {d}, the first layer makes two sets of d_ff = {ff} numbers, x and a "
            f"gate g; {name} is {inner}(x)·g, and the second layer brings it back down."
        )
    else:
        text.say(
            "After attention, every token goes through the same two-layer network on its own: "
            f"from d_model = {d} up to d_ff = {ff} numbers, through {name}, and back down."
        )
    negative = text.num("share below 0", float(row["share_negative"]), ".1%")
    zero = text.num("share exactly 0", float(row["share_zero"]), ".2%")
    if cfg.gated:
        text.say(
            f"In block {text.num('layer', layer)}, {negative} of the values before {inner} are "
            f"negative, and {zero} of the hidden values {inner}(x)·g are exactly zero: the gate "
            "scales each value by a number of either sign instead of cutting it off. The "
            "question of ReLU or GELU does not apply to a gated layer: its weights make two "
            "halves where ReLU and GELU read one."
        )
    elif cfg.activation == "relu":
        text.say(
            f"In block {text.num('layer', layer)}, {negative} of the values before ReLU are "
            "negative, and ReLU sets each of them to zero: "
            f"{zero} of the hidden values are exactly zero, units that are off for that token. "
            "GELU would bend them toward zero instead, keeping small negative values."
        )
    else:
        formula = (
            "GELU(x) = x·Φ(x)"
            if cfg.activation == "gelu"
            else "GELU, here computed with its tanh approximation (the Shapes view writes it out),"
        )
        text.say(
            f"In block {text.num('layer', layer)}, {negative} of the values before GELU are "
            f"negative. {formula} bends them toward zero without cutting them off: only "
            f"{zero} end exactly at zero. ReLU would set all {negative} to zero."
        )
    top = activations.top_units(run.trace, s, layer, q, k=1)
    text.say(
        "For ",
        *lesson.query_said(text),
        f", the most active unit is number {text.num('top unit', int(top.units[0]))}, at "
        f"{text.num('top unit value', float(top.values[0]), '.2f')}.",
    )
    return Step(
        text,
        figures=[("lesson_histogram", histogram_figure(run, s, layer))],
        links=[OpenIn("Activations", {"act_layer": layer, "act_token": q})],
        uses_query=True,
    )


def zero_share_question(lesson: Lesson) -> Prediction | None:
    """The share of feed-forward values exactly zero after ReLU and after GELU, with the same
    weights (the run's own trace where its activation is one of them); None for a gated
    feed-forward, whose weights ReLU and GELU cannot read (the step says so)."""
    run = lesson.run
    own = run.cfg.activation
    if run.cfg.gated:
        return None
    traces = {
        name: run.trace if name == own else run.variant(activation=name).trace
        for name in ("relu", "gelu")
    }
    return predictions.zero_shares(traces, lesson.sentence)


def numpy_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    source = inspect.getsource(numpy_block)
    code = source[source.index("import math") :]
    lines = sum(1 for line in code.splitlines() if line.strip())  # not counting blank ones
    check = numpy_block_check(cfg, run.weights, run.trace)
    worst = check["max_abs_diff"].max()
    placement = placement_of(cfg.norm_first)
    extras = [
        what
        for what, used in (
            ("RoPE's turn of q and k", cfg.positional == "rope"),
            ("a local window", cfg.attention_window > 0),
        )
        if used
    ]
    text.say(
        f"The whole block fits in {text.num('lines of NumPy', lines)} lines of "
        f"plain NumPy, no torch: {NORM_TYPE_NAMES[cfg.norm_type]}, multi-head attention with a "
        "padding mask" + "".join(f", {what}" for what in extras) + ", a feed-forward with "
        f"{ACTIVATION_NAMES[cfg.activation]}, residual adds, {placement}-norm as this model."
    )
    padded = bool((run.attention_mask == 0).any())
    text.say(
        "Fed each block's input from this run and the model's own weights, it gives the "
        f"model's output for all {text.num('blocks', cfg.num_layers)} blocks, every token"
        + (", padding included" if padded else "")
        + f": the largest difference is {text.num('max_abs_diff', float(worst), '.1e')}, on "
        f"numbers up to {text.num('largest value', float(check['max_abs_value'].max()), '.1f')} "
        "in size."
    )
    return Step(
        text,
        tables=[("NumPy against the model, block by block", check)],
        code=code,
        links=[OpenIn("Shapes", {})],
    )


def cost_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    cost = run.cost
    B, T = run.input_ids.shape
    d = cfg.d_model
    text.say(
        f"A block takes [batch, tokens, d_model] = [{text.num('batch', B)}, "
        f"{text.num('padded tokens', T)}, {text.num('d_model', d)}] and returns the same shape. "
        f"Inside, attention makes a [tokens x tokens] table per head: "
        f"{text.num('heads', cfg.num_heads)} of [{text.num('padded tokens', T)} x "
        f"{text.num('padded tokens', T)}]; the feed-forward widens each token to "
        f"{text.num('d_ff', cfg.d_ff)}."
    )
    counts = run.parameter_counts.set_index("component")["params"]
    text.say(
        f"The model has {text.num('parameters', int(cost['params']), ',')} parameters: "
        f"{text.num('attention parameters', int(counts['attention (all layers)']), ',')} in "
        "attention, "
        f"{text.num('feed-forward parameters', int(counts['feed-forward (all layers)']), ',')} "
        f"in the feed-forward layers, "
        f"{text.num('token embedding parameters', int(counts['token embedding']), ',')} in the "
        "token embedding."
    )
    attention_flops = cost["attention_flops"]
    doubled = scaling.flops_at(cfg, B, 2 * T)
    doubled_attention, doubled_ffn = doubled["attention_flops"], doubled["ffn_flops"]
    mflops = 1e6
    text.say(
        f"One pass over this input costs {text.num('MFLOPs', cost['flops'] / mflops, ',.1f')} "
        f"MFLOPs. Attention's scores and weighted sums are "
        f"{text.num('attention MFLOPs', attention_flops / mflops, ',.2f')} of them and grow "
        f"with tokens²: twice the tokens, "
        f"{text.num('attention MFLOPs at twice the tokens', doubled_attention / mflops, ',.2f')}. "
        f"The feed-forward's {text.num('feed-forward MFLOPs', cost['ffn_flops'] / mflops, ',.2f')}"
        f" grow with tokens: twice the tokens, "
        f"{text.num('feed-forward MFLOPs at twice the tokens', doubled_ffn / mflops, ',.2f')}."
    )
    return Step(
        text,
        figures=[("lesson_block", block_figure(run))],
        tables=[("Parameters by component", run.parameter_counts)],
        links=[OpenIn("Shapes", {})],
    )


LAYERNORM = LessonStep(
    "LayerNorm and the residual stream", layernorm_step, question=norm_growth_question
)
FEED_FORWARD = LessonStep(
    "The feed-forward layer and its activation", feed_forward_step, question=zero_share_question
)
NUMPY_BLOCK = LessonStep("The whole block in NumPy", numpy_step)
COST = LessonStep("Shapes and what the block costs", cost_step)
