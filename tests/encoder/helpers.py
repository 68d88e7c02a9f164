"""Helpers of the library tests: padded batches, non-trivial norms, and the references the tests
compare our encoder with, built independently of encoder.core.model:

- torch's own encoder layer and stack, loaded with our weights (parity of every block);
- the sinusoidal position table of "Attention Is All You Need" (section 3.5), written out one
  entry at a time with Python's math module rather than our vectorised torch code;
- `needs_cuda` and `DEVICES`: a test (or a parameter) that needs a GPU is skipped without one;
- `softmax_attention`: random attention weights, as a model's (the explorer's payload tests).

Benchmarks may import from here; nothing here imports a benchmark.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from encoder.core.config import EncoderConfig
from encoder.core.model import Norm, TransformerEncoder

Batch = tuple[torch.Tensor, torch.Tensor]  # input_ids [B, T], attention_mask [B, T]

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
# parametrize a test by device with these: the CPU everywhere, the first GPU where there is one
DEVICES = ["cpu", pytest.param("cuda:0", marks=needs_cuda, id="cuda")]


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


def torch_layer(cfg: EncoderConfig) -> nn.TransformerEncoderLayer:
    """torch's encoder layer with `cfg`'s architecture (dropout 0, batch first)."""
    return nn.TransformerEncoderLayer(
        cfg.d_model,
        cfg.num_heads,
        cfg.d_ff,
        dropout=0.0,
        activation=cfg.activation,
        layer_norm_eps=cfg.layer_norm_eps,
        batch_first=True,
        norm_first=cfg.norm_first,
    )


def torch_reference(model: TransformerEncoder) -> nn.TransformerEncoder:
    """nn.TransformerEncoder holding `model`'s block stack and final norm (eval mode)."""
    cfg = model.cfg
    if cfg.norm_type != "layernorm":
        raise ValueError(f"norm_type={cfg.norm_type!r}: torch's encoder layer only has LayerNorm")
    final_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps) if cfg.norm_first else None
    reference = nn.TransformerEncoder(
        torch_layer(cfg), cfg.num_layers, norm=final_norm, enable_nested_tensor=False
    )
    stack = {k: v for k, v in model.state_dict().items() if not k.startswith("embed.")}
    reference.load_state_dict(stack)  # strict: our layers.* and norm.* keys are torch's
    return reference.eval()


def sinusoidal_table(length: int, d_model: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)): [length, d],
    each entry computed on its own in double precision."""
    table = [[0.0] * d_model for _ in range(length)]
    for pos in range(length):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            table[pos][2 * i] = math.sin(angle)
            table[pos][2 * i + 1] = math.cos(angle)
    return torch.tensor(table, dtype=torch.float64)


def softmax_attention(layers: int, heads: int, n: int, seed: int = 0) -> torch.Tensor:
    """Random [layers, heads, n, n] attention weights: each row a softmax of spread scores."""
    generator = torch.Generator().manual_seed(seed)
    scores = 3 * torch.randn(layers, heads, n, n, generator=generator)
    return scores.softmax(dim=-1)  # [layer, head, query, key]
