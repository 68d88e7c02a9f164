"""What changed between setup A and setup B, said in the live numbers of this text.

Each headline pair has its sentence, drawn by the view whose numbers it quotes: pre vs post-norm
(LayerNorm: how the residual stream's size changes with depth, or where the norms' gains hold
it), ReLU vs GELU (Activations: the share of exact zeros), a head switched off (Attention: which
later heads move, and how much), random vs trained weights (Attention: how focused the heads
are). Every view opens with what differs between the two setups. The residual stream's size is
said here once (`StreamSize`, `stream_growth`, `stream_held`) for the LayerNorm view, this
module's pre vs post sentence and the lesson.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from app.i18n import _, number, percent
from app.runs import Run, Runs
from app.sources import FOUND_PREFIX, is_found_source
from app.sources import LABELS as SOURCE_LABELS
from app.user_text import literal
from encoder.core.options import ACTIVATION_NAMES, NORM_TYPE_NAMES, OPTIONS, ArchOption
from encoder.inspect import norms
from encoder.inspect.lesson import BROAD_ENTROPY
from encoder.inspect.predictions import GROWS, SHRINKS, growth

# (name, value, format spec) -> the value as the sentence shows it; the lesson's Text.num also
# registers it under its name
Number = Callable[[str, object, str], str]


def _plain(name: str, value: object, spec: str = "") -> str:
    """The value as this run's language writes it (".2f": two decimals, ungrouped)."""
    if spec.startswith(".") and spec.endswith("f"):
        return number(float(value), int(spec[1:-1]), grouped=False)
    return format(value, spec)


def head_label(layer: int, head: int) -> str:
    """How the page names a head: "layer 2, head 1" (both from 0), in the page's language."""
    return _("layer {layer}, head {head}", layer=layer, head=head)


def norm_does(
    name: str,
    norm_type: str,
    mean: float | None = None,
    spread: float | None = None,
    bias: bool = True,
) -> str:
    """What the norm `name` ("ln1", "LayerNorm") does to a row, as a sentence, the one place
    that says it (the Attention steps, the LayerNorm view, the lesson), with that row's numbers
    where given (`mean`: what LayerNorm subtracts; `spread`: its standard deviation, or
    RMSNorm's root mean square); `bias`: whether a LayerNorm has one (EncoderConfig.norm_bias)."""
    values = dict(
        norm=name,
        mean="?" if mean is None else number(mean, 4, grouped=False),
        spread="?" if spread is None else number(spread, 4, grouped=False),
    )
    with_numbers = mean is not None or spread is not None
    said = {
        ("rmsnorm", False): _(
            "{norm} divides by its root mean square without subtracting any mean, then applies "
            "its gain (RMSNorm has no bias)."
        ),
        ("rmsnorm", True): _(
            "{norm} divides by its root mean square ({spread}) without subtracting any mean, "
            "then applies its gain (RMSNorm has no bias)."
        ),
        ("no bias", False): _(
            "{norm} subtracts its mean, divides by its standard deviation, then applies its "
            "gain (no bias)."
        ),
        ("no bias", True): _(
            "{norm} subtracts its mean ({mean}), divides by its standard deviation ({spread}), "
            "then applies its gain (no bias)."
        ),
        ("bias", False): _(
            "{norm} subtracts its mean, divides by its standard deviation, then applies its "
            "gain and bias."
        ),
        ("bias", True): _(
            "{norm} subtracts its mean ({mean}), divides by its standard deviation ({spread}), "
            "then applies its gain and bias."
        ),
    }
    kind = "rmsnorm" if norm_type == "rmsnorm" else "bias" if bias else "no bias"
    return said[(kind, with_numbers)].format(**values)


@dataclass(frozen=True)
class StreamSize:
    """The residual stream's mean L2 norm per token at every depth of one sentence, and the
    gains of the norm that ends each block (ln2: in post-norm, the stream after a block is its
    output)."""

    by_depth: pd.Series  # [depth]: 0 = after the embeddings, d = after block d - 1
    d_model: int
    norm_type: str
    gains: pd.Series  # [block]: ln2's mean gain
    unit_gains: bool  # every ln2 has unit gain and zero bias

    @property
    def first(self) -> float:
        return float(self.by_depth.iloc[0])

    @property
    def last(self) -> float:
        return float(self.by_depth.iloc[-1])

    @property
    def ratio(self) -> float:
        return self.last / self.first

    @property
    def blocks(self) -> int:
        return len(self.by_depth) - 1

    @property
    def after_blocks(self) -> pd.Series:
        return self.by_depth.iloc[1:]

    @property
    def unit(self) -> float:
        """The length of a norm's output with unit gain and zero bias: sqrt(d_model)."""
        return math.sqrt(self.d_model)

    @property
    def against_unit(self) -> str:
        """Where the stream sits after the blocks against `unit`: below, above or around."""
        low, high = float(self.after_blocks.min()), float(self.after_blocks.max())
        return "below" if high < self.unit else "above" if low > self.unit else "around"


def stream_size(run: Run, sentence: int) -> StreamSize:
    params = run.norm_parameters
    ln2 = params[(params["norm"] == "ln2") & (params["layer"] >= 0)]
    no_bias = ln2["bias_mean"].isna() | ((ln2["bias_mean"] == 0) & (ln2["bias_std"] == 0))
    unit_gains = bool(((ln2["gain_min"] == 1) & (ln2["gain_max"] == 1) & no_bias).all())
    return StreamSize(
        norms.mean_norm_by_depth(run.residual_norms, sentence),
        run.cfg.d_model,
        run.cfg.norm_type,
        ln2["gain_mean"].reset_index(drop=True),
        unit_gains,
    )


def stream_growth(
    size: StreamSize, num: Number = _plain, setup: str | None = None, placed: str | None = None
) -> str:
    """A sentence: 'The mean L2 norm per token goes from 9.27 after the embeddings to 7.95
    after block 5 (x0.86: here it stays about the same).'; of `setup` where one is named ('In
    A, …'), or of the same weights `placed` the other way ('The same weights placed post-norm,
    on the same sentence: …'; `placed` a placement name and `setup` what they read)."""
    values = dict(
        first=num("stream after the embeddings", size.first, ".2f"),
        last=num("stream after the last block", size.last, ".2f"),
        block=num("last block", size.blocks - 1, ""),
        ratio=num("last over first", size.ratio, ".2f"),
        setup=setup,
        placement=placed,
    )
    told = "placed" if placed is not None else "setup" if setup is not None else "plain"
    said = {
        ("plain", GROWS): _(
            "The mean L2 norm per token goes from {first} after the embeddings to {last} after "
            "block {block} (x{ratio}: here it grows)."
        ),
        ("plain", SHRINKS): _(
            "The mean L2 norm per token goes from {first} after the embeddings to {last} after "
            "block {block} (x{ratio}: here it shrinks)."
        ),
        ("plain", "same"): _(
            "The mean L2 norm per token goes from {first} after the embeddings to {last} after "
            "block {block} (x{ratio}: here it stays about the same)."
        ),
        ("setup", GROWS): _(
            "In {setup}, the mean L2 norm per token goes from {first} after the embeddings to "
            "{last} after block {block} (x{ratio}: here it grows)."
        ),
        ("setup", SHRINKS): _(
            "In {setup}, the mean L2 norm per token goes from {first} after the embeddings to "
            "{last} after block {block} (x{ratio}: here it shrinks)."
        ),
        ("setup", "same"): _(
            "In {setup}, the mean L2 norm per token goes from {first} after the embeddings to "
            "{last} after block {block} (x{ratio}: here it stays about the same)."
        ),
        ("placed", GROWS): _(
            "The same weights placed {placement}, on the same {setup}: the mean L2 norm per "
            "token goes from {first} after the embeddings to {last} after block {block} "
            "(x{ratio}: here it grows)."
        ),
        ("placed", SHRINKS): _(
            "The same weights placed {placement}, on the same {setup}: the mean L2 norm per "
            "token goes from {first} after the embeddings to {last} after block {block} "
            "(x{ratio}: here it shrinks)."
        ),
        ("placed", "same"): _(
            "The same weights placed {placement}, on the same {setup}: the mean L2 norm per "
            "token goes from {first} after the embeddings to {last} after block {block} "
            "(x{ratio}: here it stays about the same)."
        ),
    }
    verdict = growth(size.ratio)
    return said[(told, verdict if verdict in (GROWS, SHRINKS) else "same")].format(**values)


def _why_held(size: StreamSize) -> str:
    """stream_held's second sentence, as a template of its values: why the norms hold the stream
    where they do."""
    if size.unit_gains:
        return _(
            "That is sqrt(d_model) = {root}: every ln2 has unit gain and zero bias, and a {kind} "
            "output with unit gain and zero bias has that length."
        )
    return {
        (True, "below"): _(
            "A {kind} output with unit gain and zero bias has length sqrt(d_model) = {root}; "
            "ln2's learned gain (mean gain {gains} per block) put the stream below that."
        ),
        (True, "above"): _(
            "A {kind} output with unit gain and zero bias has length sqrt(d_model) = {root}; "
            "ln2's learned gain (mean gain {gains} per block) put the stream above that."
        ),
        (True, "around"): _(
            "A {kind} output with unit gain and zero bias has length sqrt(d_model) = {root}; "
            "ln2's learned gain (mean gain {gains} per block) put the stream around that."
        ),
        (False, "below"): _(
            "A {kind} output with unit gain and zero bias has length sqrt(d_model) = {root}; "
            "ln2's learned gain and bias (mean gain {gains} per block) put the stream below "
            "that."
        ),
        (False, "above"): _(
            "A {kind} output with unit gain and zero bias has length sqrt(d_model) = {root}; "
            "ln2's learned gain and bias (mean gain {gains} per block) put the stream above "
            "that."
        ),
        (False, "around"): _(
            "A {kind} output with unit gain and zero bias has length sqrt(d_model) = {root}; "
            "ln2's learned gain and bias (mean gain {gains} per block) put the stream around "
            "that."
        ),
    }[(size.norm_type == "rmsnorm", size.against_unit)]


def stream_held(size: StreamSize, num: Number = _plain, setup: str | None = None) -> str:
    """Where a post-norm model's norms hold the stream after its blocks, and why there, as a
    sentence: 'The mean L2 norm per token is between 7.95 and 11.55 after each of the 6 blocks.
    A LayerNorm output with unit gain and zero bias has length ...'; of `setup` where one is
    named ('In B, …')."""
    kind = NORM_TYPE_NAMES[size.norm_type]
    low = num("smallest after a block", float(size.after_blocks.min()), ".2f")
    high = num("largest after a block", float(size.after_blocks.max()), ".2f")
    where = low if low == high else _("between {low} and {high}", low=low, high=high)
    smallest = num("ln2 mean gain, smallest", float(size.gains.min()), ".2f")
    largest = num("ln2 mean gain, largest", float(size.gains.max()), ".2f")
    values = dict(
        where=where,
        count=num("blocks", size.blocks, ""),
        root=num("sqrt d_model", size.unit, ".2f"),
        kind=kind,
        gains=smallest
        if smallest == largest
        else _("{smallest} to {largest}", smallest=smallest, largest=largest),
        setup=setup,
    )
    subject = (
        _("The mean L2 norm per token is {where} after each of the {count} blocks.")
        if setup is None
        else _(
            "In {setup}, the mean L2 norm per token is {where} after each of the {count} blocks."
        )
    ).format(**values)
    return subject + " " + _why_held(size).format(**values)


def _trained(run: Run) -> bool:
    return run.key.source != "random"


def source_name(run: Run) -> str:
    """Where a run's weights come from, as the page names it: "Random weights", "Pretrained
    MiniLM (all-MiniLM-L6-v2)", "FacebookAI/roberta-base (found on this machine)" or "a model
    of this session"."""
    source = run.key.source
    if is_found_source(source):
        return _("{name} (found on this machine)", name=source.removeprefix(FOUND_PREFIX))
    if source not in SOURCE_LABELS:
        return _("a model of this session")
    # the sources' labels are the frame's messages: translated where its catalogue has them
    return re.split("[,，،]", _(SOURCE_LABELS[source]))[0]


def differences(runs: Runs) -> list[str]:
    """What B changes, as "norm placement: pre-norm → post-norm"."""
    a, b = runs.a, runs.b
    found = []
    if _trained(a) != _trained(b):
        found.append(
            _("weights: trained weights → random weights")
            if _trained(a)
            else _("weights: random weights → trained weights")
        )
    elif a.key.source != b.key.source:
        named = source_name(a), source_name(b)
        found.append(
            _("weights: {a} → {b}", a=named[0], b=named[1])
            if named[0] != named[1]
            else _("weights: one model of this session → another")
            if named[0] == _("a model of this session")
            else _("weights: one {name} → another", name=named[0])
        )
    if a.tokenizer_name != b.tokenizer_name:
        found.append(_("tokenizer: {a} → {b}", a=a.tokenizer_name, b=b.tokenizer_name))
    for option in OPTIONS:
        va, vb = option.value_of(a.cfg), option.value_of(b.cfg)
        if va != vb and not (option.key == "seed" and _trained(a) and _trained(b)):
            found.append(
                _(
                    "{option}: {a} → {b}",
                    option=_(option.noun),
                    a=option_value(option, va),
                    b=option_value(option, vb),
                )
            )
    if a.key.ablate != b.key.ablate:
        off_a, off_b = (heads_named(run.key.ablate) or _("none") for run in (a, b))
        found.append(_("heads switched off: {a} → {b}", a=off_a, b=off_b))
    return found


def option_value(option: ArchOption, value: object) -> str:
    """An option's value as the page names it, in the page's language: a word ("pre-norm", "on",
    GELU: encoder.core.options' names, marked there) translated, a number as it is."""
    name = option.name(value)
    return _(name) if option.named else name


def heads_named(heads: Iterable[tuple[int, int]]) -> str:
    """(layer, head) pairs in words, the one way the page names them: 'layer 1, head 3; layer
    2, head 0'."""
    return "; ".join(head_label(layer, head) for layer, head in heads)


def what_changed(runs: Runs) -> None:
    """The lines every view opens with in compare mode: what B changes, and, where A and B split
    the text into different tokens, each one's token count and what is therefore not drawn."""
    if runs.b is None:
        return
    found = differences(runs)
    st.caption(
        _("B differs from A in {differences}.", differences="; ".join(found))
        if found
        else _(
            "B is the same setup as A: change one of B's controls, or pick a pair in the sidebar."
        )
    )
    if runs.token_difference:
        st.caption(runs.token_difference + ".")


def say(sentences: list[str]) -> None:
    for sentence in sentences:
        st.info(sentence)


def pre_vs_post(runs: Runs, sentence: int) -> list[str]:
    """How the residual stream's size changes with depth in the pre-norm setup, and where the
    post-norm setup's norms hold it, each with its own numbers."""
    if runs.b is None or runs.a.cfg.norm_first == runs.b.cfg.norm_first:
        return []
    pre, post = runs.named() if runs.a.cfg.norm_first else runs.named()[::-1]
    grow, held = stream_size(pre[1], sentence), stream_size(post[1], sentence)
    return [
        " ".join(
            (
                _(
                    "Pre-norm ({pre}) never normalises the residual stream itself; post-norm "
                    "({post}) renormalises it after every block.",
                    pre=pre[0],
                    post=post[0],
                ),
                stream_growth(grow, setup=pre[0]),
                stream_held(held, setup=post[0]),
            )
        )
    ]


def relu_vs_gelu(runs: Runs, sentence: int) -> list[str]:
    """ReLU against a smooth activation (GELU, its tanh form, or a gated GeGLU / SwiGLU): the
    share of the feed-forward's hidden values that are exactly zero."""
    if runs.b is None or runs.a.cfg.activation == runs.b.cfg.activation:
        return []
    named = runs.named()
    relu = [(name, run) for name, run in named if run.cfg.activation == "relu"]
    if len(relu) != 1:
        return []
    smooth = next((name, run) for name, run in named if run.cfg.activation != "relu")
    (relu_name, relu_zero, relu_negative), (name, zero, negative) = (
        _zeros(setup, run, sentence) for setup, run in (relu[0], smooth)
    )
    smooth_name = ACTIVATION_NAMES[smooth[1].cfg.activation]
    return [
        _(
            "ReLU ({relu}) cuts every negative pre-activation to exactly 0: {relu_zero} of the "
            "feed-forward's hidden values are exactly zero (mean over the blocks; "
            "{relu_negative} of the pre-activations are below 0). {smooth} ({name}) bends "
            "negative values toward 0 instead: {zero} are exactly zero, though {negative} of "
            "its pre-activations are below 0.",
            relu=relu_name,
            relu_zero=percent(relu_zero, 1),
            relu_negative=percent(relu_negative, 1),
            smooth=smooth_name,
            name=name,
            zero=percent(zero, 2),
            negative=percent(negative, 1),
        )
    ]


def _zeros(name: str, run: Run, sentence: int) -> tuple[str, float, float]:
    """(setup, share of hidden values exactly 0, share of pre-activations below 0), the means
    over the blocks."""
    table = run.activation_summary(sentence).feed_forward
    return name, table["share_zero"].mean(), table["share_negative"].mean()


def head_switched_off(runs: Runs, sentence: int) -> list[str]:
    """Which later heads change when B (or A) switches a head off, and by how much."""
    if runs.b is None or runs.comparison is None or runs.a.key.ablate == runs.b.key.ablate:
        return []
    same_model = runs.a.key.cfg == runs.b.key.cfg
    if not same_model or runs.a.key.source != runs.b.key.source:
        return []
    off = sorted(set(runs.b.key.ablate) ^ set(runs.a.key.ablate))
    heads = heads_named(off)
    first = min(layer for layer, _ in off)
    n = runs.a.n_valid(sentence)
    output = runs.comparison.output_cosine[sentence, :n]
    if first + 1 >= runs.a.cfg.num_layers:
        return [
            _(
                "Switching off {heads} changes no later head (layer {layer} is the last); the "
                "output keeps a mean cosine of {cosine} with the other setup's.",
                heads=heads,
                layer=first,
                cosine=number(np.mean(output), 4, grouped=False),
            )
        ]
    changes = runs.comparison.head_changes(sentence, n, first + 1)
    top = changes.iloc[0]
    others = int((changes["moved"] >= 0.5 * top["moved"]).sum()) - 1
    return [
        _(
            "Switching off {heads} changes the heads after layer {layer}: most {top}, where "
            "{moved} of a query's attention moved to other keys on average (a single weight by "
            "up to {largest}); {others} other head(s) moved at least half as much. The output "
            "keeps a mean cosine of {cosine} with the other setup's.",
            heads=heads,
            layer=first,
            top=head_label(int(top["layer"]), int(top["head"])),
            moved=percent(top["moved"], 1),
            largest=number(top["largest"], 3, grouped=False),
            others=others,
            cosine=number(np.mean(output), 4, grouped=False),
        )
    ]


def random_vs_trained(runs: Runs, sentence: int) -> list[str]:
    """How evenly each setup's heads spread their attention: mean entropy against ln n, and the
    sharpest head."""
    if runs.b is None or _trained(runs.a) == _trained(runs.b):
        return []
    trained, random = runs.named() if _trained(runs.a) else runs.named()[::-1]
    said = []
    for (name, run), trained_weights in ((random, False), (trained, True)):
        n = run.n_valid(sentence)
        metrics = run.head_metrics(sentence)
        entropy = metrics["entropy"].mean()
        sharpest = metrics.loc[metrics["max_weight"].idxmax()]
        even = entropy > BROAD_ENTROPY * math.log(n)
        message = {
            (False, True): _(
                "Random weights ({name}) spread each query's attention almost evenly: mean "
                "entropy {entropy} nats over the heads, against ln {n} = {ceiling} for a "
                "perfectly even spread over the {n} tokens; the sharpest head, {head}, puts "
                "{weight} of a query's weight on one key on average."
            ),
            (False, False): _(
                "Random weights ({name}) spread each query's attention unevenly: mean entropy "
                "{entropy} nats over the heads, against ln {n} = {ceiling} for a perfectly even "
                "spread over the {n} tokens; the sharpest head, {head}, puts {weight} of a "
                "query's weight on one key on average."
            ),
            (True, True): _(
                "The trained weights ({name}) spread each query's attention almost evenly: mean "
                "entropy {entropy} nats over the heads, against ln {n} = {ceiling} for a "
                "perfectly even spread over the {n} tokens; the sharpest head, {head}, puts "
                "{weight} of a query's weight on one key on average."
            ),
            (True, False): _(
                "The trained weights ({name}) spread each query's attention unevenly: mean "
                "entropy {entropy} nats over the heads, against ln {n} = {ceiling} for a "
                "perfectly even spread over the {n} tokens; the sharpest head, {head}, puts "
                "{weight} of a query's weight on one key on average."
            ),
        }[(trained_weights, even)]
        said.append(
            message.format(
                name=name,
                entropy=number(entropy, 2, grouped=False),
                n=n,
                ceiling=number(math.log(n), 2, grouped=False),
                head=head_label(int(sharpest["layer"]), int(sharpest["head"])),
                weight=number(sharpest["max_weight"], 2, grouped=False),
            )
        )
    return [" ".join(said)]


def no_difference_panel(runs: Runs) -> None:
    """Why a view draws A and B side by side only."""
    if runs.token_difference:  # said at the top of the view, with each setup's token count
        reasons = [_("A and B read different tokens (above)")]
    else:
        reasons = [runs.why_no_comparison] if runs.comparison is None else []
    if runs.comparison is not None:
        reasons += list(runs.comparison.why_not)
    if reasons and runs.b is not None:
        said = "; ".join(r for r in reasons if r)
        st.caption(literal(_("No difference panel: {reasons}.", reasons=said)))
