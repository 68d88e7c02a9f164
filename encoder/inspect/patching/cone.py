"""The cone of one patch (see encoder.inspect.patching): how far the change spreads, layer by
layer, with the encoder's attention and under a decoder's causal mask."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from encoder.core import hooks
from encoder.core.capture import replacing
from encoder.core.model import TransformerEncoder
from encoder.core.said import Quoted, Said
from encoder.inspect.patching.grids import as_batch, check_pair


@dataclass(frozen=True)
class Cone:
    """Where one patch spreads: the norm of (patched - corrupted) stream, [L+1, T] each."""

    layer: int
    position: int
    encoder: np.ndarray  # the model's own attention
    causal: np.ndarray  # the same with a decoder's causal mask
    said: Said


@torch.no_grad()
def cone_norms(
    model: TransformerEncoder,
    clean_ids: torch.Tensor,
    corrupted_ids: torch.Tensor,
    layer: int,
    position: int,
    causal: bool = False,
) -> torch.Tensor:
    """[L+1, T]: after copying the clean stream entering block `layer` at `position` into the
    corrupted run, the norm of (patched - corrupted) stream at every depth (trace.hidden_states)
    and token; both runs with a causal mask when `causal`."""
    clean_ids, corrupted_ids = as_batch(clean_ids, model), as_batch(corrupted_ids, model)
    check_pair(clean_ids, corrupted_ids)
    L, T = model.cfg.num_layers, clean_ids.shape[1]
    if not (0 <= layer <= L and 0 <= position < T):
        raise ValueError(
            Said(
                "cannot patch layer {layer}, token {position}: layers are 0..{L}, tokens 0..{last}",
                layer=layer,
                position=position,
                L=L,
                last=T - 1,
            )
        )
    clean, corrupted = (
        model.trace(ids, names=(), causal=causal) for ids in (clean_ids, corrupted_ids)
    )
    state = clean.hidden_states[layer][0, position]

    def change(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[:, position] = state
        return x

    with replacing({hooks.stream(layer): change}):
        patched = model.trace(corrupted_ids, names=(), causal=causal)
    pairs = zip(patched.hidden_states, corrupted.hidden_states, strict=True)
    return torch.stack([(p - c)[0].norm(dim=-1) for p, c in pairs])


def cone(
    model: TransformerEncoder,
    clean_ids: torch.Tensor,
    corrupted_ids: torch.Tensor,
    layer: int,
    position: int,
    tokens: list[str],
) -> Cone:
    """The cone of one residual patch (cone_norms), in the encoder and under a causal mask, and a
    sentence comparing how many tokens each reaches one layer later."""
    grids = [
        cone_norms(model, clean_ids, corrupted_ids, layer, position, causal).cpu().numpy()
        for causal in (False, True)
    ]
    return Cone(layer, position, *grids, said=cone_said(*grids, layer, position, tokens))


def reached(norms: np.ndarray, layer: int) -> np.ndarray:
    """[T] which tokens the patch changed at `layer` (more than 1e-6 of the largest change)."""
    return norms[layer] > 1e-6 * max(float(norms.max()), 1e-30)


def cone_said(
    encoder: np.ndarray, causal: np.ndarray, layer: int, position: int, tokens: list[str]
) -> Said:
    """How many tokens the patch reaches one layer later, in the encoder and under the mask."""
    if layer == len(encoder) - 1:
        return Said("a patch at the output has no later layer to spread to")
    values = {
        "token": Quoted(tokens[position]),
        "layer": layer,
        "encoder": int(reached(encoder, layer + 1).sum()),
    }
    if not reached(causal, layer)[position]:
        return Said.plural(
            "one layer after the patch at {token} (layer {layer}), the change has reached "
            "{encoder} of {count} token in the encoder, which attends both ways; under a "
            "decoder's causal mask the two runs' streams at {token} are the same, so the patch "
            "changes nothing: a token there sees no token after it",
            "one layer after the patch at {token} (layer {layer}), the change has reached "
            "{encoder} of {count} tokens in the encoder, which attends both ways; under a "
            "decoder's causal mask the two runs' streams at {token} are the same, so the patch "
            "changes nothing: a token there sees no token after it",
            len(tokens),
            **values,
        )
    return Said.plural(
        "one layer after the patch at {token} (layer {layer}), the change has reached {encoder} "
        "of {count} token in the encoder, which attends both ways, and {causal} under a "
        "decoder's causal mask: only {token} and the tokens after it",
        "one layer after the patch at {token} (layer {layer}), the change has reached {encoder} "
        "of {count} tokens in the encoder, which attends both ways, and {causal} under a "
        "decoder's causal mask: only {token} and the tokens after it",
        len(tokens),
        causal=int(reached(causal, layer + 1).sum()),
        **values,
    )
