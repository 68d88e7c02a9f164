"""What training keeps in memory for backward, with and without gradient checkpointing.

`saved_tensor_bytes` counts, exactly, the bytes of the distinct tensors autograd saves for
backward during one forward pass of the encoder itself (no task head), with
`torch.autograd.graph.saved_tensors_hooks`: distinct by storage (a view keeps its whole storage
alive, so the storage's bytes count, once), leaving out the storages of parameters and buffers
(they are in memory anyway). With `checkpoint_blocks=True` every block runs under
`torch.utils.checkpoint` and saves only its inputs; its intermediates come back in backward, one
block at a time. Dropout is off (eval mode), so no dropout masks are counted.

`measure_train_memory` adds the time of forward + backward with the loss TIMING_LOSS (the loss
does not change what the encoder saves), and on CUDA the peak memory allocated above the weights.
The model given is never changed: gradients are taken on a copy.
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial

import torch
from torch import nn

from encoder.core.model import TransformerEncoder
from encoder.measure.timing import Budget, evaluating, timed_ms

TIMING_LOSS = "output.pow(2).mean()"


def _loss(output: torch.Tensor) -> torch.Tensor:  # [B, T, d] -> []
    return output.pow(2).mean()


def module_storages(model: nn.Module) -> set[int]:
    """The data pointers of the storages of the model's parameters and buffers."""
    tensors = [*model.parameters(), *model.buffers()]
    return {t.untyped_storage().data_ptr() for t in tensors}


class SavedTensorCounter:
    """Pack hook that records each distinct storage autograd saves, leaving out `excluded`."""

    def __init__(self, excluded: set[int]) -> None:
        self.excluded = excluded
        self.storages: dict[int, int] = {}  # data pointer -> bytes

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in self.excluded:
            self.storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    @staticmethod
    def unpack(tensor: torch.Tensor) -> torch.Tensor:
        return tensor

    @property
    def nbytes(self) -> int:
        return sum(self.storages.values())


def trainable(model: TransformerEncoder, *, copy_always: bool = False) -> TransformerEncoder:
    """The model itself when every parameter requires grad (and copy_always is False), else a
    copy of it whose parameters do: a shared, frozen model is never changed."""
    if not copy_always and all(p.requires_grad for p in model.parameters()):
        return model
    return copy.deepcopy(model).requires_grad_(True)


def saved_tensor_bytes(
    model: TransformerEncoder,
    input_ids: torch.Tensor,  # [B, T] long
    attention_mask: torch.Tensor | None = None,  # [B, T]
    *,
    checkpoint_blocks: bool = False,
) -> int:
    """Bytes autograd keeps for backward after one forward pass with gradients on (see module);
    a frozen model is measured on a copy that requires grad."""
    model = trainable(model)
    counter = SavedTensorCounter(module_storages(model))
    with evaluating(model), torch.enable_grad():
        with torch.autograd.graph.saved_tensors_hooks(counter.pack, counter.unpack):
            output = model(input_ids, attention_mask, checkpoint_blocks=checkpoint_blocks)
        del output  # frees the graph
    return counter.nbytes


@dataclass(frozen=True)
class TrainMemory:
    """Bytes saved for backward and the time of forward + backward, plain and checkpointed."""

    saved_bytes: int
    saved_bytes_checkpointed: int
    ms: float  # median forward + backward
    ms_checkpointed: float
    # CUDA only: peak allocated during forward + backward above the weights (activations,
    # gradients, temporaries)
    cuda_peak_bytes: int | None = None
    cuda_peak_bytes_checkpointed: int | None = None

    @property
    def checkpointing_time_factor(self) -> float:
        return self.ms_checkpointed / self.ms

    def to_dict(self) -> dict:
        return asdict(self) | {"loss": TIMING_LOSS}


def _forward_backward(
    model: TransformerEncoder,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    checkpoint_blocks: bool,
) -> None:
    model.zero_grad(set_to_none=True)
    _loss(model(input_ids, attention_mask, checkpoint_blocks=checkpoint_blocks)).backward()


def cuda_peak_bytes(run: Callable[[], object], device: torch.device) -> int:
    """Peak memory allocated on a CUDA device while `run()` runs, above what was allocated
    before it."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    run()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before


def measure_train_memory(
    model: TransformerEncoder,
    input_ids: torch.Tensor,  # [B, T] long, on the model's device
    attention_mask: torch.Tensor | None = None,
    *,
    repeats: int = 3,
    budget: Budget | None = None,
) -> TrainMemory:
    """Saved bytes plain and checkpointed, the median time of forward + backward for each
    (timed in turn, so both see the same load), and on CUDA the peak memory of each."""
    copied = trainable(model, copy_always=True)  # backward writes .grad
    device = copied.device
    saved = {
        ckpt: saved_tensor_bytes(copied, input_ids, attention_mask, checkpoint_blocks=ckpt)
        for ckpt in (False, True)
    }
    runs = {
        ckpt: partial(_forward_backward, copied, input_ids, attention_mask, ckpt)
        for ckpt in (False, True)
    }
    times: dict[bool, list[float]] = {False: [], True: []}
    peaks: dict[bool, int | None] = {False: None, True: None}
    with evaluating(copied), torch.enable_grad():
        for run in runs.values():
            run()  # warm-up
        for _ in range(max(1, repeats)):
            for ckpt, run in runs.items():
                times[ckpt].append(timed_ms(run, device))
            if budget is not None and budget.expired:
                break
        for ckpt, run in runs.items() if device.type == "cuda" else ():
            copied.zero_grad(set_to_none=True)  # the peak counts this run's gradients too
            peaks[ckpt] = cuda_peak_bytes(run, device)
    return TrainMemory(
        saved_bytes=saved[False],
        saved_bytes_checkpointed=saved[True],
        ms=statistics.median(times[False]),
        ms_checkpointed=statistics.median(times[True]),
        cuda_peak_bytes=peaks[False],
        cuda_peak_bytes_checkpointed=peaks[True],
    )
