"""encoder.inspect.activations: every number against one computed here from the trace."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder, hooks
from encoder.core.capture import Trace
from encoder.inspect import activations as act
from tests.encoder.helpers import padded_batch

LENGTHS = [9, 6]  # sentence 1 is padded: its last 3 positions must never count


def small_config(activation: str, norm_first: bool = True) -> EncoderConfig:
    return EncoderConfig(
        vocab_size=100,
        d_model=32,
        num_heads=4,
        num_layers=3,
        d_ff=64,
        activation=activation,
        norm_first=norm_first,
        max_len=16,
    )


def model_trace(activation: str, norm_first: bool = True) -> Trace:
    cfg = small_config(activation, norm_first)
    input_ids, mask = padded_batch(LENGTHS)
    with torch.no_grad():
        return TransformerEncoder(cfg).eval().trace(input_ids, mask, names=act.hook_names(cfg))


@pytest.fixture(scope="module", params=["relu", "gelu"])
def trace(request) -> Trace:
    return model_trace(request.param)


def hidden(trace: Trace, layer: int, side: str, sentence: int) -> np.ndarray:
    """[n, F] from the trace, real tokens only, by hand."""
    names = hooks.block(layer).mlp
    n = LENGTHS[sentence]
    return trace[names.pre if side == "pre" else names.post][sentence, :n].numpy()


def states(trace: Trace, sentence: int) -> np.ndarray:
    n = LENGTHS[sentence]
    return np.stack([h[sentence, :n].numpy() for h in trace.hidden_states])  # [L + 1, n, d]


def test_hook_names_are_every_blocks_pre_and_post_activation():
    cfg = small_config("relu")
    names = act.hook_names(cfg)
    expected = {n for i in range(3) for n in (hooks.block(i).mlp.pre, hooks.block(i).mlp.post)}
    assert len(names) == 6 and set(names) == expected
    trace = model_trace("relu")
    assert set(trace.tensors) == expected  # the run keeps only these


@pytest.mark.parametrize("sentence", [0, 1])
def test_feed_forward_table_over_real_tokens(trace, sentence):
    table = act.feed_forward_table(trace, sentence)
    assert list(table.columns) == [
        "layer",
        "mean",
        "std",
        "max",
        "share_zero",
        "share_negative",
    ]
    assert table["layer"].tolist() == [0, 1, 2]
    for layer in range(3):
        post, pre = hidden(trace, layer, "post", sentence), hidden(trace, layer, "pre", sentence)
        row = table.iloc[layer]
        assert row["mean"] == pytest.approx(post.mean(), rel=1e-5, abs=1e-7)
        assert row["std"] == pytest.approx(post.std(), rel=1e-5)
        assert row["max"] == pytest.approx(post.max())
        assert row["share_zero"] == pytest.approx((post == 0).mean())
        assert row["share_negative"] == pytest.approx((pre < 0).mean())


def test_padding_changes_nothing_in_the_short_sentences_table(trace):
    """The padded positions hold real numbers; counting them would change the table."""
    n, T = LENGTHS[1], max(LENGTHS)
    names = hooks.block(0).mlp
    with_padding = trace[names.post][1, :T].numpy()
    assert with_padding.mean() != pytest.approx(hidden(trace, 0, "post", 1).mean(), rel=1e-4)
    assert act.feed_forward_table(trace, 1)["mean"][0] == pytest.approx(
        trace[names.post][1, :n].numpy().mean(), rel=1e-5, abs=1e-7
    )


def test_relu_zeroes_exactly_the_negatives_and_gelu_almost_none():
    relu = act.feed_forward_table(model_trace("relu"), 0)
    gelu = act.feed_forward_table(model_trace("gelu"), 0)
    np.testing.assert_allclose(relu["share_zero"], relu["share_negative"], atol=1e-3)
    assert (relu["share_zero"] > 0.3).all()
    assert (gelu["share_zero"] < 0.01).all() and (gelu["share_negative"] > 0.3).all()


def test_histogram_counts_every_value_once_with_the_tails_in_the_end_bins(trace):
    pre = hidden(trace, 1, "pre", 0).flatten()
    histogram = act.pre_activation_histogram(trace, 0, 1, bins=20)
    low, high = np.quantile(pre, [act.TAIL_SHARE, 1 - act.TAIL_SHARE])
    low, high = min(low, 0.0), max(high, 0.0)
    assert histogram.edges[0] == pytest.approx(low) and histogram.edges[-1] == pytest.approx(high)
    expected, _ = np.histogram(np.clip(pre, low, high), bins=20, range=(low, high))
    np.testing.assert_array_equal(histogram.counts, expected)
    assert histogram.counts.sum() == pre.size == LENGTHS[0] * 64
    assert histogram.below == (pre < low).sum() and histogram.above == (pre > high).sum()
    assert (histogram.minimum, histogram.maximum) == (pre.min(), pre.max())
    assert histogram.share_negative == pytest.approx((pre < 0).mean())


@pytest.mark.parametrize(
    ("activation", "x", "y"),
    [("relu", -1.0, 0.0), ("relu", 2.0, 2.0), ("gelu", -0.75, -0.16997), ("gelu", 2.0, 1.95450)],
)
def test_activation_curve_is_the_models_function(activation, x, y):
    xs, ys = act.activation_curve(activation, -3.0, 3.0, points=25)  # steps of 0.25
    assert ys[np.argmin(np.abs(xs - x))] == pytest.approx(y, abs=1e-4)


def test_top_units_are_the_tokens_largest_values(trace):
    post = hidden(trace, 2, "post", 1)  # [n, F]
    top = act.top_units(trace, 1, 2, token=3, k=5)
    expected = np.argsort(-post[3])[:5]
    np.testing.assert_array_equal(top.units, expected)
    np.testing.assert_array_equal(top.values, post[3, expected])
    np.testing.assert_array_equal(top.across_tokens, post[:, expected].T)
    assert top.across_tokens.shape == (5, LENGTHS[1])


def test_residual_stream_shows_every_dimension_of_a_narrow_stream(trace):
    stream = act.residual_stream(trace, 1, depth=2)
    expected = states(trace, 1)[2]
    np.testing.assert_array_equal(stream.values, expected)
    np.testing.assert_array_equal(stream.dims, np.arange(32))
    assert not stream.is_subset
    np.testing.assert_allclose(stream.l2_norms, np.linalg.norm(expected, axis=1), rtol=1e-5)


def test_a_wide_stream_keeps_its_largest_dimensions_in_index_order(trace):
    stream = act.residual_stream(trace, 0, depth=3, max_dims=5)
    full = states(trace, 0)[3]
    expected = np.sort(np.argsort(-np.abs(full).mean(axis=0))[:5])
    np.testing.assert_array_equal(stream.dims, expected)
    np.testing.assert_array_equal(stream.values, full[:, expected])
    assert stream.is_subset and stream.total_dims == 32
    np.testing.assert_allclose(stream.l2_norms, np.linalg.norm(full, axis=1), rtol=1e-5)


def planted_trace() -> Trace:
    """Hidden states with planted outliers: dimension 7 at depths 1 and 2, dimension 3 at depth 2,
    and a huge dimension 11 only in sentence 1's padding (which must not count)."""
    generator = torch.Generator().manual_seed(0)
    input_ids, mask = padded_batch(LENGTHS)
    B, T, d = 2, max(LENGTHS), 32
    hidden_states = [torch.randn(B, T, d, generator=generator) for _ in range(3)]
    hidden_states[1][:, :, 7] *= 20
    hidden_states[2][:, :, 7] *= 30
    hidden_states[2][:, :, 3] *= 10
    for h in hidden_states:
        h[1, LENGTHS[1] :, 11] = 1000.0
    return Trace(
        output=hidden_states[-1],
        hidden_states=tuple(hidden_states),
        attention=torch.zeros(2, B, 1, T, T),
        tensors={},
        input_ids=input_ids,
        attention_mask=mask,
    )


@pytest.mark.parametrize("sentence", [0, 1])
def test_outlier_dimensions_are_the_planted_ones_with_their_sizes(sentence):
    trace = planted_trace()
    table = act.outlier_dimensions(trace, sentence)
    assert list(zip(table["depth"], table["dimension"], strict=True)) == [(1, 7), (2, 7), (2, 3)]
    size = np.abs(states(trace, sentence)).mean(axis=1)  # [depth, d]
    for row in table.itertuples():
        assert row.mean_abs == pytest.approx(size[row.depth, row.dimension], rel=1e-5)
        median = np.median(size[row.depth])
        assert row.times_median == pytest.approx(size[row.depth, row.dimension] / median, rel=1e-4)
    largest = act.largest_dimensions(trace, sentence)
    assert largest["dimension"].tolist()[1:] == [7, 7]
    np.testing.assert_allclose(largest["mean_abs"], size.max(axis=1), rtol=1e-5)
    np.testing.assert_allclose(largest["median_abs"], np.median(size, axis=1), rtol=1e-4)


def test_random_models_have_no_outlier_dimension(trace):
    assert act.outlier_dimensions(trace, 0).empty
    assert (act.largest_dimensions(trace, 0)["times_median"] < act.OUTLIER_FACTOR).all()


def unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("sentence", [0, 1])
def test_cosines_and_their_mean_between_different_tokens(trace, sentence):
    by_hand = states(trace, sentence)
    n = LENGTHS[sentence]
    means = act.mean_cosine_by_depth(trace, sentence)
    assert means["depth"].tolist() == [0, 1, 2, 3]
    for depth in range(4):
        unit = unit_rows(by_hand[depth])
        expected = unit @ unit.T
        matrix = act.cosine_matrix(trace, sentence, depth)
        np.testing.assert_allclose(matrix, expected, atol=1e-5)
        off_diagonal = expected[~np.eye(n, dtype=bool)]
        assert means["mean_cosine"][depth] == pytest.approx(off_diagonal.mean(), abs=1e-5)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("sentence", [0, 1])
def test_pca_agrees_with_numpys_svd_up_to_sign(norm_first, sentence):
    trace = model_trace("gelu", norm_first)
    by_hand = states(trace, sentence).astype(np.float64)
    depths, n, d = by_hand.shape
    flat = by_hand.reshape(-1, d)
    centred = flat - flat.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    expected = (centred @ vt[:2].T).reshape(depths, n, 2)
    pca = act.pca_paths(trace, sentence)
    assert pca.coords.shape == (depths, n, 2)
    for c in range(2):
        sign = np.sign(np.dot(pca.components[c], vt[c]))
        np.testing.assert_allclose(pca.components[c], sign * vt[c], atol=1e-5)
        np.testing.assert_allclose(pca.coords[..., c], sign * expected[..., c], atol=1e-4)
        assert pca.components[c][np.argmax(np.abs(pca.components[c]))] > 0
    np.testing.assert_allclose(
        pca.explained_variance_ratio, singular[:2] ** 2 / (singular**2).sum(), rtol=1e-6
    )
    table = pca.table()
    assert len(table) == depths * n
    row = table[(table["depth"] == 2) & (table["position"] == 1)].iloc[0]
    assert (row["pc1"], row["pc2"]) == (pca.coords[2, 1, 0], pca.coords[2, 1, 1])


def test_summary_bundles_the_tables(trace):
    summary = act.SentenceSummary(trace, 1)
    assert summary.feed_forward.equals(act.feed_forward_table(trace, 1))
    assert summary.mean_cosine.equals(act.mean_cosine_by_depth(trace, 1))
    assert summary.outliers.equals(act.outlier_dimensions(trace, 1))
    np.testing.assert_array_equal(summary.pca.coords, act.pca_paths(trace, 1).coords)


def test_a_summary_computes_only_the_tables_read_and_each_once(trace, monkeypatch):
    made = []
    for name in ("feed_forward_table", "pca_paths"):
        real = getattr(act, name)
        monkeypatch.setattr(
            act, name, lambda *args, real=real, name=name: made.append(name) or real(*args)
        )
    summary = act.SentenceSummary(trace, 1)
    assert summary.feed_forward is summary.feed_forward  # kept
    assert made == ["feed_forward_table"]  # the feed-forward tab's rerun fits no PCA
    assert summary.pca.coords.shape[-1] == 2 and made == ["feed_forward_table", "pca_paths"]
