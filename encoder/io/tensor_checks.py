"""Whether a checkpoint's config and tensors fit the model they describe, checked before anything
is allocated for them: at most MAX_LAYERS blocks, and the expected tensors worked out on PyTorch's
"meta" device (shapes without storage), each then compared with the file's by name, shape and
dtype. Every problem is a ValueError that names the file and what is wrong with it."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from encoder.core.config import EncoderConfig
from encoder.core.said import Said
from encoder.io.checkpoint_files import CONFIG_FILE, MAX_LAYERS, listed


def check_shape(source: str, name: str, tensor: torch.Tensor, shape: tuple) -> None:
    """ValueError unless the checkpoint's tensor `name` has the `shape` its config implies."""
    if tuple(tensor.shape) != shape:
        raise ValueError(
            Said(
                "{source}: tensor {name} has shape {shape}, but {config} implies {wanted}",
                source=source,
                name=name,
                shape=str(tuple(tensor.shape)),
                config=CONFIG_FILE,
                wanted=str(shape),
            )
        )


def check_layers(cfg: EncoderConfig, source: str) -> None:
    """Refuse a config with more than MAX_LAYERS blocks before anything is built for it."""
    if cfg.num_layers > MAX_LAYERS:
        raise ValueError(
            Said(
                "{source}: num_layers={layers} is more than the {limit} blocks a checkpoint may "
                "have",
                source=source,
                layers=cfg.num_layers,
                limit=MAX_LAYERS,
            )
        )


# The in-place random fills that torch.nn.init's functions without an override hook (such as
# xavier_uniform_) end in.
RANDOM_FILLS = (torch.Tensor.uniform_, torch.Tensor.normal_)


class NoInit(TorchFunctionMode):
    """torch.nn.init's functions (and the random fills they call) leave tensors as they are: for
    a model whose every parameter a checkpoint is about to overwrite (random initialisation of
    BERT-base's 110M parameters takes seconds), and on the meta device, where initialising does
    nothing but torch's meta kernel of normal_ imports torch._dynamo the first time, which stays
    resident (76 MB measured)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__module__", None) == "torch.nn.init" or func in RANDOM_FILLS:
            return args[0] if args else kwargs["tensor"]
        return func(*args, **(kwargs or {}))


def meta_state(build: Callable[[], nn.Module]) -> dict[str, torch.Tensor]:
    """The state_dict `build()` would have, as meta tensors: names, shapes, dtypes, no storage."""
    with torch.device("meta"), NoInit():
        return build().state_dict()


def check_tensors(
    tensors: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], source: str
) -> None:
    """The file's tensors are exactly the expected ones, each with the expected shape and dtype."""
    missing = [name for name in expected if name not in tensors]
    if missing:
        raise ValueError(
            Said("{source} lacks the tensors {names}", source=source, names=listed(missing))
        )
    unexpected = sorted(set(tensors) - set(expected))
    if unexpected:
        raise ValueError(
            Said(
                "{source} has tensors this model does not use: {names}",
                source=source,
                names=listed(unexpected),
            )
        )
    for name, want in expected.items():
        got = tensors[name]
        check_shape(source, name, got, tuple(want.shape))
        if got.dtype != want.dtype:
            raise ValueError(
                Said(
                    "{source}: tensor {name} is {dtype}, expected {wanted}",
                    source=source,
                    name=name,
                    dtype=str(got.dtype),
                    wanted=str(want.dtype),
                )
            )
