"""Shared fixtures for the library tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from encoder.core.model import Norm

Batch = tuple[torch.Tensor, torch.Tensor]  # input_ids [B, T], attention_mask [B, T]


def padded_batch(lengths: list[int], vocab_size: int = 100, seed: int = 0) -> Batch:
    """Random token ids for sentences of the given lengths, right-padded to the longest one."""
    generator = torch.Generator().manual_seed(seed)
    T = max(lengths)
    input_ids = torch.randint(1, vocab_size, (len(lengths), T), generator=generator)
    attention_mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).long()
    return input_ids * attention_mask, attention_mask


def randomise_norms(model: torch.nn.Module, seed: int = 3) -> None:
    """Give every norm a non-trivial gain and bias, so mixing norms up changes the numbers."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, Norm):
                module.weight.copy_(1 + 0.5 * torch.randn(module.weight.shape, generator=generator))
                if module.bias is not None:
                    module.bias.copy_(0.3 * torch.randn(module.bias.shape, generator=generator))


@pytest.fixture
def make_batch() -> Callable[..., Batch]:
    """padded_batch(lengths, vocab_size=100, seed=0) -> (input_ids, attention_mask)."""
    return padded_batch
