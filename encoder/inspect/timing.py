"""What every cost measure shares: waiting for the device, a time budget, medians of timed calls.

On CUDA (and MPS) kernels run after the Python call returns; a timer reads the work only after
`synchronize`. Every measure here takes a `Budget`, so that a page calling it live gets an answer
in bounded time, with fewer repeats (or fewer points) when the machine is slow.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn


def synchronize(device: torch.device | str) -> None:
    """Wait for queued GPU work, so a timer measures the work rather than its launch."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


@dataclass
class Budget:
    """Seconds a measure may take, counted from when it was made."""

    seconds: float
    started: float = field(default_factory=time.perf_counter)

    @property
    def spent(self) -> float:
        return time.perf_counter() - self.started

    @property
    def left(self) -> float:
        return self.seconds - self.spent

    @property
    def expired(self) -> bool:
        return self.left <= 0

    def share(self, fraction: float) -> Budget:
        """A budget of `fraction` of what is left, starting now."""
        return Budget(max(0.0, self.left) * fraction)


def timed_ms(run: Callable[[], object], device: torch.device | str) -> float:
    """Milliseconds one call of `run` takes, its device work included."""
    synchronize(device)
    started = time.perf_counter()
    run()
    synchronize(device)
    return (time.perf_counter() - started) * 1000


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
