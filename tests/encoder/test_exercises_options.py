"""encoder.exercises on the architecture options: a correct student function passes on a
ModernBERT-like model (pre-norm, RoPE, GeGLU, no biases, a local window of 4 with every third
layer global, block 0 without ln1, an embedding norm) and on an ALBERT-like one (post-norm, GELU
tanh, embeddings 32 wide projected to d_model, shared layers), or the check refuses with a message
that says why and where it applies; the gated and tanh feed-forwards name their own mistakes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from encoder import EncoderConfig, exercises
from encoder.exercises import mistakes as wrong
from tests.encoder import exercise_solutions as ref
from tests.encoder.helpers import randomise_norms

SMALL = dict(d_model=16, num_heads=4, num_layers=4, d_ff=32)
MODERNBERT = dict(
    norm_first=True, positional="rope", activation="geglu", linear_bias=False, norm_bias=False,
    attention_window=4, global_every=3, first_attention_norm=False, embedding_norm=True,
)  # fmt: skip
ALBERT = dict(norm_first=False, activation="gelu_tanh", embedding_size=32, shared_layers=True)
TEXT = ["The cat sat on the warm mat.", "Dogs bark."]  # 10 and 5 tokens: padding
LOCAL_LAYERS = (1, 2)  # of MODERNBERT's four: 0 and 3 are global (every third)

RoPE_REFUSAL = "this model turns q and k by their positions (RoPE)"
WINDOW_REFUSAL = (
    "attends through a local window of 4 (keys more than 2 positions from the query are masked)"
)


def lab_for(options: dict, **extra) -> exercises.Lab:
    """A random small model with these options, norms with a non-trivial gain (and bias)."""
    model = exercises.setup(EncoderConfig(**SMALL, **(options | extra), seed=1), TEXT).model
    randomise_norms(model)
    return exercises.setup(model, TEXT)


@pytest.fixture(scope="module")
def modernbert() -> exercises.Lab:
    return lab_for(MODERNBERT)


@pytest.fixture(scope="module")
def albert() -> exercises.Lab:
    return lab_for(ALBERT)


CHECKS = {
    "softmax": (exercises.check_softmax, ref.softmax),
    "scores": (exercises.check_scores, ref.scores),
    "head attention": (exercises.check_head_attention, ref.head_attention),
    "multi-head attention": (exercises.check_multi_head_attention, ref.multi_head_attention),
    "layer norm": (exercises.check_layer_norm, ref.layer_norm),
    "feed-forward": (exercises.check_feed_forward, ref.feed_forward),
    "block": (exercises.check_block, ref.block),
    "padding mask": (exercises.check_padding_mask, ref.padding_mask),
}


def modernbert_refusal(exercise: str, layer: int) -> str | None:
    """What the ModernBERT-like lab says instead of a result, or None where the check runs."""
    if exercise in ("multi-head attention", "block"):
        return RoPE_REFUSAL
    if exercise == "head attention" and layer in LOCAL_LAYERS:
        return f"block {layer} {WINDOW_REFUSAL}"
    return None


def test_the_options_are_what_the_labs_are_built_with(modernbert, albert) -> None:
    m = modernbert.model
    assert m.layers[0].norm1 is None and m.layers[1].norm1 is not None
    assert m.layers[1].norm2.bias is None and m.layers[1].linear1.bias is None
    assert m.layers[1].linear1.weight.shape == (2 * 32, 16)  # gated: [2F, d]
    assert [m.cfg.is_local(i) for i in range(4)] == [False, True, True, False]
    a = albert.model
    assert a.layers[3].linear1.weight is a.layers[0].linear1.weight  # shared
    assert a.embed.token.weight.shape[1] == 32 and a.embed.project is not None


@pytest.mark.parametrize("exercise", list(CHECKS))
def test_each_check_passes_or_refuses_on_modernbert(modernbert, exercise: str) -> None:
    check, solution = CHECKS[exercise]
    for layer in range(4):
        refusal = modernbert_refusal(exercise, layer)
        if refusal is None:
            result = check(solution, modernbert, layer)
            assert result.passed and result.largest_difference < 1e-4, (layer, repr(result))
        else:
            with pytest.raises(ValueError, match=re.escape(refusal)) as refused:
                check(solution, modernbert, layer)
            if refusal != RoPE_REFUSAL:  # a local layer: the global ones are named
                assert "check a global layer (0, 3), e.g. layer=0" in str(refused.value)
    with pytest.raises(ValueError, match="this model's positions are rope"):
        exercises.check_positions(ref.positions, modernbert)


@pytest.mark.parametrize("exercise", list(CHECKS))
def test_each_check_passes_on_albert(albert, exercise: str) -> None:
    check, solution = CHECKS[exercise]
    for layer in range(4):
        result = check(solution, albert, layer)
        assert result.passed and result.largest_difference < 1e-4, (layer, repr(result))


def test_albert_positions_are_the_embeddings_width(albert) -> None:
    widths = []

    def positions(T, d):
        widths.append(d)
        return ref.positions(T, d)

    assert exercises.check_positions(positions, albert).passed
    assert widths == [32]  # embedding_size, not d_model


def test_rope_scores_are_of_the_turned_q_and_k(modernbert) -> None:
    given = []

    def scores(q, k):
        given.append((q, k))
        return ref.scores(q, k)

    assert exercises.check_scores(scores, modernbert, 1).passed
    q, k = given[0]
    turned = modernbert.trace["blocks.1.attn.hook_rot_q"].double().numpy()
    unturned = modernbert.trace["blocks.1.attn.hook_q"].double().numpy()
    assert np.allclose(q, turned) and not np.allclose(q, unturned, atol=1e-3)
    assert np.allclose(k, modernbert.trace["blocks.1.attn.hook_rot_k"].double().numpy())


def test_a_local_layers_scores_are_compared_inside_its_window(modernbert) -> None:
    """Outside the window the model holds -inf: a student's finite number there is not asked
    for, and a wrong number inside the window still fails."""

    def off_outside(q, k):
        out = ref.scores(q, k)
        out[0, 0, 0, 9] += 5.0  # query 0, key 9: 9 positions apart, outside a window of 4
        return out

    def off_inside(q, k):
        out = ref.scores(q, k)
        out[0, 0, 0, 2] += 5.0  # key 2: 2 positions from query 0, inside
        return out

    assert np.isneginf(modernbert.trace["blocks.1.attn.hook_scores"][0, 0, 0, 9].item())
    assert exercises.check_scores(off_outside, modernbert, 1).passed
    result = exercises.check_scores(off_inside, modernbert, 1)
    assert not result.passed and result.position == {"sentence": 0, "head": 0, "query": 0,
                                                     "key": 2}  # fmt: skip


def test_a_local_layers_padding_mask_gets_the_windows_keys_already_masked(modernbert) -> None:
    given = []

    def padding_mask(scores, attention_mask):
        given.append(scores)
        return ref.padding_mask(scores, attention_mask)

    assert exercises.check_padding_mask(padding_mask, modernbert, 1).passed
    scores = given[0]  # [B, H, T, T]
    assert np.isneginf(scores[0, :, 0, 3:]).all()  # query 0: keys 3.. lie past 2 positions
    assert np.isfinite(scores[0, :, 0, :3]).all()
    assert np.isfinite(scores[1, :, 9, :]).all()  # a padding query: no window, no mask yet
    assert np.isfinite(scores[1, :, 0, 5:]).all()  # padded keys: the student's job


def test_block_0_without_ln1_checks_its_ln2(modernbert) -> None:
    given = []

    def layer_norm(x, gain, bias, eps):
        given.append((x, bias))
        return ref.layer_norm(x, gain, bias, eps)

    result = exercises.check_layer_norm(layer_norm, modernbert, 0)
    assert result.passed and result.exercise == "LayerNorm (ln2: block 0 has no ln1)"
    x, bias = given[0]
    assert np.allclose(x, modernbert.trace["blocks.0.ln2.hook_in"].double().numpy())
    assert np.array_equal(bias, np.zeros(16))  # norm_bias off: zeros
    assert exercises.check_layer_norm(ref.layer_norm, modernbert, 1).exercise == "LayerNorm"


def test_the_gated_feed_forward_gets_2F_rows_and_zero_biases(modernbert) -> None:
    given = []

    def feed_forward(x, w1, b1, w2, b2, activation):
        given.append((w1, b1, b2, activation))
        return ref.feed_forward(x, w1, b1, w2, b2, activation)

    assert exercises.check_feed_forward(feed_forward, modernbert, 2).passed
    w1, b1, b2, activation = given[0]
    assert w1.shape == (64, 16) and activation == "geglu"
    assert np.array_equal(b1, np.zeros(64)) and np.array_equal(b2, np.zeros(16))


def gated_without_gate(x, w1, b1, w2, b2, activation):
    hidden = (x @ w1.T + b1)[..., : w2.shape[1]]
    return ref.gelu(hidden) @ w2.T + b2


def gated_halves_swapped(x, w1, b1, w2, b2, activation):
    gate, hidden = np.split(x @ w1.T + b1, 2, axis=-1)
    return (ref.gelu(hidden) * gate) @ w2.T + b2


def gated_with_silu(x, w1, b1, w2, b2, activation):
    return ref.feed_forward(x, w1, b1, w2, b2, "swiglu")


def tanh_as_exact(x, w1, b1, w2, b2, activation):
    return ref.feed_forward(x, w1, b1, w2, b2, "gelu")


@pytest.mark.parametrize(
    ("options", "mistaken", "mistake", "hint"),
    [
        (MODERNBERT, gated_without_gate, "no gate", wrong.NO_GATE),
        (MODERNBERT, gated_halves_swapped, "halves swapped", wrong.HALVES_SWAPPED),
        (MODERNBERT, gated_with_silu, "other activation", "feed-forward uses GeGLU"),
        (ALBERT, tanh_as_exact, "exact GELU", wrong.ERF_GELU),
    ],
    ids=["no gate", "halves swapped", "silu for geglu", "erf for tanh"],
)
def test_the_feed_forwards_own_mistakes_are_named(options, mistaken, mistake, hint) -> None:
    result = exercises.check_feed_forward(mistaken, lab_for(options), 1)
    assert (result.passed, result.mistake) == (False, mistake), repr(result)
    assert hint in result.hint


def test_a_model_without_rope_checks_attention_and_block_without_biases() -> None:
    """ModernBERT's options with learned positions: multi-head attention and the block run on
    zeros for the missing biases; block 0 without ln1 and a local block are refused."""
    lab = lab_for(MODERNBERT, positional="learned")
    assert exercises.check_multi_head_attention(ref.multi_head_attention, lab, 0).passed
    result = exercises.check_block(ref.block, lab, 3)
    assert result.passed, repr(result)
    with pytest.raises(ValueError, match="block 0 has no attention norm .* e.g. layer=1"):
        exercises.check_block(ref.block, lab, 0)
    with pytest.raises(ValueError, match=re.escape(f"block 1 {WINDOW_REFUSAL}")):
        exercises.check_block(ref.block, lab, 1)
    lonely = lab_for(MODERNBERT, positional="learned", global_every=0)
    with pytest.raises(ValueError, match="every layer is local here: .* attention_window=0"):
        exercises.check_multi_head_attention(ref.multi_head_attention, lonely, 0)


def test_positions_read_from_an_offset_are_refused() -> None:
    lab = lab_for({}, position_offset=2)
    with pytest.raises(ValueError, match="from row 2 on .* position_offset=0"):
        exercises.check_positions(ref.positions, lab)
