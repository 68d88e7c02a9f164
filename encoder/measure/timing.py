"""What every cost measure shares: the clock, waiting for the device, a time budget, medians.

The clock (`clock(device)`): on the CPU, the CPU time of the thread that runs the pass
(`time.thread_time`), so that on a shared machine the time other programs hold the cores is not
counted in whichever operation it happened to interrupt (measured here under load: a forward pass
of 337 ms wall-clock took 103 ms of CPU time, and per-operation medians of wall-clock time then
added up to a third of the pass). With several torch threads it counts the calling thread, which
joins every parallel kernel and spins while it waits for the others. On CUDA (and MPS) kernels run
after the Python call returns: the clock is wall-clock time, read after `synchronize`.

Every measure takes a `Budget` (wall-clock), so that a page calling it live gets an answer in
bounded time, with fewer repeats (or fewer points) when the machine is slow.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from encoder.core.said import N_


def synchronize(device: torch.device | str) -> None:
    """Wait for queued GPU work, so a timer measures the work rather than its launch."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


CLOCK_NAMES = {  # each clock's name (N_: the page says it in its language), then its function
    "thread": N_("CPU time of the thread running the pass") + " (time.thread_time)",
    "wall": N_("wall-clock time, device synchronized") + " (time.perf_counter)",
}


def clock_kind(device: torch.device | str) -> str:
    """ "thread" on the CPU, "wall" on a GPU (see the module docstring)."""
    return "thread" if torch.device(device).type == "cpu" else "wall"


def clock(device: torch.device | str) -> Callable[[], float]:
    """The clock every time measure on `device` reads, in seconds."""
    return time.thread_time if clock_kind(device) == "thread" else time.perf_counter


@dataclass
class Budget:
    """Seconds a measure may take, counted from when it was made; all spent once `stop` is set
    (a server that ends: the measure ends within a step)."""

    seconds: float
    started: float = field(default_factory=time.perf_counter)
    stop: threading.Event | None = None

    @property
    def spent(self) -> float:
        return time.perf_counter() - self.started

    @property
    def left(self) -> float:
        if self.stop is not None and self.stop.is_set():
            return 0.0
        return self.seconds - self.spent

    @property
    def expired(self) -> bool:
        return self.left <= 0

    def share(self, fraction: float) -> Budget:
        """A budget of `fraction` of what is left, starting now (stopped with this one)."""
        return Budget(max(0.0, self.left) * fraction, stop=self.stop)


def timed_ms(run: Callable[[], object], device: torch.device | str) -> float:
    """Milliseconds one call of `run` takes on the device's clock, its device work included."""
    now = clock(device)
    synchronize(device)
    started = now()
    run()
    synchronize(device)
    return (now() - started) * 1000


def median_ms(
    run: Callable[[], object],
    device: torch.device | str,
    *,
    repeats: int,
    warmup: int,
    budget: Budget | None = None,
) -> float:
    """The median time of `run` over `repeats` calls after `warmup` untimed ones; fewer repeats
    (at least one) once the budget is spent."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(max(1, repeats)):
        times.append(timed_ms(run, device))
        if budget is not None and budget.expired:
            break
    return statistics.median(times)


@contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """The model in eval mode (dropout off) for the block, then back in the mode it was in."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def random_ids(
    vocab_size: int, batch: int, tokens: int, seed: int, device: torch.device | str
) -> torch.Tensor:
    """[batch, tokens] token ids drawn uniformly from the vocabulary, the same for the same seed."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (batch, tokens), generator=generator).to(device)
