"""What a check says back: passed, or where the student's numbers first differ and why.

`compare` lays the student's array over the live model's, finds the first position outside the
tolerance (in the order NumPy walks the array), the largest difference, and the first known
mistake whose numbers the student's array matches. The mistakes are computed, not guessed: each
`Mistake` holds what that mistake would have produced on the same inputs. A result in a dtype
less precise than the model's (float16, bfloat16, integers) fails with that as its hint.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from encoder.core.said import Said
from encoder.exercises.written import general

RTOL = 1e-4
ATOL = 1e-4
TOLERANCE = f"|received - expected| <= {ATOL:g} + {RTOL:g} * |expected|"
GENERIC_HINT = Said(
    "No common mistake gives these numbers: print a small slice of your result beside the "
    "expected one and walk through your function step by step."
)


@dataclass(frozen=True)
class Mistake:
    """A common mistake and the numbers it would give on the checker's inputs."""

    name: str
    hint: str
    values: np.ndarray


@dataclass(frozen=True)
class CheckResult:
    """One check of a student's function against the live model.

    passed: whether every number is within the tolerance. position: where the first number
    outside it sits ({axis name: index}, e.g. sentence, token, feature); expected/received: the
    two numbers there; largest_difference: over every compared number; hint: the common mistake
    the student's numbers match (or advice); message: what went wrong when the function could not
    be compared at all (it raised, ran past the lab's time limit, returned no array, or the wrong
    shape), with the student's own line where there is one.
    """

    exercise: str
    passed: bool
    layer: int | None = None
    position: dict[str, int] = field(default_factory=dict)
    expected: float | None = None
    received: float | None = None
    largest_difference: float | None = None
    mistake: str | None = None
    hint: str = ""
    message: str = ""
    tolerance: str = TOLERANCE

    def __bool__(self) -> bool:
        return self.passed

    @property
    def where(self) -> str:
        """'layer 0, sentence 1, token 3, feature 5'."""
        parts = [] if self.layer is None else [f"layer {self.layer}"]
        parts += [f"{axis} {index}" for axis, index in self.position.items()]
        return ", ".join(parts)

    def lines(self) -> list[str]:
        """The result as a student reads it, one statement a line."""
        if self.passed:
            return [f"✓ {self.exercise}: passed (largest difference {self.largest_difference:.2e})"]
        lines = [f"✗ {self.exercise}: not yet"]
        lines += self.message.splitlines()
        if self.position:
            lines += [
                f"first difference at {self.where}:",
                f"  expected {self.expected:.6g}, received {self.received:.6g}",
                f"largest difference {self.largest_difference:.3g} ({self.tolerance})",
            ]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return lines

    def __repr__(self) -> str:
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#b42318"
        first, *rest = (html.escape(line) for line in self.lines())
        body = "".join(f"<div>{line}</div>" for line in rest)
        return (
            f'<div data-testid="check-result" data-passed="{str(self.passed).lower()}" '
            f'style="border-left:4px solid {colour};padding:4px 10px;font-family:monospace">'
            f'<div style="color:{colour};font-weight:bold">{first}</div>{body}</div>'
        )


def failure(exercise: str, message: str, hint: str = "", layer: int | None = None) -> CheckResult:
    """A result for a function that could not be compared (raised, no array, wrong shape)."""
    return CheckResult(exercise=exercise, passed=False, layer=layer, message=message, hint=hint)


def _close(received: np.ndarray, expected: np.ndarray) -> np.ndarray:
    return np.isclose(received, expected, rtol=RTOL, atol=ATOL, equal_nan=True)


def loses_precision(dtype: torch.dtype, reference: torch.dtype) -> bool:
    """Whether numbers in `dtype` are coarser than the model's `reference` floats: fewer
    significant bits (float16, bfloat16 against float32), or no fractions at all (int, bool)."""
    if not reference.is_floating_point or dtype.is_complex:
        return False
    if not dtype.is_floating_point:
        return True
    return torch.finfo(dtype).eps > torch.finfo(reference).eps


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def precision_hint(
    dtype: torch.dtype,
    reference: torch.dtype,
    expected: np.ndarray,
    compared: np.ndarray,
    largest: float,
) -> str:
    """Why a result in a less precise `dtype` fails, with its numbers, and what to do (a Said)."""
    name, model = _dtype_name(dtype), _dtype_name(reference)
    numbers = dict(
        name=name, model=model, largest=general(largest, 3), atol=general(ATOL, 6),
        rtol=general(RTOL, 6),
    )  # fmt: skip
    if dtype == torch.bool:
        return Said(
            "your result is {name}, which holds only True and False, coarser than the model's "
            "{model}: your largest difference is {largest}, the tolerance {atol} + {rtol} × "
            "|expected|. Return floats: build the array as float64 (np.zeros(shape), not "
            "dtype=int) and divide with /, not //",
            **numbers,
        )
    if not dtype.is_floating_point:
        return Said(
            "your result is {name}, which holds no fractions (0.84 becomes 0), coarser than the "
            "model's {model}: your largest difference is {largest}, the tolerance {atol} + "
            "{rtol} × |expected|. Return floats: build the array as float64 (np.zeros(shape), "
            "not dtype=int) and divide with /, not //",
            **numbers,
        )
    eps = torch.finfo(dtype).eps
    rounded = torch.from_numpy(expected).to(dtype).double().numpy()  # what `dtype` can hold
    finite = compared & np.isfinite(expected)
    with np.errstate(invalid="ignore"):
        rounding = float(np.abs(rounded - expected)[finite].max(initial=0.0))
    numbers |= dict(digits=round(-math.log10(eps)), step=general(eps, 2))
    if (_close(rounded, expected) | ~finite).all():
        return Said(
            "your result is {name}, less precise than the model's {model}: {name} keeps about "
            "{digits} significant digits (steps of {step} near 1); rounding the expected values "
            "to {name} stays within the tolerance, so the rest comes from steps computed in "
            "{name} or from another mistake; your largest difference is {largest}, the "
            "tolerance {atol} + {rtol} × |expected|. Keep the float64 your inputs arrive in: "
            "remove the .astype(...), dtype=..., .half() or .to(...) that makes {name}, then "
            "check again",
            **numbers,
        )
    return Said(
        "your result is {name}, less precise than the model's {model}: {name} keeps about "
        "{digits} significant digits (steps of {step} near 1); rounding the expected values to "
        "{name} alone moves them by up to {rounding}; your largest difference is {largest}, the "
        "tolerance {atol} + {rtol} × |expected|. Keep the float64 your inputs arrive in: remove "
        "the .astype(...), dtype=..., .half() or .to(...) that makes {name}, then check again",
        rounding=general(rounding, 2),
        **numbers,
    )


def compare(
    exercise: str,
    received: np.ndarray,
    expected: np.ndarray,
    axes: tuple[str, ...],
    *,
    layer: int | None = None,
    where: np.ndarray | None = None,
    mistakes: tuple[Mistake, ...] = (),
    received_dtype: torch.dtype | None = None,
    reference_dtype: torch.dtype = torch.float32,
) -> CheckResult:
    """Check `received` against `expected` (same shape, named by `axes`) where `where` is True
    (default everywhere); name the first mistake in `mistakes` the student's numbers match, or
    the precision lost when the student's `received_dtype` is coarser than the model's
    `reference_dtype`."""
    compared = (
        np.ones(expected.shape, bool) if where is None else np.broadcast_to(where, expected.shape)
    )
    outside = ~_close(received, expected) & compared
    with np.errstate(invalid="ignore"):  # inf - inf where both are -inf
        gap = np.abs(received - expected)
    same_infinity = np.isinf(expected) & (received == expected)
    gap = np.where(same_infinity | ~compared, 0.0, np.nan_to_num(gap, nan=np.inf))
    largest = float(gap.max()) if gap.size else 0.0
    if not outside.any():
        return CheckResult(exercise=exercise, passed=True, layer=layer, largest_difference=largest)
    index = tuple(int(i) for i in np.argwhere(outside)[0])
    if received_dtype is not None and loses_precision(received_dtype, reference_dtype):
        mistake = f"{_dtype_name(received_dtype)} precision"
        hint = precision_hint(received_dtype, reference_dtype, expected, compared, largest)
    else:
        matched = next(
            (m for m in mistakes if (_close(received, m.values) | ~compared).all()),
            None,
        )
        mistake, hint = (matched.name, matched.hint) if matched else (None, GENERIC_HINT)
    return CheckResult(
        exercise=exercise,
        passed=False,
        layer=layer,
        position=dict(zip(axes, index, strict=True)),
        expected=float(expected[index]),
        received=float(received[index]),
        largest_difference=largest,
        mistake=mistake,
        hint=hint,
    )
