"""What each layer does to one sentence's tokens: feed-forward units, the residual stream, and the
geometry of the tokens' states across depth.

Every function looks at one sentence of a Trace and only at its real tokens (padding is left out).
The feed-forward functions need the hooks of `hook_names(cfg)` kept in the trace; the others read
`trace.hidden_states`, which every trace holds. Results are numpy arrays and pandas tables.

Depth: 0 is the embedding output, depth k the residual stream after block k - 1
(`trace.hidden_states[k]`, before any final norm).
Shapes: n = the sentence's real tokens, d = d_model, F = d_ff, L = blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
import torch

from encoder.core import hooks
from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import ACTIVATION_FUNCTIONS
from encoder.inspect.measures import pairwise_cosine

HISTOGRAM_BINS = 60
TAIL_SHARE = 0.001  # the histogram's axis leaves out this share of values at each end
TOP_UNITS = 10
RESIDUAL_MAX_DIMS = 128  # wider streams show their largest dimensions only
# A dimension is an outlier when its mean |value| over the tokens is more than OUTLIER_FACTOR
# times that of the median dimension at the same depth.
OUTLIER_FACTOR = 6.0


def hook_names(cfg: EncoderConfig) -> list[str]:
    """The hooks the feed-forward functions read: every block's pre- and post-activation."""
    blocks = hooks.blocks(cfg.num_layers)
    return [name for block in blocks for name in (block.mlp.pre, block.mlp.post)]


def _real_positions(trace: Trace, sentence: int) -> torch.Tensor:
    """Indices of the sentence's real tokens."""
    return trace.attention_mask[sentence].cpu().bool().nonzero(as_tuple=True)[0]


def feed_forward_values(trace: Trace, sentence: int, layer: int, side: str) -> torch.Tensor:
    """Block `layer`'s feed-forward hidden values on the real tokens, `side` "pre" or "post" the
    activation: [n, F]."""
    names = hooks.block(layer).mlp
    values = trace[names.pre if side == "pre" else names.post][sentence]  # [T, F]
    return values.float().cpu()[_real_positions(trace, sentence)]


def sentence_states(trace: Trace, sentence: int) -> torch.Tensor:
    """The residual stream of the sentence's real tokens at every depth: [L + 1, n, d]."""
    real = _real_positions(trace, sentence)
    return torch.stack([h[sentence].float().cpu()[real] for h in trace.hidden_states])


# --- feed-forward units ------------------------------------------------------------------------


def feed_forward_table(trace: Trace, sentence: int) -> pd.DataFrame:
    """One row per block: how its feed-forward hidden units respond to the sentence.

    mean, std (population) and max are taken over every value after the activation (hook_post,
    what the second linear layer reads), all real tokens x all d_ff units. share_zero is the share
    of those values that are exactly 0; share_negative the share of the values before the
    activation (hook_pre) that are below 0.
    """
    rows = []
    for layer in range(trace.num_layers):
        post = feed_forward_values(trace, sentence, layer, "post")  # [n, F]
        pre = feed_forward_values(trace, sentence, layer, "pre")  # [n, F]
        rows.append(
            {
                "layer": layer,
                "mean": post.mean().item(),
                "std": post.std(correction=0).item(),
                "max": post.max().item(),
                "share_zero": (post == 0).float().mean().item(),
                "share_negative": (pre < 0).float().mean().item(),
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Histogram:
    """Counts of one block's pre-activation values (real tokens x units) in equal bins.

    The bins span the central values (from the TAIL_SHARE quantile to the 1 - TAIL_SHARE one,
    widened to include 0), so a few extreme values cannot squeeze the rest into one bar; the
    values beyond are counted in the first and last bin.
    """

    edges: np.ndarray  # [bins + 1]
    counts: np.ndarray  # [bins]
    share_negative: float
    below: int  # values under edges[0], counted in the first bin
    above: int  # values over edges[-1], counted in the last bin
    minimum: float
    maximum: float


def pre_activation_histogram(
    trace: Trace, sentence: int, layer: int, bins: int = HISTOGRAM_BINS
) -> Histogram:
    pre = feed_forward_values(trace, sentence, layer, "pre").flatten().numpy()
    low, high = np.quantile(pre, [TAIL_SHARE, 1 - TAIL_SHARE])
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    if high <= low:  # every value 0
        low, high = -1.0, 1.0
    counts, edges = np.histogram(np.clip(pre, low, high), bins=bins, range=(low, high))
    return Histogram(
        edges=edges,
        counts=counts,
        share_negative=float((pre < 0).mean()),
        below=int((pre < low).sum()),
        above=int((pre > high).sum()),
        minimum=float(pre.min()),
        maximum=float(pre.max()),
    )


def activation_curve(activation: str, low: float, high: float, points: int = 201):
    """(x, f(x)) of the model's activation function on [low, high], computed by the same function
    the model calls (GeGLU, SwiGLU: the GELU or SiLU of hook_pre, before the gate multiplies it)."""
    x = torch.linspace(low, high, points)
    return x.numpy(), ACTIVATION_FUNCTIONS[activation](x).numpy()


@dataclass(frozen=True)
class TopUnits:
    """One token's most active feed-forward units (after the activation), largest first."""

    units: np.ndarray  # [k] unit indices
    values: np.ndarray  # [k] the token's values
    across_tokens: np.ndarray  # [k, n] the same units on every real token


def top_units(trace: Trace, sentence: int, layer: int, token: int, k: int = TOP_UNITS) -> TopUnits:
    """`token` indexes the sentence's real tokens (0 = the first)."""
    post = feed_forward_values(trace, sentence, layer, "post")  # [n, F]
    values, units = post[token].topk(min(k, post.shape[1]))
    return TopUnits(
        units=units.numpy(), values=values.numpy(), across_tokens=post[:, units].T.numpy()
    )


# --- the residual stream -----------------------------------------------------------------------


@dataclass(frozen=True)
class ResidualStream:
    """The stream at one depth, as drawn: every token, at most `max_dims` dimensions."""

    values: np.ndarray  # [n, shown] the shown dimensions, in index order
    dims: np.ndarray  # [shown] their indices
    total_dims: int  # d_model; more than len(dims) when only the largest are shown
    l2_norms: np.ndarray  # [n] each token's norm over all d dimensions

    @property
    def is_subset(self) -> bool:
        return len(self.dims) < self.total_dims


def residual_stream(
    trace: Trace, sentence: int, depth: int, max_dims: int = RESIDUAL_MAX_DIMS
) -> ResidualStream:
    """The stream at `depth`; past `max_dims` dimensions, the `max_dims` with the largest mean
    |value| over the tokens (so outlier dimensions are always among them), kept in index order."""
    stream = sentence_states(trace, sentence)[depth]  # [n, d]
    d = stream.shape[1]
    if d > max_dims:
        dims = stream.abs().mean(dim=0).topk(max_dims).indices.sort().values
    else:
        dims = torch.arange(d)
    return ResidualStream(
        values=stream[:, dims].numpy(),
        dims=dims.numpy(),
        total_dims=d,
        l2_norms=stream.norm(dim=-1).numpy(),
    )


def _dimension_sizes(trace: Trace, sentence: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each dimension's mean |value| over the real tokens, and that size over the median
    dimension's, at every depth: two [L + 1, d] tensors."""
    size = sentence_states(trace, sentence).abs().mean(dim=1)  # [L + 1, d]
    return size, size / _median(size)[:, None]


def _median(size: torch.Tensor) -> torch.Tensor:
    """The median over dimensions, [L + 1, d] -> [L + 1] (the mean of the two middle values
    when d is even, as numpy's)."""
    return size.quantile(0.5, dim=1)


def outlier_dimensions(trace: Trace, sentence: int, factor: float = OUTLIER_FACTOR) -> pd.DataFrame:
    """Dimensions far larger than the rest, at every depth.

    A dimension's size is its mean |value| over the real tokens; it is an outlier when its size is
    more than `factor` times the median dimension's size at that depth. Columns: depth, dimension,
    mean_abs, times_median (its size / the median size), sorted by depth then size.
    """
    size, ratio = _dimension_sizes(trace, sentence)
    depth, dimension = (ratio > factor).nonzero(as_tuple=True)
    table = pd.DataFrame(
        {
            "depth": depth.numpy(),
            "dimension": dimension.numpy(),
            "mean_abs": size[depth, dimension].numpy(),
            "times_median": ratio[depth, dimension].numpy(),
        }
    )
    return table.sort_values(["depth", "mean_abs"], ascending=[True, False], ignore_index=True)


def largest_dimensions(trace: Trace, sentence: int) -> pd.DataFrame:
    """How far the largest dimension stands out at each depth, outlier or not. Columns: depth,
    median_abs (the median dimension's mean |value|), dimension (the largest one), mean_abs,
    times_median."""
    size, ratio = _dimension_sizes(trace, sentence)
    largest = size.argmax(dim=1)  # [L + 1]
    depths = torch.arange(len(size))
    return pd.DataFrame(
        {
            "depth": depths.numpy(),
            "median_abs": _median(size).numpy(),
            "dimension": largest.numpy(),
            "mean_abs": size[depths, largest].numpy(),
            "times_median": ratio[depths, largest].numpy(),
        }
    )


# --- token geometry across depth ---------------------------------------------------------------


def cosine_matrix(trace: Trace, sentence: int, depth: int) -> np.ndarray:
    """Token x token cosine similarity of the stream at `depth`: [n, n]."""
    return pairwise_cosine(sentence_states(trace, sentence)[depth]).numpy()


def mean_cosine_by_depth(trace: Trace, sentence: int) -> pd.DataFrame:
    """The mean cosine similarity between different real tokens (every pair i != j), per depth;
    NaN for a sentence of one token. Columns: depth, mean_cosine."""
    cosines = pairwise_cosine(sentence_states(trace, sentence))  # [L + 1, n, n]
    n = cosines.shape[-1]
    off_diagonal = ~torch.eye(n, dtype=torch.bool)
    mean = cosines[:, off_diagonal].mean(dim=1) if n > 1 else torch.full((len(cosines),), np.nan)
    return pd.DataFrame({"depth": np.arange(len(cosines)), "mean_cosine": mean.numpy()})


@dataclass(frozen=True)
class PcaPaths:
    """Every token's state at every depth in one 2-D PCA fitted on all of them together."""

    coords: np.ndarray  # [L + 1, n, 2] (depth, token, component)
    explained_variance_ratio: np.ndarray  # [2] each component's share of the total variance
    components: np.ndarray  # [2, d] unit directions, each signed so its largest entry is positive

    def table(self) -> pd.DataFrame:
        """One row per (depth, position): its coordinates pc1, pc2."""
        depths, n, _ = self.coords.shape
        depth, position = np.meshgrid(np.arange(depths), np.arange(n), indexing="ij")
        return pd.DataFrame(
            {
                "depth": depth.flatten(),
                "position": position.flatten(),
                "pc1": self.coords[:, :, 0].flatten(),
                "pc2": self.coords[:, :, 1].flatten(),
            }
        )


def pca_paths(trace: Trace, sentence: int) -> PcaPaths:
    """Fit once on the (L + 1) * n states: centre them on their mean, take the two leading right
    singular vectors, project every state on them."""
    states = sentence_states(trace, sentence).double()  # [L + 1, n, d]
    depths, n, d = states.shape
    flat = states.reshape(-1, d)
    centred = flat - flat.mean(dim=0)
    _, singular, directions = torch.linalg.svd(centred, full_matrices=False)
    components = directions[:2]  # [2, d]: L + 1 >= 2 states and d_model >= 2
    largest = components.abs().argmax(dim=1)
    components = components * components[torch.arange(2), largest].sign()[:, None]
    variance = singular**2
    total = variance.sum()
    ratio = variance[:2] / total if total > 0 else torch.zeros(2, dtype=torch.float64)
    coords = (centred @ components.T).reshape(depths, n, 2)
    return PcaPaths(
        coords=coords.float().numpy(),
        explained_variance_ratio=ratio.numpy(),
        components=components.float().numpy(),
    )


class SentenceSummary:
    """The tables of one sentence that span every layer, each computed when first read and kept
    (a view's open tab reads one or two: the feed-forward tab's rerun made all five, the token
    paths' PCA about a third of it, 2026-11-28)."""

    def __init__(self, trace: Trace, sentence: int) -> None:
        self._trace, self._sentence = trace, sentence

    @cached_property
    def feed_forward(self) -> pd.DataFrame:
        return feed_forward_table(self._trace, self._sentence)

    @cached_property
    def outliers(self) -> pd.DataFrame:
        return outlier_dimensions(self._trace, self._sentence)

    @cached_property
    def largest(self) -> pd.DataFrame:
        return largest_dimensions(self._trace, self._sentence)

    @cached_property
    def mean_cosine(self) -> pd.DataFrame:
        return mean_cosine_by_depth(self._trace, self._sentence)

    @cached_property
    def pca(self) -> PcaPaths:
        return pca_paths(self._trace, self._sentence)
