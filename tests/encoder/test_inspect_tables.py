"""encoder.inspect: ledger totals against the model and torch's FLOP counter, stats by hand."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from encoder.core.capture import Trace
from encoder.core.config import EncoderConfig
from encoder.core.model import TransformerEncoder
from encoder.inspect.heads import head_metrics
from encoder.inspect.ledger import cost_summary, parameter_counts, shape_ledger
from encoder.inspect.norms import layernorm_stats, norm_parameters, residual_norms
from tests.encoder.helpers import padded_batch, randomise_norms

CONFIGS = {
    "pre-norm": dict(),
    "post-norm": dict(norm_first=False, num_heads=3, activation="relu"),
    "rmsnorm": dict(norm_type="rmsnorm"),
    "bert-like": dict(
        norm_first=False,
        positional="learned",
        type_vocab_size=2,
        embedding_norm=True,
        scale_embeddings=False,
    ),
}


def small_model(**overrides: object) -> TransformerEncoder:
    values = dict(vocab_size=100, d_model=24, num_heads=4, num_layers=2, d_ff=40, max_len=32)
    return TransformerEncoder(EncoderConfig(**{**values, **overrides})).eval()


@pytest.fixture(params=list(CONFIGS), ids=list(CONFIGS))
def model_and_trace(request: pytest.FixtureRequest) -> tuple[TransformerEncoder, Trace]:
    model = small_model(**CONFIGS[request.param])
    randomise_norms(model)
    return model, model.trace(*padded_batch([7, 4, 2]))


def torch_matmul_flops(model: TransformerEncoder, trace: Trace) -> int:
    """FLOPs torch's own counter sees in a forward pass over the trace's batch."""
    counter = FlopCounterMode(display=False)
    with counter:  # not under no_grad: the counter's module tracker needs grad_fn on inputs
        model(trace.input_ids, trace.attention_mask)
    return counter.get_total_flops()


def elementwise_flops_by_hand(cfg: EncoderConfig, B: int, T: int) -> int:
    """The non-matmul FLOPs of encoder.core.block's convention, counted from the config alone."""
    tokens, d = B * T, cfg.d_model
    norm = {"layernorm": 7, "rmsnorm": 4}[cfg.norm_type] * tokens * d
    embed = tokens * d  # add the positions
    embed += tokens * d if cfg.scale_embeddings else 0  # x sqrt(d)
    embed += tokens * d if cfg.type_vocab_size else 0  # add the token types
    embed += norm if cfg.embedding_norm else 0
    scores = B * cfg.num_heads * T * T
    block = scores + 3 * scores  # scale by 1/sqrt(dk); softmax: exp, sum, divide
    block += 2 * tokens * d + 2 * norm  # two residual adds, two norms
    block += tokens * cfg.d_ff  # the activation
    final = norm if cfg.norm_first else 0
    return embed + cfg.num_layers * block + final


def test_ledger_totals_equal_the_model_and_an_independent_count(model_and_trace) -> None:
    model, trace = model_and_trace
    ledger = shape_ledger(model.cfg, *trace.input_ids.shape)
    assert ledger["params"].sum() == sum(p.numel() for p in model.parameters())
    B, T = trace.input_ids.shape
    expected = torch_matmul_flops(model, trace) + elementwise_flops_by_hand(model.cfg, B, T)
    assert ledger["flops"].sum() == expected
    assert cost_summary(model.cfg, trace)["flops"] == expected


def test_ledger_matmul_flops_equal_torch_flop_counter(model_and_trace) -> None:
    model, trace = model_and_trace
    ledger = shape_ledger(model.cfg, *trace.input_ids.shape)
    assert torch_matmul_flops(model, trace) > 0
    assert ledger["matmul_flops"].sum() == torch_matmul_flops(model, trace)


def test_ledger_hooks_exist_in_data_flow_order_with_their_shapes(model_and_trace) -> None:
    model, trace = model_and_trace
    ledger = shape_ledger(model.cfg, *trace.input_ids.shape)
    hooked = ledger[ledger["hook"] != ""]
    for hook, shape in zip(hooked["hook"], hooked["output_shape"], strict=True):
        assert str(list(trace.tensors[hook].shape)) == shape, hook
    captured_order = list(trace.tensors)
    positions = [captured_order.index(hook) for hook in hooked["hook"]]
    assert positions == sorted(positions)
    layers = ["embed", *map(str, range(model.cfg.num_layers))]
    layers += ["final"] if model.cfg.norm_first else []
    assert list(dict.fromkeys(ledger["layer"])) == layers


PRE_NORM_BLOCK = [
    "ln1 (LayerNorm)",
    "Q projection, split into heads",
    "K projection, split into heads",
    "V projection, split into heads",
    "scores QK^T / sqrt(dk)",
    "softmax",
    "weights x V",
    "concat heads + out projection",
    "residual add",
    "ln2 (LayerNorm)",
    "linear1",
    "GELU",
    "linear2",
    "residual add",
]


def test_pre_and_post_norm_ledgers_put_norms_in_their_places() -> None:
    input_ids, mask = padded_batch([5])
    pre = small_model()
    post = small_model(norm_first=False, norm_type="rmsnorm", activation="relu")
    pre_ledger = shape_ledger(pre.cfg, *input_ids.shape)
    post_ledger = shape_ledger(post.cfg, *input_ids.shape)
    assert list(pre_ledger.loc[pre_ledger["layer"] == "1", "operation"]) == PRE_NORM_BLOCK
    post_norm_block = [
        *PRE_NORM_BLOCK[1:9],
        "ln1 (RMSNorm)",
        "linear1",
        "ReLU",
        "linear2",
        "residual add",
        "ln2 (RMSNorm)",
    ]
    assert list(post_ledger.loc[post_ledger["layer"] == "1", "operation"]) == post_norm_block
    assert list(pre_ledger["operation"][:3]) == [
        "token embedding x sqrt(d)",
        "position embedding (sinusoidal)",
        "add token + position",
    ]
    assert pre_ledger.iloc[-1]["operation"] == "final norm (LayerNorm)"
    assert post_ledger.iloc[-1]["operation"] == "ln2 (RMSNorm)"


def test_ledger_rows_for_one_block_by_hand() -> None:
    model = small_model(num_heads=3)  # d 24, H 3, dk 8, d_ff 40
    trace = model.trace(*padded_batch([5, 2]))  # B 2, T 5
    row = shape_ledger(model.cfg, *trace.input_ids.shape).set_index(["layer", "operation"])
    scores = row.loc[("0", "scores QK^T / sqrt(dk)")]
    assert scores["input_shape"] == "[2, 3, 5, 8] x [2, 3, 8, 5]"
    assert scores["matmul_flops"] == 2 * 2 * 3 * 5 * 5 * 8
    assert scores["flops"] == scores["matmul_flops"] + 2 * 3 * 5 * 5
    linear1 = row.loc[("0", "linear1")]
    assert (linear1["params"], linear1["flops"]) == (24 * 40 + 40, 2 * 2 * 5 * 24 * 40)
    assert linear1["output_shape"] == "[2, 5, 40]"


def direct_norm_stats(x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor) -> list[tuple]:
    """Per real token, one at a time: (sentence, position, in_mean, in_std, out_mean, out_std)."""
    rows = []
    for b, t in mask.nonzero().tolist():
        v, w = x[b, t].double(), y[b, t].double()
        in_std = math.sqrt(((v - v.mean()) ** 2).mean())
        out_std = math.sqrt(((w - w.mean()) ** 2).mean())
        rows.append((b, t, v.mean().item(), in_std, w.mean().item(), out_std))
    return rows


def test_layernorm_stats_match_a_direct_computation() -> None:
    model = small_model(embedding_norm=True)
    randomise_norms(model)
    trace = model.trace(*padded_batch([6, 3]))
    stats = layernorm_stats(trace, model.cfg)
    L = model.cfg.num_layers
    expected_norms = [(-1, "embed.ln")] + [(i, n) for i in range(L) for n in ("ln1", "ln2")]
    expected_norms += [(L, "final_norm")]
    assert list(dict.fromkeys(zip(stats["layer"], stats["norm"], strict=True))) == expected_norms
    assert len(stats) == len(expected_norms) * 9  # 6 + 3 real tokens, padding left out
    block = model.layers[1]
    x = trace.hidden_states[1]  # pre-norm: ln1 of block 1 reads the residual stream
    with torch.no_grad():
        y = F.layer_norm(x, (model.cfg.d_model,), block.norm1.weight, block.norm1.bias, 1e-5)
    got = stats[(stats["layer"] == 1) & (stats["norm"] == "ln1")]
    columns = ["sentence", "position", "in_mean", "in_std", "out_mean", "out_std"]
    expected = direct_norm_stats(x, y, trace.attention_mask)
    for got_row, want_row in zip(got[columns].itertuples(index=False), expected, strict=True):
        assert got_row[:2] == want_row[:2]
        assert got_row[2:] == pytest.approx(want_row[2:], abs=1e-5)


def test_norm_parameters_summarise_gain_and_bias() -> None:
    model = small_model()
    with torch.no_grad():
        model.layers[0].norm2.weight.copy_(torch.arange(24.0))
        model.layers[0].norm2.bias.fill_(-2.0)
    table = norm_parameters(model.cfg, model.state_dict()).set_index(["layer", "norm"])
    row = table.loc[(0, "ln2")]
    assert (row["gain_mean"], row["gain_min"], row["gain_max"]) == (11.5, 0.0, 23.0)
    assert row["gain_std"] == pytest.approx(torch.arange(24.0).std(correction=0).item())
    assert (row["bias_mean"], row["bias_std"]) == (-2.0, 0.0)
    assert table.loc[(2, "final_norm"), "gain_mean"] == 1.0
    assert len(table) == 5
    rms_model = small_model(norm_type="rmsnorm")
    rms = norm_parameters(rms_model.cfg, rms_model.state_dict())
    assert rms["bias_mean"].isna().all() and rms["bias_std"].isna().all()
    assert rms["gain_mean"].eq(1.0).all()


def test_residual_norms_per_depth_and_real_token() -> None:
    model = small_model()
    trace = model.trace(*padded_batch([4, 2]))
    norms = residual_norms(trace)
    assert len(norms) == (model.cfg.num_layers + 1) * 6
    assert sorted(set(norms["depth"])) == [0, 1, 2]
    for depth, sentence, position, value in norms.itertuples(index=False):
        expected = trace.hidden_states[depth][sentence, position].norm().item()
        assert value == pytest.approx(expected, rel=1e-6)
    assert (norms[norms["sentence"] == 1]["position"] < 2).all()


@pytest.mark.parametrize("overrides", list(CONFIGS.values()), ids=list(CONFIGS))
def test_parameter_counts_add_up(overrides: dict) -> None:
    model = small_model(**overrides)
    counts = parameter_counts(model.cfg).set_index("component")
    total = sum(p.numel() for p in model.parameters())
    assert counts.loc["total", "params"] == total
    assert counts["params"].drop("total").sum() == total
    assert counts.loc["token embedding", "params"] == 100 * 24
    learned = model.cfg.positional == "learned"
    assert counts.loc["position embedding", "params"] == (32 * 24 if learned else 0)
    assert counts.loc["token-type embedding", "params"] == model.cfg.type_vocab_size * 24
    attention = counts.loc["attention (all layers)"]
    assert attention["params"] == 2 * attention["per_layer"] == 2 * (4 * 24 * 24 + 4 * 24)


def test_cost_summary_counts_tokens_and_scales_like_the_formulas() -> None:
    model = small_model()
    short = cost_summary(model.cfg, model.trace(*padded_batch([8, 3])))
    long = cost_summary(model.cfg, model.trace(*padded_batch([16, 3])))
    assert (short["batch"], short["tokens"], short["padded_tokens"]) == (2, 11, 16)
    assert short["params"] == sum(p.numel() for p in model.parameters())
    assert long["attention_flops"] == 4 * short["attention_flops"]  # O(n^2 d)
    assert long["ffn_flops"] == 2 * short["ffn_flops"] == 2 * (2 * 2 * 16 * 24 * 40 * 2)
    assert long["projection_flops"] == 2 * short["projection_flops"]
    parts = short["attention_flops"] + short["projection_flops"] + short["ffn_flops"]
    assert parts < short["flops"]


def test_activation_bytes_count_each_captured_tensor_once() -> None:
    model = small_model()
    trace = model.trace(*padded_batch([5, 2]))
    distinct = {(t.data_ptr(), t.shape, t.stride()): t for t in trace.tensors.values()}
    expected = sum(t.numel() * 4 for t in distinct.values())
    assert cost_summary(model.cfg, trace)["activation_bytes"] == expected
    assert expected < sum(t.numel() * 4 for t in trace.tensors.values())


def hand_made_trace() -> Trace:
    """One layer, two sentences (4 and 3 real tokens), three heads with known patterns."""
    n, T = 3, 4
    identity = torch.eye(n)
    previous = torch.tensor([[1.0, 0, 0], [1, 0, 0], [0, 1, 0]])  # query 0 has no previous
    uniform = torch.full((n, n), 1 / n)
    heads = torch.zeros(3, T, T)
    heads[:, :n, :n] = torch.stack([identity, previous, uniform])
    heads[:, n, :] = torch.tensor([0.7, 0.3, 0.0, 0.0])  # padded query: must be ignored
    attention = torch.stack([torch.full((3, T, T), 1 / T), heads])[None]  # [1, B, H, T, T]
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    hidden = torch.zeros(2, T, 6)
    return Trace(hidden, (hidden, hidden), attention, {}, torch.zeros(2, T).long(), mask)


def test_head_metrics_on_hand_made_attention() -> None:
    metrics = head_metrics(hand_made_trace(), sentence=1).set_index(["layer", "head"])
    assert list(metrics.index) == [(0, 0), (0, 1), (0, 2)]
    identity, previous, uniform = (metrics.loc[(0, h)] for h in range(3))
    assert identity["entropy"] == pytest.approx(0.0)
    assert (identity["max_weight"], identity["to_self"], identity["mean_distance"]) == (1, 1, 0)
    assert (identity["to_previous"], identity["to_next"]) == (0, 0)
    assert identity["to_first"] == identity["to_last"] == pytest.approx(1 / 3)
    assert previous["to_previous"] == 1.0  # both queries that have a previous token use it
    assert previous["to_self"] == pytest.approx(1 / 3)
    assert previous["mean_distance"] == pytest.approx(2 / 3)
    assert previous["to_first"] == pytest.approx(2 / 3)
    assert uniform["entropy"] == pytest.approx(math.log(3))
    assert uniform["max_weight"] == pytest.approx(1 / 3)
    assert uniform["mean_distance"] == pytest.approx(8 / 9)
    assert uniform["to_next"] == pytest.approx(1 / 3)
    full = head_metrics(hand_made_trace(), sentence=0)
    assert full["entropy"].to_numpy() == pytest.approx([math.log(4)] * 3)
