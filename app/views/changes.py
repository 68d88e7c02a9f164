"""What changed between setup A and setup B, said in the live numbers of this text.

Each headline pair has its sentence, drawn by the view whose numbers it quotes: pre vs post-norm
(LayerNorm: the residual stream grows or is held near sqrt(d_model)), ReLU vs GELU (Activations:
the share of exact zeros), a head switched off (Attention: which later heads move, and how much),
random vs trained weights (Attention: how focused the heads are). Every view opens with what
differs between the two setups.
"""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from app.runs import Run, Runs
from app.user_text import literal
from encoder.core.options import OPTIONS
from encoder.inspect import norms


def norm_does(norm_type: str, mean: float | None = None, spread: float | None = None) -> str:
    """What a norm does to a row, in words, the one place that says it (the Attention steps,
    the LayerNorm view, the lesson), with that row's numbers where given (`mean`: what LayerNorm
    subtracts; `spread`: its standard deviation, or RMSNorm's root mean square)."""

    def number(value: float | None) -> str:
        return "" if value is None else f" ({value:.4f})"

    if norm_type == "rmsnorm":
        return (
            f"divides by its root mean square{number(spread)} without subtracting any mean, "
            "then applies the learned gain (RMSNorm has no bias)"
        )
    return (
        f"subtracts its mean{number(mean)}, divides by its standard deviation{number(spread)}, "
        "then applies the learned gain and bias"
    )


def _trained(run: Run) -> bool:
    return run.key.source != "random"


def differences(runs: Runs) -> list[str]:
    """What B changes, as "norm placement: pre-norm → post-norm"."""
    a, b = runs.a, runs.b
    found = []
    if _trained(a) != _trained(b) or a.key.source != b.key.source:
        words = {True: "trained weights", False: "random weights"}
        found.append(f"weights: {words[_trained(a)]} → {words[_trained(b)]}")
    for option in OPTIONS:
        va, vb = option.value_of(a.cfg), option.value_of(b.cfg)
        if va != vb and not (option.key == "seed" and _trained(a) and _trained(b)):
            found.append(f"{option.noun}: {option.name(va)} → {option.name(vb)}")
    if a.key.ablate != b.key.ablate:
        off_a, off_b = (
            ", ".join(f"{layer}.{head}" for layer, head in run.key.ablate) or "none"
            for run in (a, b)
        )
        found.append(f"heads switched off: {off_a} → {off_b}")
    return found


def what_changed(runs: Runs) -> None:
    """The line every view opens with in compare mode."""
    if runs.b is None:
        return
    found = differences(runs)
    st.caption(
        "B differs from A in " + "; ".join(found) + "."
        if found
        else "B is the same setup as A: change one of B's controls, or pick a pair in the sidebar."
    )


def say(sentences: list[str]) -> None:
    for sentence in sentences:
        st.info(sentence)


def pre_vs_post(runs: Runs, sentence: int) -> list[str]:
    """The residual stream grows with depth in pre-norm and is held near sqrt(d_model) after every
    block in post-norm."""
    if runs.b is None or runs.a.cfg.norm_first == runs.b.cfg.norm_first:
        return []
    pre, post = runs.named() if runs.a.cfg.norm_first else runs.named()[::-1]
    grow = norms.mean_norm_by_depth(pre[1].residual_norms, sentence)
    held = norms.mean_norm_by_depth(post[1].residual_norms, sentence)
    after_blocks = held.iloc[1:]
    root = math.sqrt(post[1].cfg.d_model)
    return [
        f"Pre-norm ({pre[0]}) never normalises the residual stream itself, so it grows with "
        f"depth: its mean L2 norm per token goes from {grow.iloc[0]:.2f} after the embeddings to "
        f"{grow.iloc[-1]:.2f} after block {len(grow) - 2} (x{grow.iloc[-1] / grow.iloc[0]:.2f}). "
        f"Post-norm ({post[0]}) renormalises it after every block, which holds it near "
        f"sqrt(d_model) = {root:.2f}: between {after_blocks.min():.2f} and "
        f"{after_blocks.max():.2f} after each of its {len(after_blocks)} blocks."
    ]


def relu_vs_gelu(runs: Runs, sentence: int) -> list[str]:
    """The share of the feed-forward's hidden values that are exactly zero."""
    if runs.b is None or runs.a.cfg.activation == runs.b.cfg.activation:
        return []
    shares = {}
    for name, run in runs.named():
        table = run.activation_summary(sentence).feed_forward
        shares[run.cfg.activation] = (
            name,
            table["share_zero"].mean(),
            table["share_negative"].mean(),
        )
    relu, gelu = shares["relu"], shares["gelu"]
    return [
        f"ReLU ({relu[0]}) cuts every negative pre-activation to exactly 0: {relu[1]:.1%} of the "
        f"feed-forward's hidden values are exactly zero (mean over the blocks; {relu[2]:.1%} of "
        f"the pre-activations are below 0). GELU ({gelu[0]}) bends negative values toward 0 "
        f"instead: {gelu[1]:.2%} are exactly zero, though {gelu[2]:.1%} of its pre-activations "
        "are below 0."
    ]


def head_switched_off(runs: Runs, sentence: int) -> list[str]:
    """Which later heads change when B (or A) switches a head off, and by how much."""
    if runs.b is None or runs.comparison is None or runs.a.key.ablate == runs.b.key.ablate:
        return []
    same_model = runs.a.key.cfg == runs.b.key.cfg
    if not same_model or runs.a.key.source != runs.b.key.source:
        return []
    off = sorted(set(runs.b.key.ablate) ^ set(runs.a.key.ablate))
    heads = ", ".join(f"{layer}.{head}" for layer, head in off)
    first = min(layer for layer, _ in off)
    n = runs.a.n_valid(sentence)
    output = runs.comparison.output_cosine[sentence, :n]
    if first + 1 >= runs.a.cfg.num_layers:
        return [
            f"Switching off head {heads} changes no later head (layer {first} is the last); the "
            f"output keeps a mean cosine of {np.mean(output):.4f} with the other setup's."
        ]
    changes = runs.comparison.head_changes(sentence, n, first + 1)
    top = changes.iloc[0]
    moved_a_lot = int((changes["moved"] >= 0.5 * top["moved"]).sum())
    return [
        f"Switching off head {heads} changes the heads after layer {first}: most layer "
        f"{int(top['layer'])} head {int(top['head'])}, where {top['moved']:.1%} of a query's "
        f"attention moved to other keys on average (a single weight by up to "
        f"{top['largest']:.3f}); {moved_a_lot} head(s) moved at least half as much. The output "
        f"keeps a mean cosine of {np.mean(output):.4f} with the other setup's."
    ]


def random_vs_trained(runs: Runs, sentence: int) -> list[str]:
    """Random weights spread attention almost evenly; trained heads focus."""
    if runs.b is None or _trained(runs.a) == _trained(runs.b):
        return []
    trained, random = runs.named() if _trained(runs.a) else runs.named()[::-1]
    n = random[1].n_valid(sentence)
    focus = {}
    for name, run in (trained, random):
        metrics = run.head_metrics(sentence)
        sharpest = metrics.loc[metrics["max_weight"].idxmax()]
        focus[name] = (metrics["entropy"].mean(), sharpest)
    (t_entropy, t_sharp), (r_entropy, r_sharp) = focus[trained[0]], focus[random[0]]
    return [
        f"Random weights ({random[0]}) spread each query's attention almost evenly: mean "
        f"entropy {r_entropy:.2f} nats over the heads, against ln {n} = {math.log(n):.2f} for a "
        f"perfectly even spread over the {n} tokens; its sharpest head puts "
        f"{r_sharp['max_weight']:.2f} on one key on average. The trained weights "
        f"({trained[0]}) focus: mean entropy {t_entropy:.2f} nats, and head "
        f"{int(t_sharp['layer'])}.{int(t_sharp['head'])} puts {t_sharp['max_weight']:.2f} of a "
        "query's weight on one key on average."
    ]


def no_difference_panel(runs: Runs) -> None:
    """Why a view draws A and B side by side only."""
    reasons = [runs.why_no_comparison] if runs.comparison is None else []
    if runs.comparison is not None:
        reasons += list(runs.comparison.why_not)
    if reasons and runs.b is not None:
        st.caption(literal("No difference panel: " + "; ".join(r for r in reasons if r) + "."))
