"""encoder.exercises: the reference solutions pass on every architecture, each common mistake
fails with its own hint, and the first differing position is the right one."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import re
import signal
import threading
import time

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, exercises
from encoder.exercises import mistakes as wrong
from encoder.exercises import student
from tests.encoder import exercise_solutions as ref
from tests.encoder.helpers import randomise_norms

SMALL = dict(d_model=16, num_heads=4, num_layers=2, d_ff=32)
ARCHITECTURES = {
    "pre-gelu-layernorm": dict(norm_first=True, activation="gelu", norm_type="layernorm"),
    "post-relu-layernorm": dict(norm_first=False, activation="relu", norm_type="layernorm"),
    "pre-relu-rmsnorm": dict(norm_first=True, activation="relu", norm_type="rmsnorm"),
    "post-gelu-rmsnorm": dict(norm_first=False, activation="gelu", norm_type="rmsnorm"),
}
TEXT = ["The cat sat on the warm mat.", "Dogs bark."]  # 10 and 5 tokens: padding


def lab_for(name: str, backend: str = "numpy", seed: int = 1) -> exercises.Lab:
    """A random small model of architecture `name`, norms with non-trivial gain and bias."""
    cfg = EncoderConfig(**SMALL, **ARCHITECTURES[name], seed=seed)
    model = exercises.setup(cfg, TEXT).model
    randomise_norms(model)  # gain 1 and bias 0 would hide a forgotten gain
    return exercises.setup(model, TEXT, backend=backend)


@pytest.fixture(scope="module", params=list(ARCHITECTURES))
def lab(request) -> exercises.Lab:
    return lab_for(request.param)


@pytest.fixture(scope="module")
def pre_lab() -> exercises.Lab:
    return lab_for("pre-gelu-layernorm")


def test_the_lab_has_padding_and_the_live_trace(lab: exercises.Lab) -> None:
    assert lab.batch.lengths == [10, 5]
    assert lab.key_is_token.tolist()[1] == [True] * 5 + [False] * 5
    assert lab.trace.output.shape == (2, 10, 16)


def test_every_reference_solution_passes_on_every_architecture(lab: exercises.Lab) -> None:
    norm_check = (
        (exercises.check_layer_norm, ref.layer_norm)
        if lab.cfg.norm_type == "layernorm"
        else (exercises.check_rms_norm, ref.rms_norm)
    )
    checks = [
        (exercises.check_softmax, ref.softmax),
        (exercises.check_scores, ref.scores),
        (exercises.check_head_attention, ref.head_attention),
        (exercises.check_multi_head_attention, ref.multi_head_attention),
        norm_check,
        (exercises.check_feed_forward, ref.feed_forward),
        (exercises.check_block, ref.block),
        (exercises.check_padding_mask, ref.padding_mask),
    ]
    for layer in (0, 1):
        for check, solution in checks:
            result = check(solution, lab, layer)
            assert result.passed, (check.__name__, layer, repr(result))
            assert result.largest_difference < 1e-4
    assert exercises.check_positions(ref.positions, lab).passed
    assert exercises.check_head_attention(ref.head_attention, lab, 1, head=3).passed


@pytest.mark.parametrize(
    ("check", "mistaken", "mistake", "hint"),
    [
        (exercises.check_softmax, ref.softmax_wrong_axis, "softmax axis", wrong.WRONG_AXIS),
        (exercises.check_scores, ref.scores_no_sqrt, "missing sqrt", wrong.MISSING_SQRT),
        (exercises.check_head_attention, ref.head_attention_no_sqrt, "missing sqrt",
         wrong.MISSING_SQRT),
        (exercises.check_head_attention, ref.head_attention_wrong_axis, "softmax axis",
         wrong.WRONG_AXIS),
        (exercises.check_head_attention, ref.head_attention_mask_after_softmax,
         "mask after softmax", wrong.MASK_AFTER_SOFTMAX),
        (exercises.check_multi_head_attention, ref.multi_head_attention_no_sqrt, "missing sqrt",
         wrong.MISSING_SQRT),
        (exercises.check_layer_norm, ref.layer_norm_bessel, "Bessel's correction", wrong.BESSEL),
        (exercises.check_feed_forward, ref.feed_forward_other_activation, "other activation",
         "this model's feed-forward uses GELU"),
        (exercises.check_block, ref.block_swapped, "pre/post swapped", wrong.NORM_SWAPPED),
        (exercises.check_positions, ref.positions_swapped, "sin and cos swapped",
         wrong.SIN_COS_SWAPPED),
        (exercises.check_padding_mask, ref.padding_mask_after_softmax, "mask after softmax",
         wrong.MASK_AFTER_SOFTMAX),
    ],
)  # fmt: skip
def test_each_common_mistake_fails_with_its_hint(pre_lab, check, mistaken, mistake, hint) -> None:
    result = check(mistaken, pre_lab)
    assert not result.passed
    assert result.mistake == mistake
    assert hint in result.hint
    assert f"hint: {result.hint}" in repr(result)


def test_rms_norm_with_the_mean_subtracted_is_named() -> None:
    result = exercises.check_rms_norm(ref.rms_norm_centred, lab_for("pre-relu-rmsnorm"))
    assert (result.passed, result.mistake) == (False, "mean subtracted")


def test_post_norm_block_written_as_pre_norm_is_named() -> None:
    post = lab_for("post-relu-layernorm")
    result = exercises.check_block(ref.block_swapped, post, layer=1)
    assert (result.passed, result.mistake, result.layer) == (False, "pre/post swapped", 1)


def test_the_first_differing_position_and_the_largest_difference(pre_lab) -> None:
    def off_by_a_bit(*args):
        out = ref.block(*args)
        out[1, 2, 5] += 0.01  # first in reading order
        out[1, 3, 0] -= 0.5  # the largest
        return out

    result = exercises.check_block(off_by_a_bit, pre_lab, layer=1)
    expected = pre_lab.trace["blocks.1.hook_resid_post"][1, 2, 5].item()
    assert not result.passed
    assert result.position == {"sentence": 1, "token": 2, "feature": 5}
    assert result.where == "layer 1, sentence 1, token 2, feature 5"
    assert result.expected == pytest.approx(expected, abs=1e-6)
    assert result.received == pytest.approx(expected + 0.01, abs=1e-4)
    assert result.largest_difference == pytest.approx(0.5, abs=1e-4)
    assert result.mistake is None and result.hint == exercises.result.GENERIC_HINT
    text = repr(result)
    assert "first difference at layer 1, sentence 1, token 2, feature 5" in text
    assert f"expected {result.expected:.6g}, received {result.received:.6g}" in text


def test_scores_are_compared_on_real_keys_only(pre_lab) -> None:
    def masked_scores(q, k):  # the model's own -inf on padded keys is not asked for, nor wrong
        return np.where(pre_lab.key_is_token[:, None, None, :], ref.scores(q, k), -np.inf)

    assert exercises.check_scores(masked_scores, pre_lab).passed


def test_a_students_error_wrong_shape_or_none_is_a_result(pre_lab) -> None:
    def raises(scores):
        return scores.nonexistent_method()

    def stub(scores):
        raise NotImplementedError

    cases = {
        raises: "your function raised AttributeError",
        stub: "not written yet",
        (lambda scores: None): "returned None",
        (lambda scores: scores[..., 0]): "wrong shape: expected (2, 4, 10, 10)",
        (lambda scores: "<b>soft</b>"): "returned str, not numbers",
    }
    for fn, message in cases.items():
        result = exercises.check_softmax(fn, pre_lab)
        assert not result.passed and message in result.message, repr(result)
    result = exercises.check_softmax(raises, pre_lab)
    assert "line " in result.message and "nonexistent_method" in result.message


def test_axes_in_another_order_get_a_transpose_hint(pre_lab) -> None:
    result = exercises.check_multi_head_attention(
        lambda *args: ref.multi_head_attention(*args).transpose(0, 2, 1), pre_lab
    )
    assert "wrong shape" in result.message and "transposes" in result.hint


def test_the_html_result_escapes_what_the_student_wrote(pre_lab) -> None:
    def raises(scores):
        raise ValueError("<script>alert(1)</script>")

    page = exercises.check_softmax(raises, pre_lab)._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert 'data-passed="false"' in page
    passed = exercises.check_softmax(ref.softmax, pre_lab)._repr_html_()
    assert 'data-passed="true"' in passed and "passed" in passed


def test_the_torch_backend_gives_tensors() -> None:
    lab = lab_for("post-relu-layernorm", backend="torch")
    seen = []

    def torch_norm(x, gain, bias, eps):
        seen.append(type(x))
        return ref.torch_layer_norm(x, gain, bias, eps)

    assert exercises.check_layer_norm(torch_norm, lab).passed
    assert seen == [torch.Tensor]
    result = exercises.check_layer_norm(lambda x, g, b, e: x.var(-1, keepdim=True) * 0 + x, lab)
    assert not result.passed and result.position


def test_a_lab_that_lacks_the_piece_says_so() -> None:
    rms = lab_for("pre-relu-rmsnorm")
    with pytest.raises(ValueError, match="this model's norms are rmsnorm"):
        exercises.check_layer_norm(ref.layer_norm, rms)
    with pytest.raises(ValueError, match="layers 0..1"):
        exercises.check_block(ref.block, rms, layer=2)
    one = exercises.setup(EncoderConfig(**SMALL), "One sentence.")
    with pytest.raises(ValueError, match="no padding"):
        exercises.check_padding_mask(ref.padding_mask, one)
    learned = exercises.setup(EncoderConfig(**SMALL, positional="learned"), TEXT)
    with pytest.raises(ValueError, match="positions are learned"):
        exercises.check_positions(ref.positions, learned)
    with pytest.raises(ValueError, match="backend='jax'"):
        exercises.setup(EncoderConfig(**SMALL), TEXT, backend="jax")


def test_minilm_checks_the_pretrained_block() -> None:
    lab = exercises.setup("minilm", TEXT)
    assert lab.cfg.norm_first is False
    assert exercises.check_block(ref.block, lab, layer=5).passed
    assert exercises.check_layer_norm(ref.layer_norm_bessel, lab).mistake == "Bessel's correction"


def line_of(fn, text: str) -> int:
    """The file line of `fn`'s source line that holds `text`."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_an_error_is_reported_at_the_students_own_line(pre_lab) -> None:
    def softmax(scores):
        shifted = scores - scores.max(-1, keepdims=True)
        return np.softmax(shifted)

    result = exercises.check_softmax(softmax, pre_lab)
    line = line_of(softmax, "np.softmax(shifted)")
    assert result.message.splitlines() == [
        "your function raised AttributeError: module 'numpy' has no attribute 'softmax'",
        f"in softmax, line {line}: return np.softmax(shifted) (raised inside numpy)",
    ]
    assert repr(result).splitlines()[1:3] == result.message.splitlines()

    def normalise(rows):  # the student's own helper: its line is the innermost of theirs
        keys = rows.shape[4]  # [B, H, T, T] has no axis 4
        return rows / keys

    def softmax_with_helper(scores):
        return normalise(np.exp(scores))

    message = exercises.check_softmax(softmax_with_helper, pre_lab).message
    assert message.splitlines() == [
        "your function raised IndexError: tuple index out of range",
        f"in normalise, line {line_of(normalise, 'rows.shape[4]')}: keys = rows.shape[4]  "
        "# [B, H, T, T] has no axis 4",
    ]


def softmax_in(dtype):
    return lambda scores: ref.softmax(scores).astype(dtype)


def test_a_float16_result_fails_with_its_precision_and_numbers(pre_lab) -> None:
    expected = pre_lab.trace["blocks.0.attn.hook_pattern"].double().numpy()  # [B, H, T, T]
    rounded = expected.astype(np.float16).astype(np.float64)
    result = exercises.check_softmax(softmax_in(np.float16), pre_lab)
    assert not result.passed and result.mistake == "float16 precision"
    assert result.largest_difference == pytest.approx(np.abs(rounded - expected).max(), rel=1e-6)
    rounding = np.abs(rounded - expected).max()
    for words in (
        "your result is float16, less precise than the model's float32",
        "about 3 significant digits (steps of 0.00098 near 1)",
        f"rounding the expected values to float16 alone moves them by up to {rounding:.2g}",
        f"your largest difference is {result.largest_difference:.3g}, "
        "the tolerance 0.0001 + 0.0001 × |expected|",
        "Keep the float64 your inputs arrive in",
    ):
        assert words in result.hint, result.hint
    assert f"hint: {result.hint}" in repr(result)
    assert exercises.check_softmax(softmax_in(np.float32), pre_lab).passed  # as fine as float32


def test_bfloat16_and_integer_results_say_what_they_lose() -> None:
    lab = lab_for("pre-gelu-layernorm", backend="torch")
    result = exercises.check_layer_norm(
        lambda *args: ref.torch_layer_norm(*args).to(torch.bfloat16), lab
    )
    assert result.mistake == "bfloat16 precision"
    assert "bfloat16, less precise than the model's float32" in result.hint
    assert "about 2 significant digits (steps of 0.0078 near 1)" in result.hint

    def positions(T, d):
        table = np.zeros((T, d), dtype=int)  # the classic: sines stored into an integer array
        table[:] = ref.positions(T, d)
        return table

    result = exercises.check_positions(positions, lab)
    assert (result.passed, result.mistake) == (False, "int64 precision")
    assert result.position == {"position": 1, "feature": 0}  # sin(1) = 0.84 became 0
    assert (result.expected, result.received) == (pytest.approx(math.sin(1)), 0.0)
    assert "your result is int64, which holds no fractions (0.84 becomes 0)" in result.hint
    assert f"your largest difference is {result.largest_difference:.3g}" in result.hint


def test_a_wrong_float64_result_gets_no_precision_hint(pre_lab) -> None:
    result = exercises.check_softmax(lambda s: ref.softmax(s) + 1e-3, pre_lab)
    assert result.mistake is None and "precision" not in result.hint


LIMIT_S = 0.5
SLACK_S = 1.0  # a loaded 2-core machine


def never_returns(scores):
    steps = 0
    while True:
        try:
            steps += 1
        except Exception:  # the student's own catch-all does not swallow the stop
            steps = 0


def assert_in_the_loop(at: str) -> None:
    """`at` names a line of never_returns, with its source, where the stop found it."""
    lines, first = inspect.getsourcelines(never_returns)
    found = re.fullmatch(r"in never_returns, line (\d+): (.+)", at)
    assert found, at
    line = int(found[1])
    assert first < line < first + len(lines)
    assert found[2] == lines[line - first].strip()


def checked_in(lab, fn):
    start = time.monotonic()
    result = exercises.check_softmax(fn, lab)
    return result, time.monotonic() - start


@contextlib.contextmanager
def someone_elses_alarm(seconds: float):
    """A SIGALRM timer of another library's (pytest-timeout sets one), theirs put back after."""
    fired = []

    def record(signum, frame):
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, record)
    before = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield record, fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, *before)
        signal.signal(signal.SIGALRM, previous)


def test_a_function_that_never_returns_is_stopped_and_the_next_check_works(pre_lab) -> None:
    lab = dataclasses.replace(pre_lab, time_limit=LIMIT_S)
    with someone_elses_alarm(60) as (handler, fired):
        result, took = checked_in(lab, never_returns)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert signal.getsignal(signal.SIGALRM) is handler  # theirs is back,
        assert 60 - took - 0.1 < left <= 60 - LIMIT_S  # less the time the check took
    assert not fired
    assert LIMIT_S <= took < LIMIT_S + SLACK_S
    assert not result.passed
    stopped, at = result.message.splitlines()
    assert stopped == (
        "stopped after 0.5 s, the time limit of a check: your function for softmax was still "
        "running"
    )
    assert_in_the_loop(at)
    assert "lab.time_limit = 2" in result.hint
    assert exercises.check_softmax(ref.softmax, lab).passed


def test_off_the_main_thread_a_thread_runs_it_and_is_stopped(pre_lab) -> None:
    lab = dataclasses.replace(pre_lab, time_limit=LIMIT_S)
    results = []
    worker = threading.Thread(target=lambda: results.append(checked_in(lab, never_returns)))
    worker.start()
    worker.join(10)
    ((result, took),) = results
    assert LIMIT_S <= took < LIMIT_S + SLACK_S
    assert_in_the_loop(result.message.splitlines()[1])
    assert "background" not in result.hint  # asked to stop, it stopped
    assert not [t for t in threading.enumerate() if t.name == "exercise check"]
    # stuck in C (a long sleep), it cannot be stopped: the result says it still runs
    worker = threading.Thread(
        target=lambda: results.append(checked_in(lab, lambda scores: time.sleep(3)))
    )
    worker.start()
    worker.join(10)
    result, took = results[1]
    assert took < LIMIT_S + student.STOP_WAIT_S + SLACK_S
    assert "could not be stopped and still runs in the background" in result.hint
    assert exercises.check_softmax(ref.softmax, lab).passed


def test_a_time_limit_must_be_seconds_above_zero(pre_lab) -> None:
    with pytest.raises(ValueError, match="time_limit=0"):
        exercises.setup(EncoderConfig(**SMALL), TEXT, time_limit=0)
    with pytest.raises(ValueError, match="lab.time_limit = 60"):
        exercises.check_softmax(ref.softmax, dataclasses.replace(pre_lab, time_limit=math.inf))
