"""Calling the student's function: within a time limit, an error reported at the student's own
line, and what came back (its numbers and its dtype), never a traceback.

The time limit: on the main thread of a POSIX Python (a Jupyter or IPython kernel, a script) a
SIGALRM timer (signal.setitimer) raises TimeLimitReached inside the student's code, which stops a
pure-Python loop at its next line; an alarm set by someone else (pytest-timeout) is put back as
it was, minus the time spent. Elsewhere (Windows, another thread) the function runs in a daemon
thread that is asked to stop the same way (CPython's PyThreadState_SetAsyncExc); code stuck in C
cannot be stopped from outside, so it may keep running in the background: the result says so.
"""

from __future__ import annotations

import ctypes
import linecache
import math
import os
import signal
import sys
import sysconfig
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType

import numpy as np
import torch

from encoder.core.said import Said
from encoder.exercises.written import general

TIME_LIMIT_S = 30.0  # a check's numbers are small: a slow loop-by-loop solution takes seconds
STOP_WAIT_S = 1.0  # how long a stopped thread is given to finish


class TimeLimitReached(BaseException):
    """Raised inside the student's function when its check's time is up: a BaseException, so
    the student's own `except Exception` does not swallow it."""


class StillRunning(TimeLimitReached):
    """The time is up and the thread running the student's function did not stop."""


@dataclass(frozen=True)
class Outcome:
    """What calling the student's function gave: numbers (float64) and the dtype they came back
    in, or why there are none."""

    values: np.ndarray | None = None
    dtype: torch.dtype | None = None
    problem: str = ""  # a Said, as the hint
    hint: str = ""


def _library_folders() -> tuple[str, ...]:
    """Folders whose code is not the student's: Python's own, installed packages, this one."""
    paths = sysconfig.get_paths()
    folders = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders.update(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))
    folders.add(str(Path(__file__).resolve().parents[1]))  # encoder/
    return tuple(os.path.realpath(folder) + os.sep for folder in folders)


LIBRARY_FOLDERS = _library_folders()


def _is_students(filename: str) -> bool:
    """Code the student wrote: a notebook cell, their own file, anything not installed."""
    if filename.startswith("<frozen"):
        return False
    return not os.path.realpath(filename).startswith(LIBRARY_FOLDERS)


def _frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """A traceback's (frame, line) pairs, outermost first."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def students_line(tb: TracebackType | None) -> str:
    """The innermost line of the student's own code in a traceback, as 'in softmax, line 2:
    return np.softmax(scores)' (the line of their cell or file); empty when none is theirs."""
    theirs = [(f, line) for f, line in _frames(tb) if _is_students(f.f_code.co_filename)]
    if not theirs:
        return ""
    frame, line = theirs[-1]
    source = linecache.getline(frame.f_code.co_filename, line, frame.f_globals).strip()
    function = frame.f_code.co_name
    if source:
        return Said("in {function}, line {line}: {source}", function=function, line=line,
                    source=source)  # fmt: skip
    return Said("in {function}, line {line}", function=function, line=line)


def raised_where(error: BaseException) -> str:
    """Where the student's code raised `error`: their line, and the library it came from when
    it was raised inside one ('in softmax, line 2: ... (raised inside numpy)')."""
    frames = _frames(error.__traceback__)
    innermost = frames[-1][0] if frames else None
    if innermost is None or _is_students(innermost.f_code.co_filename):
        return students_line(error.__traceback__)
    library = innermost.f_globals.get("__name__", "?").split(".")[0]
    line = students_line(error.__traceback__)
    if line:  # the student's line, said whole in its own Said
        return Said("{line} (raised inside {library})", line=line, library=library)
    return Said("raised inside {library}", library=library)


def _stop_thread(thread: threading.Thread) -> None:
    """Ask a thread to raise TimeLimitReached at its next Python line (CPython only)."""
    set_async_exc = getattr(getattr(ctypes, "pythonapi", None), "PyThreadState_SetAsyncExc", None)
    if set_async_exc is not None and thread.ident is not None:
        set_async_exc(ctypes.c_ulong(thread.ident), ctypes.py_object(TimeLimitReached))


def _call_in_thread(fn: Callable, args: tuple, seconds: float) -> object:
    """fn(*args) in a daemon thread, its exception raised here; after `seconds` the thread is
    asked to stop (TimeLimitReached from the student's line), or StillRunning if it does not."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["returned"] = fn(*args)
        except BaseException as error:  # handed to the caller's thread
            box["error"] = error

    thread = threading.Thread(target=target, name="exercise check", daemon=True)
    thread.start()
    try:
        thread.join(seconds)
    except BaseException:  # Ctrl-C (Jupyter's interrupt) while waiting: stop the thread too
        _stop_thread(thread)
        raise
    if thread.is_alive():
        _stop_thread(thread)
        thread.join(STOP_WAIT_S)
        if thread.is_alive():
            raise StillRunning
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("returned")


def _call_with_alarm(fn: Callable, args: tuple, seconds: float) -> object:
    """fn(*args) with a SIGALRM after `seconds` (main thread, POSIX); an outer timer and handler
    are restored afterwards, its remaining time reduced by ours."""
    running = True

    def stop(signum: int, frame: object) -> None:
        if running:
            raise TimeLimitReached

    previous = signal.signal(signal.SIGALRM, stop)
    outer_left, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        try:
            return fn(*args)
        finally:
            running = False
    finally:  # our timer is one-shot: once it has fired nothing interrupts this
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            left = max(outer_left - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)


def _alarm_usable(seconds: float) -> bool:
    """SIGALRM can stop the function: POSIX, the main thread, a Python-level handler to put
    back, and no outer alarm due before ours (that one would come first: a thread instead)."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        return False
    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    return signal.getsignal(signal.SIGALRM) is not None and not 0 < outer_left <= seconds


def call_within(fn: Callable, args: tuple, seconds: float) -> object:
    """fn(*args), raising TimeLimitReached (or StillRunning) if it runs past `seconds`; its own
    exceptions pass through."""
    if _alarm_usable(seconds):
        return _call_with_alarm(fn, args, seconds)
    return _call_in_thread(fn, args, seconds)


def validate_time_limit(seconds: float) -> None:
    """A ValueError unless `seconds` is a time limit a check can use (above 0, finite)."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0 < seconds < math.inf
    ):
        raise ValueError(
            f"time_limit={seconds!r}: give the seconds a check may take, e.g. lab.time_limit = 60"
        )


def _stopped(exercise: str, seconds: float, stopped: TimeLimitReached) -> Outcome:
    where = students_line(stopped.__traceback__)
    limit, longer = general(seconds, 6), general(4 * seconds, 6)
    if where:
        problem = Said(
            "stopped after {seconds} s, the time limit of a check: your function for {exercise} "
            "was still running\n{where}",
            seconds=limit,
            exercise=exercise,
            where=where,
        )
    else:
        problem = Said(
            "stopped after {seconds} s, the time limit of a check: your function for {exercise} "
            "was still running",
            seconds=limit,
            exercise=exercise,
        )
    if isinstance(stopped, StillRunning):
        hint = Said(
            "look for a loop that never ends (a while whose condition never turns false); if your "
            "code is only slow, give your lab's checks longer, e.g. lab.time_limit = {longer}. "
            "It could not be stopped and still runs in the background: restart Python "
            "(in Jupyter: Kernel > Restart) to end it",
            longer=longer,
        )
    else:
        hint = Said(
            "look for a loop that never ends (a while whose condition never turns false); if your "
            "code is only slow, give your lab's checks longer, e.g. lab.time_limit = {longer}",
            longer=longer,
        )
    return Outcome(problem=problem, hint=hint)


def _as_numbers(returned: object) -> tuple[np.ndarray, torch.dtype | None]:
    """What the student returned as float64 NumPy, and the dtype it came in (None when torch
    has no such dtype). Raises TypeError or ValueError when it is not numbers."""
    if isinstance(returned, torch.Tensor):
        return returned.detach().cpu().double().numpy(), returned.dtype
    array = np.asarray(returned)
    values = np.asarray(array, dtype=np.float64)
    try:
        dtype = torch.from_numpy(np.empty(0, array.dtype)).dtype
    except TypeError:  # a dtype torch lacks (object, strings that parsed as numbers)
        dtype = None
    return values, dtype


def call_student(
    fn: Callable,
    args: tuple,
    expected_shape: tuple[int, ...],
    axes: str,
    *,
    exercise: str,
    time_limit: float,
) -> Outcome:
    """Call the student's function within `time_limit` seconds; an exception, a time-out, a
    non-array or a wrong shape is an Outcome with a problem, never a traceback. axes names the
    expected shape's axes ("[B, T, d]")."""
    validate_time_limit(time_limit)
    if not callable(fn):
        return Outcome(problem=Said("expected your function, got {kind}", kind=type(fn).__name__))
    try:
        returned = call_within(fn, args, time_limit)
    except NotImplementedError:
        return Outcome(problem=Said("not written yet: your function raises NotImplementedError"))
    except TimeLimitReached as stopped:
        return _stopped(exercise, time_limit, stopped)
    except Exception as error:  # the student's code: any error is a result, not a traceback
        where, kind = raised_where(error), type(error).__name__
        if where:
            raised = Said("your function raised {kind}: {error}\n{where}",
                          kind=kind, error=str(error), where=where)  # fmt: skip
        else:
            raised = Said("your function raised {kind}: {error}", kind=kind, error=str(error))
        return Outcome(problem=raised)
    if returned is None:
        return Outcome(problem=Said("your function returned None: did you forget `return`?"))
    try:
        values, dtype = _as_numbers(returned)
    except (TypeError, ValueError):
        return Outcome(
            problem=Said("your function returned {kind}, not numbers", kind=type(returned).__name__)
        )
    if values.shape != expected_shape:
        hint = ""
        if sorted(values.shape) == sorted(expected_shape):
            hint = Said("the axes are all there but in another order: check your transposes")
        return Outcome(
            problem=Said("wrong shape: expected {expected} {axes}, received {received}",
                         expected=expected_shape, axes=axes, received=values.shape),
            hint=hint,
        )  # fmt: skip
    return Outcome(values=values, dtype=dtype)
