"""The lesson's chapter on the rest of the block: LayerNorm and the residual stream, the
feed-forward layer, then the whole block in plain NumPy and what it costs."""

from __future__ import annotations

from app.i18n import _, n_
from app.lesson.asked import norm_growths, zero_shares
from app.lesson.text import Lesson, LessonStep, OpenIn, Step, Text, placement_name, sentence
from app.page.changes import StreamSize, norm_does, stream_growth, stream_held, stream_size
from app.page.figures import block_figure, histogram_figure, layernorm_figure, residual_figure
from encoder import EncoderConfig
from encoder.core.options import ACTIVATION_NAMES, GATED_INNER, NORM_TYPE_NAMES, placement_of
from encoder.inspect import activations, predictions
from encoder.inspect.lesson import numpy_block_check, numpy_block_source
from encoder.inspect.predictions import Prediction
from encoder.measure import scaling


def _placement_said(lesson: Lesson, text: Text, size: StreamSize) -> None:
    """Where this model's norms sit, and what that does to the stream's size."""
    cfg = lesson.cfg
    kind = NORM_TYPE_NAMES[cfg.norm_type]
    if cfg.norm_first:
        text.say(
            _(
                "This model is pre-norm: x + f({norm}(x)). Each block normalises a copy of the "
                "residual stream before attention and before the feed-forward, and adds the "
                "result back; the stream itself is never normalised, so nothing holds its size, "
                "until a final {norm} closes the last block.",
                norm=kind,
            ),
            " ",
            stream_growth(size, text.num),
        )
    else:
        text.say(
            _(
                "This model is post-norm, like BERT and the original Transformer: "
                "{norm}(x + f(x)). The stream is normalised after every residual add.",
                norm=kind,
            ),
            " ",
            stream_growth(size, text.num),
            " ",
            stream_held(size, text.num),
        )


def _ln1_said(lesson: Lesson, text: Text) -> None:
    """What ln1 does to the query's row in the step's block (or that the block has none)."""
    run, cfg, s, layer = lesson.run, lesson.cfg, lesson.sentence, lesson.layer
    stats = run.layernorm_stats
    rows = stats[
        (stats["sentence"] == s)
        & (stats["layer"] == layer)
        & (stats["norm"] == "ln1")
        & (stats["position"] == lesson.query)
    ]
    if rows.empty:  # ModernBERT's block 0: the embeddings' norm already normalised its input
        text.say(
            _(
                "Block {layer} has no ln1: its attention reads the stream as it is, which the "
                "embeddings' norm has just normalised.",
                layer=text.num("layer", layer),
            )
        )
    else:
        row = rows.iloc[0]
        text.say(
            *sentence(
                _(
                    "Inside block {layer}, {query} goes into ln1 with mean {in_mean} and std "
                    "{in_std}, and comes out with mean {out_mean} and std {out_std}."
                ),
                layer=text.num("layer", layer),
                query=lesson.query_said(text),
                in_mean=text.num("ln1 input mean", float(row["in_mean"]), ".3f"),
                in_std=text.num("ln1 input std", float(row["in_std"]), ".3f"),
                out_mean=text.num("ln1 output mean", float(row["out_mean"]), ".3f"),
                out_std=text.num("ln1 output std", float(row["out_std"]), ".3f"),
            ),
            " ",
            norm_does("ln1", cfg.norm_type, bias=cfg.norm_bias),
        )


def _other_placement_said(lesson: Lesson, text: Text) -> None:
    """The same weights placed the other way: how the stream's size would go (where it can)."""
    run, cfg, s = lesson.run, lesson.cfg, lesson.sentence
    other = placement_of(not cfg.norm_first)
    if not cfg.has_attention_norm(0):
        text.say(
            _(
                "The first block of this model has no norm before its attention, so its weights "
                "cannot be placed {placement}, which needs a norm after every attention: the "
                "comparison with the other placement does not apply to this model.",
                placement=placement_name(not cfg.norm_first),
            )
        )
    else:
        swapped = stream_size(run.variant(norm_first=not cfg.norm_first), s)

        placed = (f"{other}-norm", placement_name(not cfg.norm_first))

        def other_num(name: str, value: object, spec: str = "") -> str:
            return text.num(name, value, spec, whose=placed)

        text.say(
            stream_growth(
                swapped, other_num, setup=lesson.unit, placed=placement_name(not cfg.norm_first)
            )
        )


def layernorm_step(lesson: Lesson) -> Step:
    text, run, s, layer = Text(), lesson.run, lesson.sentence, lesson.layer
    size = stream_size(run, s)
    _placement_said(lesson, text, size)
    _ln1_said(lesson, text)
    _other_placement_said(lesson, text)
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
    return norm_growths(traces, lesson.sentence)


def _network_said(cfg: EncoderConfig, text: Text, d: str, ff: str, inner: str) -> None:
    """The feed-forward network every token goes through: gated or two layers."""
    name = ACTIVATION_NAMES[cfg.activation]
    if cfg.gated:
        text.say(
            _(
                "After attention, every token goes through the same gated network on its own: "
                "from d_model = {d_model}, the first layer makes two sets of d_ff = {d_ff} "
                "numbers, x and a gate g; {name} is {inner}(x)·g, and the second layer brings it "
                "back down.",
                d_model=d,
                d_ff=ff,
                name=name,
                inner=inner,
            )
        )
    else:
        text.say(
            _(
                "After attention, every token goes through the same two-layer network on its "
                "own: from d_model = {d_model} up to d_ff = {d_ff} numbers, through {name}, and "
                "back down.",
                d_model=d,
                d_ff=ff,
                name=name,
            )
        )


def feed_forward_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    s, layer, q = lesson.sentence, lesson.layer, lesson.query
    row = run.activation_summary(s).feed_forward.iloc[layer]
    d, ff = text.num("d_model", cfg.d_model), text.num("d_ff", cfg.d_ff)
    inner = GATED_INNER.get(cfg.activation, "") if cfg.gated else ""
    _network_said(cfg, text, d, ff, inner)
    negative = text.num("share below 0", float(row["share_negative"]), ".1%")
    values = {"layer": text.num("layer", layer), "negative": negative}
    if cfg.gated or cfg.activation not in predictions.ACTIVATIONS:  # the model's own zeros
        values["zero"] = text.num("share exactly 0", float(row["share_zero"]), ".2%")
    if cfg.gated:
        text.say(
            _(
                "In block {layer}, {negative} of the values before {inner} are negative, and "
                "{zero} of the hidden values {inner}(x)·g are exactly zero: the gate scales each "
                "value by a number of either sign instead of cutting it off. The question of ReLU "
                "or GELU does not apply to a gated layer: its weights make two halves where ReLU "
                "and GELU read one.",
                inner=inner,
                **values,
            )
        )
    else:  # the question's shares: the same block, the same values, the same words
        relu, count = predictions.zero_share_of(run.trace, s, layer, "relu")
        gelu, _count = predictions.zero_share_of(run.trace, s, layer, "gelu")
        values |= {
            "relu": text.num("share ReLU sets to 0", relu, predictions.share_spec(relu)),
            "gelu": text.num("share GELU sets to 0", gelu, predictions.share_spec(gelu)),
            "count": text.num("values before the activation", count, ","),
        }
        text.say(_feed_forward_zeros(cfg.activation, values))
    top = activations.top_units(run.trace, s, layer, q, k=1)
    text.say(
        *sentence(
            _("For {query}, the most active unit is number {unit}, at {value}."),
            query=lesson.query_said(text),
            unit=text.num("top unit", int(top.units[0])),
            value=text.num("top unit value", float(top.values[0]), ".2f"),
        )
    )
    return Step(
        text,
        figures=[("lesson_histogram", histogram_figure(run, s, layer))],
        links=[OpenIn("Activations", {"act_layer": layer, "act_token": q})],
        uses_query=True,
    )


def _feed_forward_zeros(activation: str, values: dict[str, str]) -> str:
    """What the activation does to block {layer}'s values, in the words of the step's question:
    the shares ReLU and GELU set to exactly zero."""
    if activation == "relu":
        return _(
            "In block {layer}, {negative} of the {count} values before ReLU are negative, and "
            "ReLU sets {relu} to exactly zero: units that are off for that token. GELU would bend "
            "them toward zero instead, keeping small negative values: it would set only {gelu} "
            "to exactly zero.",
            **values,
        )
    if activation == "gelu":
        return _(
            "In block {layer}, {negative} of the {count} values before GELU are negative. "
            "GELU(x) = x·Φ(x) bends them toward zero without cutting them off: it sets only "
            "{gelu} to exactly zero. ReLU would set {relu} to exactly zero: every negative one.",
            **values,
        )
    return _(
        "In block {layer}, {negative} of the {count} values before GELU are negative. GELU, here "
        "computed with its tanh approximation (the Shapes view writes it out), bends them toward "
        "zero without cutting them off: only {zero} end exactly at zero. ReLU would set {relu} "
        "to exactly zero: every negative one.",
        **values,
    )


def zero_share_question(lesson: Lesson) -> Prediction | None:
    """The share of block `lesson.layer`'s values before the activation that ReLU, and GELU,
    set to exactly 0: the values the step's histogram draws; None for a gated feed-forward,
    whose weights ReLU and GELU cannot read (the step says so)."""
    if lesson.cfg.gated:
        return None
    return zero_shares(lesson.run.trace, lesson.sentence, lesson.layer)


def numpy_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    code = numpy_block_source(cfg)  # only what this model runs
    check = numpy_block_check(cfg, run.weights, run.trace)
    worst = check["max_abs_diff"].max()
    extras = [
        what
        for what, used in (
            (_("RoPE's turn of q and k"), cfg.positional == "rope"),
            (_("a local window"), cfg.attention_window > 0),
        )
        if used
    ]
    lines = len(code.strip().splitlines())
    text.num("lines of NumPy", lines)  # written by n_(), in the language's plural
    text.say(
        _(
            "The whole block fits in {lines} of plain NumPy, no torch: {norm}, multi-head "
            "attention with a padding mask{extras}, a feed-forward with {activation}, residual "
            "adds, {placement} as this model. The code below is what this model runs: where the "
            "code branches on the architecture, only this model's side is shown.",
            lines=n_("{count} line", "{count} lines", lines),
            norm=NORM_TYPE_NAMES[cfg.norm_type],
            extras="".join(f", {what}" for what in extras),
            activation=ACTIVATION_NAMES[cfg.activation],
            placement=placement_name(cfg.norm_first),
        )
    )
    padded = bool((run.attention_mask == 0).any())
    values = {
        "blocks": text.num("blocks", cfg.num_layers),
        "difference": text.num("max_abs_diff", float(worst), ".1e"),
        "largest": text.num("largest value", float(check["max_abs_value"].max()), ".1f"),
    }
    text.say(
        _(
            "Fed each block's input from this run and the model's own weights, it gives the "
            "model's output for all {blocks} blocks, every token, padding included: the largest "
            "difference is {difference}, on numbers up to {largest} in size.",
            **values,
        )
        if padded
        else _(
            "Fed each block's input from this run and the model's own weights, it gives the "
            "model's output for all {blocks} blocks, every token: the largest difference is "
            "{difference}, on numbers up to {largest} in size.",
            **values,
        )
    )
    return Step(
        text,
        tables=[(_("NumPy against the model, block by block"), check)],
        code=code,
        links=[OpenIn("Shapes", {})],
    )


def cost_step(lesson: Lesson) -> Step:
    text, run, cfg = Text(), lesson.run, lesson.cfg
    cost = run.cost
    B, T = run.input_ids.shape
    d = cfg.d_model
    batch = text.num("batch", B)
    padded_tokens = text.num("padded tokens", T)
    text.say(
        _(
            "A block takes [batch, tokens, d_model] = [{batch}, {tokens}, {d_model}] and returns "
            "the same shape. Inside, attention makes a [tokens x tokens] table per head: {heads} "
            "of [{tokens} x {tokens}]; the feed-forward widens each token to {d_ff}.",
            batch=batch,
            tokens=padded_tokens,
            d_model=text.num("d_model", d),
            heads=text.num("heads", cfg.num_heads),
            d_ff=text.num("d_ff", cfg.d_ff),
        )
    )
    counts = run.parameter_counts.set_index("component")["params"]
    text.say(
        _(
            "The model has {params} parameters: {attention} in attention, {feed_forward} in the "
            "feed-forward layers, {embedding} in the token embedding.",
            params=text.num("parameters", int(cost["params"]), ","),
            attention=text.num("attention parameters", int(counts["attention (all layers)"]), ","),
            feed_forward=text.num(
                "feed-forward parameters", int(counts["feed-forward (all layers)"]), ","
            ),
            embedding=text.num("token embedding parameters", int(counts["token embedding"]), ","),
        )
    )
    attention_flops = cost["attention_flops"]
    doubled = scaling.flops_at(cfg, B, 2 * T)
    doubled_attention, doubled_ffn = doubled["attention_flops"], doubled["ffn_flops"]
    mflops = 1e6
    text.say(
        _(
            "One pass over this input costs {flops} MFLOPs. Attention's scores and weighted sums "
            "are {attention} of them and grow with tokens²: twice the tokens, "
            "{attention_doubled}. The feed-forward's {feed_forward} grow with tokens: twice the "
            "tokens, {feed_forward_doubled}.",
            flops=text.num("MFLOPs", cost["flops"] / mflops, ",.1f"),
            attention=text.num("attention MFLOPs", attention_flops / mflops, ",.2f"),
            attention_doubled=text.num(
                "attention MFLOPs at twice the tokens", doubled_attention / mflops, ",.2f"
            ),
            feed_forward=text.num("feed-forward MFLOPs", cost["ffn_flops"] / mflops, ",.2f"),
            feed_forward_doubled=text.num(
                "feed-forward MFLOPs at twice the tokens", doubled_ffn / mflops, ",.2f"
            ),
        )
    )
    return Step(
        text,
        figures=[("lesson_block", block_figure(run))],
        tables=[(_("Parameters by component"), run.parameter_counts)],
        links=[OpenIn("Shapes", {})],
    )


LAYERNORM = LessonStep(
    lambda: _("LayerNorm and the residual stream"), layernorm_step, question=norm_growth_question
)
FEED_FORWARD = LessonStep(
    lambda: _("The feed-forward layer and its activation"),
    feed_forward_step,
    question=zero_share_question,
)
NUMPY_BLOCK = LessonStep(lambda: _("The whole block in NumPy"), numpy_step)
COST = LessonStep(lambda: _("Shapes and what the block costs"), cost_step)
