"""Every sentence a view or the lesson says about a run is true of that run, on five models:
MiniLM, random weights pre-norm and post-norm, random weights with ModernBERT's choices (RoPE,
GeGLU, a local window, no biases), and a model trained here on a toy task.

The sentences come from the plain functions that build them (no page); each number and each
comparison they state is read back out of the words and checked against a value this test
computes from the run's own tensors and weights (torch, not the code under test). Blocks, layers
and heads are numbered from 0 everywhere and named "layer 2, head 1"."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from app.lesson.steps import STEPS
from app.lesson.steps.attention import ONE_QUERY, WEIGHT
from app.lesson.steps.block import COST, FEED_FORWARD, LAYERNORM
from app.lesson.steps.heads import HEAD_OFF, HEADS_DIFFER
from app.lesson.steps.moves import MOVES
from app.lesson.steps.training import TRAIN_ONE
from app.lesson.text import Lesson
from app.page.changes import (
    differences,
    head_switched_off,
    pre_vs_post,
    random_vs_trained,
    relu_vs_gelu,
)
from app.page.layout import setup_title
from app.run_cache import run_for
from app.runs import Run, Runs
from app.views import activations as activations_view
from app.views import exercises
from app.views.layernorm import layernorm_sentence
from app.views.tokens import tokenizer_caption
from encoder import TransformerEncoder, hooks
from encoder.inspect.lesson import BROAD_ENTROPY
from encoder.inspect.moves import MOVES_LITTLE
from tests.app.helpers import assert_no_exception, open_page, shown
from tests.app.lesson_runs import MODERN, our_text, random_run, trained_run
from tests.shared import SENTENCE

MODELS = ("MiniLM", "random pre", "random post", "random modern", "trained")
BAND = 1.25  # the lesson's rule: last over first beyond x1.25 grows, below /1.25 shrinks
NUMBER = r"(-?[\d,]+(?:\.\d+)?)"


@pytest.fixture(scope="module")
def runs(minilm) -> dict[str, Run]:
    """The four models' runs, every hook kept (MiniLM's weights are conftest's: the same file)."""
    from app.sources import built_in, pretrained_config

    cfg = pretrained_config()
    assert cfg == minilm.model.cfg
    return {
        "MiniLM": run_for(cfg, built_in("pretrained", cfg), "cpu", [SENTENCE], None),
        "random pre": random_run("pre", [SENTENCE]),
        "random post": random_run("post", [SENTENCE]),
        "random modern": random_run("pre", [SENTENCE], **MODERN),
        "trained": trained_run(),
    }


def found(pattern: str, text: str) -> tuple[str, ...]:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in: {text}"
    return match.groups()


def close(shown: str, value: float, digits: int) -> bool:
    """A number as the sentence shows it equals `value` rounded to `digits` decimals."""
    return float(shown.replace(",", "")) == pytest.approx(round(value, digits), abs=10**-digits)


def real(run: Run, tensor: torch.Tensor) -> torch.Tensor:
    """Sentence 0's real tokens of a [B, T, ...] tensor."""
    return tensor[0, : int(run.attention_mask[0].sum())].double()


def stream_means(trace, n: int) -> np.ndarray:
    """[depth]: the residual stream's L2 norm per token, averaged over sentence 0's n tokens."""
    return np.array([h[0, :n].double().norm(dim=-1).mean().item() for h in trace.hidden_states])


def other_placement_means(run: Run) -> np.ndarray:
    """The same weights and input with the other norm placement, built and run here."""
    cfg = replace(run.cfg, norm_first=not run.cfg.norm_first)
    model = TransformerEncoder(cfg).eval()
    missing, _ = model.load_state_dict(run.model().state_dict(), strict=False)
    assert all(name.startswith("norm.") for name in missing)  # pre-norm's final norm only
    ids, mask = torch.from_numpy(run.input_ids), torch.from_numpy(run.attention_mask)
    with torch.no_grad():
        trace = model.trace(ids, mask, names=())
    return stream_means(trace, run.n_valid(0))


def verdict(ratio: float) -> str:
    return "grows" if ratio > BAND else "shrinks" if ratio < 1 / BAND else "stays about the same"


def check_growth(said: str, means: np.ndarray) -> None:
    """'goes from A after the embeddings to B after block k (xR: here it V)'."""
    first, last, block, ratio, said_verdict = found(
        rf"goes from {NUMBER} after the embeddings to {NUMBER} after block (\d+) "
        rf"\(x{NUMBER}: here it (grows|shrinks|stays about the same)\)",
        said,
    )
    assert close(first, means[0], 2) and close(last, means[-1], 2), said
    assert int(block) == len(means) - 2  # the last block, counted from 0
    assert close(ratio, means[-1] / means[0], 2) and said_verdict == verdict(means[-1] / means[0])


def check_held(said: str, run: Run, means: np.ndarray) -> None:
    """Where a post-norm model's norms hold the stream after each block, and why there: its
    ln2 gains, read from the weights."""
    after = means[1:]
    low, high, single, blocks = found(
        rf"(?:between {NUMBER} and {NUMBER}|{NUMBER}) after each of the (\d+) blocks", said
    )
    if single is not None:
        assert close(single, after.min(), 2) and close(single, after.max(), 2), said
    else:
        assert close(low, after.min(), 2) and close(high, after.max(), 2), said
    assert int(blocks) == run.cfg.num_layers
    root = math.sqrt(run.cfg.d_model)
    (shown_root,) = found(rf"sqrt\(d_model\) = {NUMBER}", said)
    assert close(shown_root, root, 2)
    weights = run.model().state_dict()
    gains = [weights[f"layers.{i}.norm2.weight"].double() for i in range(run.cfg.num_layers)]
    biases = [weights.get(f"layers.{i}.norm2.bias") for i in range(run.cfg.num_layers)]
    unit = all((g == 1).all() for g in gains) and all(b is None or (b == 0).all() for b in biases)
    assert ("every ln2 has unit gain and zero bias" in said) == unit, said
    if unit:
        assert after == pytest.approx(root, rel=1e-3)  # what the sentence says follows
        return
    mean_gains = [g.mean().item() for g in gains]
    smallest, largest = found(rf"mean gain {NUMBER}(?: to {NUMBER})? per block", said)
    assert close(smallest, min(mean_gains), 2)
    assert close(largest or smallest, max(mean_gains), 2)
    (where,) = found(r"put the stream (below|above|around) that", said)
    expected = "below" if after.max() < root else "above" if after.min() > root else "around"
    assert where == expected, said


def check_numbering(text: str, run: Run) -> None:
    """Blocks and layers from 0 below num_layers, heads below num_heads, "layer 2, head 1"."""
    cfg = run.cfg
    assert not re.search(r"\bheads? \d+\.\d+", text, re.I), text  # no "head 2.1"
    for pattern, count in ((r"\bblock (\d+)", cfg.num_layers), (r"\blayer (\d+)", cfg.num_layers),
                           (r"\bhead (\d+)", cfg.num_heads)):  # fmt: skip
        for number in re.findall(pattern, text, re.I):
            assert int(number) < count, (pattern, number, text)


@pytest.mark.parametrize("model", MODELS)
def test_the_layernorm_view_says_what_this_runs_stream_does(model: str, runs) -> None:
    run = runs[model]
    n = run.n_valid(0)
    said = layernorm_sentence(run, 0, 0)
    check_numbering(said, run)
    means = stream_means(run.trace, n)
    assert "stays near" not in said
    if run.cfg.norm_first:
        check_growth(said, means)
    else:
        (first,) = found(rf"is {NUMBER} after the embeddings", said)
        assert close(first, means[0], 2)
        check_held(said, run, means)
    ln1_in = real(run, run.trace[hooks.block(0).ln1.inp])  # [n, d]
    ln1_out = real(run, run.trace[hooks.block(0).ln1.out])
    in_mean, in_std, out_mean, out_std = found(
        rf"ln1's input has mean {NUMBER} and std {NUMBER} \(averaged over tokens\); its output "
        rf"has mean {NUMBER} and std {NUMBER}",
        said,
    )
    stats = [
        ln1_in.mean(-1),
        ln1_in.std(-1, correction=0),
        ln1_out.mean(-1),
        ln1_out.std(-1, correction=0),
    ]
    for number, values in zip((in_mean, in_std, out_mean, out_std), stats, strict=True):
        assert close(number, values.mean().item(), 3), said


@pytest.mark.parametrize("model", MODELS)
def test_every_lesson_step_and_answer_is_true_of_the_run(model: str, runs) -> None:
    run = runs[model]
    lesson, n = Lesson(run, 0), run.n_valid(0)
    steps = {listed: listed.build(lesson) for listed in STEPS}
    said = {listed: " ".join(map(our_text, step.text.paragraphs)) for listed, step in steps.items()}
    asked = {listed: listed.question(lesson) for listed in STEPS if listed.question}
    answers = {listed: prediction for listed, prediction in asked.items() if prediction}
    assert (FEED_FORWARD in answers) != run.cfg.gated  # ReLU or GELU: not asked of a gated layer
    for text in said.values():
        check_numbering(text, run)
    for asked in answers.values():
        check_numbering(asked.question + " " + asked.explain("") + " " + asked.truth, run)
    attention = torch.from_numpy(run.attention[:, 0, :, :n, :n]).double()  # [L, H, q, k]

    # step 3's question: the head's largest weight from the query, named "layer l, head h"
    asked = answers[ONE_QUERY]
    layer, head, query = lesson.layer, lesson.head, lesson.query
    assert asked.question.startswith(f"In layer {layer}, head {head}, which token")
    best = int(attention[layer, head, query].argmax())
    assert asked.truth == f"{best}: {lesson.tokens[best]}"

    # step 8: the stream's size with depth, this placement and the other, and the answer's
    means, swapped = stream_means(run.trace, n), other_placement_means(run)
    norm_step = said[LAYERNORM]
    own, other = norm_step.split("The same weights placed")
    check_growth(own, means)
    check_growth(other, swapped)
    if not run.cfg.norm_first:
        check_held(own, run, means)
    assert "sidebar" not in norm_step  # presenter mode hides it: nothing to switch there
    pre, post = (means, swapped) if run.cfg.norm_first else (swapped, means)
    answer = answers[LAYERNORM].explain("")
    for placement, depth in (("pre-norm", pre), ("post-norm", post)):
        first, last, block, ratio = found(
            rf"this {placement} run the stream's mean norm goes from {NUMBER} at the embeddings "
            rf"to {NUMBER} after block (\d+) \(x{NUMBER}\)",
            answer,
        )
        assert close(first, depth[0], 1) and close(last, depth[-1], 1)
        assert int(block) == run.cfg.num_layers - 1 and close(ratio, depth[-1] / depth[0], 2)

    # step 4: the softmax over the keys the query sees (its window's, in a local layer), the
    # model's own weight, and the window's keys counted from the model's scores
    scores = run.trace[hooks.block(layer).attn.scores][0, head, query, :n].double()  # [n]
    seen = int(scores.isfinite().sum())
    assert f"over the sum of e^score of all {seen} keys" in said[WEIGHT], said[WEIGHT]
    weight, own = found(rf"weight = {NUMBER}, the model's own {NUMBER}", said[WEIGHT])
    assert weight == own and close(own, attention[layer, head, query, lesson.key].item(), 3)
    assert ("in its window" in said[WEIGHT]) == (seen < n)
    if run.cfg.is_local(layer):  # the step's sentence about the window, from the config
        half = run.cfg.attention_window // 2
        assert f"sees only the {seen} keys within {half} positions" in said[ONE_QUERY]

    # step 5: the roles' shares, and (random weights) the largest against an even spread
    previous = torch.stack([attention[..., q, q - 1] for q in range(1, n)], -1).mean(-1)
    (share,) = found(
        rf"the token just before; the most, layer \d+, head \d+, {NUMBER}%", said[HEADS_DIFFER]
    )
    assert close(share, 100 * previous.max().item(), 1)
    shares = [float(s) for s in re.findall(rf"head \d+, {NUMBER}%\.", said[HEADS_DIFFER])]
    if lesson.random:
        (times,) = found(rf"the largest of these shares is {NUMBER} times", said[HEADS_DIFFER])
        assert float(times) == pytest.approx(max(shares) / 100 * n, abs=0.1)  # shares rounded

    # step 7: weight and what is moved to [CLS], [SEP] and punctuation, compared as computed
    sinks = [
        k for k, t in enumerate(lesson.tokens) if not any(c.isalnum() for c in t) or t[0] == "["
    ]
    if sinks:
        on_sinks = attention[..., sinks].sum(-1).mean(-1)  # [L, H]
        values = steps[MOVES].text.values
        assert values["weight on sinks"] == pytest.approx(on_sinks.mean().item(), abs=1e-6)
        moved, weight = values["moved from sinks"], values["weight on sinks"]
        (word,) = found(r", (less than|more than|about) the \d+% of the weight", said[MOVES])
        expected = (
            "less than" if moved < MOVES_LITTLE * weight
            else "more than" if moved > weight / MOVES_LITTLE else "about"
        )  # fmt: skip
        assert word == expected, said[MOVES]
        head_weight, head_moved = values["sink head weight"], values["sink head moved"]
        (joined,) = found(r"of its weight there, (yet only|and) \d+%", said[MOVES])
        assert (joined == "yet only") == (head_moved < MOVES_LITTLE * head_weight)
        if lesson.random:
            count, even = found(rf"give these (\d+) tokens {NUMBER}%", said[MOVES])
            assert int(count) == len(sinks) and close(even, 100 * len(sinks) / n, 0)

    # step 6: switching the step's head (the question's answer) off changes nothing before its
    # block
    off_layer, off_head = steps[HEAD_OFF].text.values["layer"], steps[HEAD_OFF].text.values["head"]
    assert answers[HEAD_OFF].truth == f"layer {off_layer}, head {off_head}"
    if off_layer:
        assert f"nothing before block {off_layer} changes" in said[HEAD_OFF]
    else:
        assert "the embeddings stay as they were" in said[HEAD_OFF]
    off = run.heads_off(((off_layer, off_head),)).trace.hidden_states
    for depth in range(off_layer + 1):  # the embeddings and the streams before the block
        assert torch.equal(off[depth], run.trace.hidden_states[depth])
    assert not torch.equal(off[off_layer + 1], run.trace.hidden_states[off_layer + 1])

    # step 9: the shares below 0 and exactly 0 in the step's block
    pre = real(run, run.trace[hooks.block(lesson.layer).mlp.pre])
    post = real(run, run.trace[hooks.block(lesson.layer).mlp.post])
    negative, zero = found(
        rf"In block {lesson.layer}, {NUMBER}% of the (?:[\d,]+ )?values before \w+ are negative.*?"
        rf"{NUMBER}% ",
        said[FEED_FORWARD],
    )
    assert close(negative, 100 * (pre < 0).double().mean().item(), 1)
    zeros = 100 * (post == 0).double().mean().item()
    assert close(zero, zeros, 1 if zeros >= 1 else 2)  # two decimals under 1%

    # step 11: attention grows with tokens², the feed-forward with tokens, as stated
    cost = steps[COST].text.values
    attention_growth = cost["attention MFLOPs at twice the tokens"] / cost["attention MFLOPs"]
    ffn_growth = cost["feed-forward MFLOPs at twice the tokens"] / cost["feed-forward MFLOPs"]
    assert attention_growth == pytest.approx(4) and ffn_growth == pytest.approx(2)

    # step 12: the sharpest head against an even spread
    sharpest = attention.max(-1).values.mean(-1)  # [L, H]
    (peak,) = found(rf"its favourite key (?:only )?{NUMBER} of a row", said[TRAIN_ONE])
    assert close(peak, sharpest.max().item(), 3)
    if not lesson.random:
        (times,) = found(rf"{NUMBER} times the", said[TRAIN_ONE])
        assert close(times, sharpest.max().item() * n, 1)
    assert "With random weights, every head spreads almost evenly" not in said[TRAIN_ONE]


@pytest.mark.parametrize("model", MODELS)
def test_the_activations_note_and_the_tokens_caption_are_the_runs(model: str, runs) -> None:
    run = runs[model]
    for layer in range(run.cfg.num_layers):
        row = run.activation_summary(0).feed_forward.iloc[layer]
        note = activations_view._activation_note(run.cfg.activation, row)
        check_numbering(note, run)
        pre = real(run, run.trace[hooks.block(layer).mlp.pre])
        post = real(run, run.trace[hooks.block(layer).mlp.post])
        negative, zero = found(
            rf"{NUMBER}% of the (?:values|pre-activations) are below 0.*?{NUMBER}% of the hidden",
            note,
        )
        assert close(negative, 100 * (pre < 0).double().mean().item(), 1)
        assert close(
            zero, 100 * (post == 0).double().mean().item(), 2 if run.cfg.activation == "gelu" else 1
        )
    caption = tokenizer_caption(run)
    assert ("MiniLM WordPiece" in caption) == (model != "trained")


def test_pre_vs_post_states_each_setups_own_numbers(runs) -> None:
    for a, b in (("random pre", "random post"), ("MiniLM", "random pre")):
        pair = Runs(runs[a], runs[b])
        (said,) = pre_vs_post(pair, 0)
        pre_name, post_name = ("A", "B") if runs[a].cfg.norm_first else ("B", "A")
        pre_run, post_run = (runs[a], runs[b]) if pre_name == "A" else (runs[b], runs[a])
        pre_part, post_part = said.split(f"In {post_name}, the mean L2 norm per token")
        assert pre_part.startswith(f"Pre-norm ({pre_name})")
        assert f"In {pre_name}, the mean L2 norm per token goes from" in pre_part
        check_growth(pre_part, stream_means(pre_run.trace, pre_run.n_valid(0)))
        check_held(post_part, post_run, stream_means(post_run.trace, post_run.n_valid(0)))
        assert "between 16.00 and 16.00" not in said


def test_a_head_switched_off_is_named_and_the_heads_it_moved_are_measured(runs) -> None:
    base = runs["MiniLM"]
    off = base.heads_off(((1, 3),))
    pair = Runs(base, off)
    assert "heads switched off: none → layer 1, head 3" in differences(pair)
    assert setup_title("B", off).endswith("; heads off: layer 1, head 3")
    (said,) = head_switched_off(pair, 0)
    check_numbering(said, base)
    n = base.n_valid(0)
    change = (torch.from_numpy(off.attention - base.attention)[2:, 0, :, :n, :n]).double()
    moved = 0.5 * change.abs().sum(-1).mean(-1)  # [later layers, H]
    layer, head = divmod(int(moved.argmax()), moved.shape[1])
    share, largest, others, cosine = found(
        rf"most layer {layer + 2}, head {head}, where {NUMBER}% of a query's attention moved to "
        rf"other keys on average \(a single weight by up to {NUMBER}\); (\d+) other head\(s\) "
        rf"moved at least half as much\. The output keeps a mean cosine of {NUMBER}",
        said,
    )
    assert close(share, 100 * moved.max().item(), 1)
    assert close(largest, change[layer, head].abs().max().item(), 3)
    assert int(others) == int((moved >= 0.5 * moved.max()).sum()) - 1
    out_a, out_b = real(base, base.trace.output), real(off, off.trace.output)
    assert close(cosine, torch.cosine_similarity(out_a, out_b, dim=-1).mean().item(), 4)


def test_random_against_trained_says_how_evenly_each_spreads(runs) -> None:
    pair = Runs(runs["MiniLM"], runs["random post"])
    (said,) = random_vs_trained(pair, 0)
    check_numbering(said, runs["MiniLM"])
    for words, run in (("Random weights \\(B\\)", runs["random post"]),
                       ("The trained weights \\(A\\)", runs["MiniLM"])):  # fmt: skip
        n = run.n_valid(0)
        weights = torch.from_numpy(run.attention[:, 0, :, :n, :n]).double()
        plogp = torch.where(weights > 0, weights * weights.clamp_min(1e-30).log(), 0.0)
        entropy = (-plogp.sum(-1)).mean(-1).mean().item()
        spread, said_entropy, count = found(
            rf"{words} spread each query's attention (almost evenly|unevenly): mean entropy "
            rf"{NUMBER} nats over the heads, against ln (\d+)",
            said,
        )
        assert close(said_entropy, entropy, 2) and int(count) == n
        evenly = entropy > BROAD_ENTROPY * math.log(n)
        assert spread == ("almost evenly" if evenly else "unevenly")
        sharpest = weights.max(-1).values.mean(-1)  # [L, H]
        layer, head = divmod(int(sharpest.argmax()), sharpest.shape[1])
        assert f"layer {layer}, head {head}, puts {sharpest.max().item():.2f}" in said


def test_relu_against_gelu_counts_each_setups_zeros(runs) -> None:
    gelu = runs["random pre"]
    relu = gelu.variant(activation="relu")
    (said,) = relu_vs_gelu(Runs(gelu, relu), 0)
    for name, run in (("ReLU \\(B\\)", relu), ("GELU \\(A\\)", gelu)):
        posts = [real(run, run.trace[hooks.block(i).mlp.post]) for i in range(run.cfg.num_layers)]
        share = np.mean([(p == 0).double().mean().item() for p in posts])
        (zero,) = found(
            rf"{name}.*?{NUMBER}% (?:of the feed-forward's hidden values )?are exactly zero", said
        )
        assert close(zero, 100 * share, 2 if "GELU" in name else 1)


def test_exercises_say_where_the_norm_and_activation_are_set(runs) -> None:
    assert exercises._where_set(Runs(runs["random pre"])) == "set them in the sidebar"
    for model in ("MiniLM", "trained"):  # their architecture is fixed: the sidebar is locked
        assert exercises._where_set(Runs(runs[model])).startswith("this model's own")


LAST = {"layer": "5", "head": "11", "step_layer": "5", "step_head": "11", "act_layer": "5",
        "ln_layer": "5"}  # fmt: skip


@pytest.mark.parametrize(
    ("view", "says"),
    [
        ("Attention", "layers 0..5, heads 0..11"),
        ("Attention steps", "Layer 5, head 11"),
        ("LayerNorm", "In block 5, ln1's input"),
        ("Activations", "Feed-forward units in block 5"),
    ],
)
def test_the_views_sentences_number_minilms_last_block_from_0(view: str, says: str, runs) -> None:
    """The sentences drawn inside a view (not plain functions), at MiniLM's last layer and
    head: blocks and layers 0..5, heads 0..11, never "head 5.11"."""
    at = open_page(view=view, source="pretrained", **LAST)
    assert_no_exception(at)
    texts = [
        shown(str(element.value))
        for kind in ("info", "caption", "markdown", "header", "subheader", "success")
        for element in getattr(at, kind)
    ]
    assert any(says in text for text in texts), texts
    for text in texts:
        check_numbering(text, runs["MiniLM"])
