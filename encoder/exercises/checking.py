"""What every checker shares (encoder.exercises.checkers): a block's hooks, the refusals for what
a student's function cannot be told (a local window, RoPE's turns), the call of the student's
function and its comparison with the model's tensor, and the live scores and the keys a query
sees."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from encoder.core import hooks
from encoder.exercises.lab import Lab
from encoder.exercises.result import CheckResult, Mistake, compare, failure
from encoder.exercises.student import call_student

SCORE_AXES = ("sentence", "head", "query", "key")
STREAM_AXES = ("sentence", "token", "feature")
HEAD_AXES = ("sentence", "token", "feature")


def block_hooks(lab: Lab, layer: int) -> hooks.BlockHooks:
    if not 0 <= layer < lab.cfg.num_layers:
        raise ValueError(f"layer={layer}: this model has layers 0..{lab.cfg.num_layers - 1}")
    return hooks.block(layer)


def global_layer_only(lab: Lab, layer: int, exercise: str) -> None:
    """A ValueError when block `layer` attends through a local window, which the [B, T] mask
    given to `exercise` cannot carry; it names the global layers, or the setting without one."""
    cfg = lab.cfg
    if not cfg.is_local(layer):
        return
    global_layers = [i for i in range(cfg.num_layers) if not cfg.is_local(i)]
    listed = ", ".join(map(str, global_layers))
    instead = (
        f"check a global layer ({listed}), e.g. layer={global_layers[0]}"
        if global_layers
        else "every layer is local here: check a model built with attention_window=0"
    )
    raise ValueError(
        f"block {layer} attends through a local window of {cfg.attention_window} (keys more than "
        f"{cfg.attention_window // 2} positions from the query are masked), which the [B, T] "
        f"padding mask given to {exercise} cannot say: {instead}"
    )


def without_rope(lab: Lab, exercise: str) -> None:
    """A ValueError for a RoPE model: `exercise`'s function computes q and k from x and is not
    told that the model turns them by position before the scores."""
    if lab.cfg.positional != "rope":
        return
    raise ValueError(
        f"this model turns q and k by their positions (RoPE) between the projection and the "
        f"scores, which the function of {exercise} is not given: check it on a model with "
        f"learned or sinusoidal positions (e.g. setup(EncoderConfig(positional='learned'))); "
        f"check_scores and check_head_attention give you RoPE's turned q and k"
    )


def run_check(
    lab: Lab,
    exercise: str,
    fn: Callable,
    args: tuple,
    expected: np.ndarray,
    axes: tuple[str, ...],
    *,
    layer: int | None,
    where: np.ndarray | None = None,
    mistakes: tuple[Mistake, ...] = (),
) -> CheckResult:
    axes_text = "[" + ", ".join(axes) + "]"
    outcome = call_student(
        fn, args, expected.shape, axes_text, exercise=exercise, time_limit=lab.time_limit
    )
    if outcome.values is None:
        return failure(exercise, outcome.problem, outcome.hint, layer)
    return compare(
        exercise,
        outcome.values,
        expected,
        axes,
        layer=layer,
        where=where,
        mistakes=mistakes,
        received_dtype=outcome.dtype,
        reference_dtype=lab.dtype,
    )


def query_key(lab: Lab, names: hooks.BlockHooks) -> tuple[str, str]:
    """The hooks of the q and k the scores are made of: turned by position (RoPE) where the
    model turns them, else straight from the projection ([B, H, T, dk] each)."""
    if lab.cfg.positional == "rope":
        return names.attn.rot_q, names.attn.rot_k
    return names.attn.q, names.attn.k


def raw_scores(lab: Lab, names: hooks.BlockHooks) -> np.ndarray:
    """q @ k^T from the live q and k (turned, with RoPE), unscaled and unmasked: [B, H, T, T]."""
    q, k = (lab.array(lab.trace[name]) for name in query_key(lab, names))
    return q @ k.swapaxes(-1, -2)


def seen_keys(lab: Lab, names: hooks.BlockHooks) -> np.ndarray:
    """[B, H, T, T] True where the query sees the key: a real key, inside a local window."""
    return np.isfinite(lab.array(lab.trace[names.attn.scores]))
