"""The lesson's steps (app.lesson.steps) on real runs: every number a text shows is in its
step's numbers table, the headline numbers equal what the model computes (each recomputed here
from the model, independently of the lesson's code), and the handout holds every step, offline."""

from __future__ import annotations

import base64
import html
import json
import math
import re
from html.parser import HTMLParser

import numpy as np
import pytest
import torch

from app.lesson import handout
from app.lesson.steps import STEPS, TITLES
from app.lesson.steps.attention import ONE_QUERY, WEIGHT
from app.lesson.steps.block import COST, FEED_FORWARD, LAYERNORM, NUMPY_BLOCK
from app.lesson.steps.heads import HEAD_OFF, HEADS_DIFFER
from app.lesson.steps.moves import MOVES
from app.lesson.steps.tokens import EMBEDDINGS, TOKENS
from app.lesson.steps.training import RACE, TRAIN_ONE
from app.lesson.text import Lesson
from app.page.figures import Drawn, told_all
from app.run_cache import run_for
from app.sources import ModelSource, built_in, pretrained_config
from encoder import load_pretrained
from encoder.io.tokenize import load_tokenizer
from encoder.train.presets import TRAINING_PRESETS
from encoder.web.payload import decode_header, full_weights
from tests.app.lesson_runs import MODERN, our_text, random_run, trained_run
from tests.encoder.family_checkpoints import CORPUS, FAMILIES, build_checkpoint
from tests.shared import SENTENCE

NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


@pytest.fixture(scope="module")
def minilm_run():
    return run_for(
        pretrained_config(), built_in("pretrained", pretrained_config()), "cpu", [SENTENCE], None
    )


@pytest.fixture(scope="module")
def minilm_trace(minilm):
    return minilm.model, minilm.batch(SENTENCE), minilm.trace_of(SENTENCE)


def numbers_in(text: str) -> set[str]:
    return {number.replace(",", "") for number in NUMBER.findall(text)}


@pytest.mark.parametrize(
    "setup", ["pretrained", "random pre", "random post, two sentences", "random modern", "trained"]
)
def test_every_number_in_a_steps_text_is_in_its_numbers_table(setup: str, minilm_run) -> None:
    if setup == "pretrained":
        run = minilm_run
    elif setup == "trained":
        run = trained_run()
    else:
        sentences = [SENTENCE, "A second, shorter one."] if "two" in setup else [SENTENCE]
        modern = MODERN if setup == "random modern" else {}
        run = random_run("pre" if modern else setup.split()[1].rstrip(","), sentences, **modern)
    for sentence in range(len(run.sentences)):
        lesson = Lesson(run, sentence)
        for listed in STEPS:
            step = listed.build(lesson)
            table = step.numbers()
            assert list(table.columns) == ["number", "value", "in the text"]
            shown = set().union(*(numbers_in(text) for text in table["in the text"]))
            for paragraph in step.text.paragraphs:
                missing = numbers_in(our_text(paragraph)) - shown
                assert not missing, (listed.title, missing, our_text(paragraph))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_step_runs_on_every_family_and_says_what_does_not_apply(family, tmp_path) -> None:
    """A tiny checkpoint of each family, as load_pretrained reads it: every step builds, its
    numbers are in its table, and a step whose comparison cannot be made says so."""
    model, tokenizer = load_pretrained(build_checkpoint(family, tmp_path))
    source = ModelSource(f"lesson-{family}", tokenizer, None, model)
    run = run_for(model.cfg, source, "cpu", CORPUS[:2], None)
    lesson = Lesson(run, 0)
    for listed in STEPS:
        step = listed.build(lesson)
        shown = set().union(*(numbers_in(text) for text in step.numbers()["in the text"]))
        said = " ".join(our_text(paragraph) for paragraph in step.text.paragraphs)
        assert not numbers_in(said) - shown, (family, listed.title, said)
        asked = listed.question(lesson) if listed.question else None
        if listed is LAYERNORM:  # ModernBERT's block 0 has no attention norm to move
            placeable = model.cfg.has_attention_norm(0)
            assert (asked is None) == (not placeable)
            assert ("cannot be placed" in said) == (not placeable)
        if listed is FEED_FORWARD:
            assert (asked is None) == model.cfg.gated
        if listed is EMBEDDINGS:
            rotary = model.cfg.positional == "rope"
            assert ("Nothing is added for its position" in said) == rotary


def test_the_headline_numbers_are_the_models(minilm_run, minilm_trace) -> None:
    """Each step's headline numbers, recomputed from the model itself."""
    model, batch, trace = minilm_trace
    tokens = batch.tokens[0]
    n = len(tokens)
    lesson = Lesson(minilm_run, 0)
    steps = {listed: listed.build(lesson) for listed in STEPS}
    values = {listed: step.text.values for listed, step in steps.items()}

    # tokens and ids
    query = tokens.index("it")
    assert values[TOKENS]["tokens"] == n == 16
    assert values[TOKENS]["query position"] == query
    assert values[TOKENS]["query id"] == load_tokenizer().token_to_id("it")

    # the embedding table's row and the learned position's (MiniLM does not scale)
    weights = model.state_dict()
    token_row = weights["embed.token.weight"][batch.input_ids[0, query]]
    assert values[EMBEDDINGS]["length of the token vector"] == pytest.approx(
        token_row.norm().item(), 1e-5
    )
    position_row = weights["embed.position.weight"][query]
    assert values[EMBEDDINGS]["length of the position vector"] == pytest.approx(
        position_row.norm().item(), 1e-5
    )

    # over every layer and head, the largest weight from "it" to a far content token
    attention = trace.attention[:, 0].numpy()  # [L, H, q, k]
    far = [
        k
        for k, t in enumerate(tokens)
        if t not in ("[CLS]", "[SEP]", ".", "'") and abs(k - query) > 1
    ]
    best = max(
        (attention[layer, head, query, key], layer, head, key)
        for layer in range(6)
        for head in range(12)
        for key in far
    )
    weight, layer, head, key = best
    chosen = values[ONE_QUERY]
    assert (chosen["layer"], chosen["head"], chosen["key position"]) == (layer, head, key)
    assert chosen["weight"] == pytest.approx(float(weight), abs=1e-7)

    # q.k, / sqrt(d_k), softmax from the block's own weights (post-norm: attention reads x)
    x = trace.hidden_states[layer][0].double()  # [T, d]
    d, dk = 384, 32
    w = weights[f"layers.{layer}.self_attn.in_proj_weight"].double()
    b = weights[f"layers.{layer}.self_attn.in_proj_bias"].double()
    rows = slice(head * dk, (head + 1) * dk)
    q = x[query] @ w[:d][rows].T + b[:d][rows]
    k = x @ w[d : 2 * d][rows].T + b[d : 2 * d][rows]
    scores = (k @ q) / math.sqrt(dk)
    assert values[WEIGHT]["q·k"] == pytest.approx(float(k[key] @ q), abs=1e-3)
    assert values[WEIGHT]["score"] == pytest.approx(float(scores[key]), abs=1e-4)
    assert values[WEIGHT]["weight"] == pytest.approx(float(torch.softmax(scores, 0)[key]), abs=1e-5)

    # the previous-token head, recomputed from the attention rows
    previous = np.array(
        [[np.mean([attention[i, h, q, q - 1] for q in range(1, n)]) for h in range(12)]
         for i in range(6)]
    )  # fmt: skip
    layer5, head5 = np.unravel_index(previous.argmax(), previous.shape)
    roles = values[HEADS_DIFFER]
    assert (roles["previous token: layer"], roles["previous token: head"]) == (layer5, head5)
    assert roles["previous token: share"] == pytest.approx(previous.max(), abs=1e-6)

    # the same sentence with each head switched off; the step switches off the one that changes
    # the output most (its question's answer)
    out = trace.output[0].double()
    changes = {}
    for off in ((i, h) for i in range(6) for h in range(12)):
        ablated = model.trace(batch.input_ids, batch.attention_mask, ablate_heads=[off])
        changes[off] = ((ablated.output[0].double() - out).norm(dim=-1) / out.norm(dim=-1)).numpy()
    strongest = max(changes, key=lambda off: changes[off].mean())
    assert (values[HEAD_OFF]["layer"], values[HEAD_OFF]["head"]) == strongest
    change = changes[strongest]
    assert values[HEAD_OFF]["query change"] == pytest.approx(change[query], abs=1e-6)
    assert values[HEAD_OFF]["most moved position"] == int(change.argmax())

    # weight and what is moved, to [CLS], [SEP] and punctuation (post-norm: attention reads x)
    sinks = [k for k, t in enumerate(tokens) if not any(c.isalnum() for c in t) or t[0] == "["]
    sinks_read = values[MOVES]
    assert sinks_read["heads above half on the opening token"] == int(
        (attention[..., 0].mean(-1) > 0.5).sum()
    )
    raw_sinks = attention[..., sinks].sum(-1).mean(-1)  # [L, H]
    assert sinks_read["weight on sinks"] == pytest.approx(raw_sinks.mean(), abs=1e-6)
    moved_sinks = []
    for i in range(6):
        x = trace.hidden_states[i][0].double()
        w_v = weights[f"layers.{i}.self_attn.in_proj_weight"][2 * d :].double()
        b_v = weights[f"layers.{i}.self_attn.in_proj_bias"][2 * d :].double()
        w_o = weights[f"layers.{i}.self_attn.out_proj.weight"].double()
        for h in range(12):
            cols = slice(h * dk, (h + 1) * dk)
            size = ((x @ w_v[cols].T + b_v[cols]) @ w_o[:, cols].T).norm(dim=-1).numpy()  # [T]
            moved = attention[i, h] * size[None, :]
            rows = moved / moved.sum(-1, keepdims=True)
            moved_sinks.append(rows[:, sinks].sum(-1).mean())
    assert sinks_read["moved from sinks"] == pytest.approx(np.mean(moved_sinks), abs=1e-5)
    assert sinks_read["moved from sinks"] < 0.75 * sinks_read["weight on sinks"]

    # the residual stream's mean length at the ends, ln1's input for the query
    lengths = [h[0].double().norm(dim=-1).mean().item() for h in trace.hidden_states]
    assert values[LAYERNORM]["stream after the embeddings"] == pytest.approx(lengths[0], abs=1e-4)
    assert values[LAYERNORM]["stream after the last block"] == pytest.approx(lengths[-1], abs=1e-4)
    ln1_in = trace[f"blocks.{layer}.ln1.hook_in"][0, query].double()
    assert values[LAYERNORM]["ln1 input std"] == pytest.approx(
        ln1_in.std(correction=0).item(), abs=1e-5
    )

    # the feed-forward values before GELU in the same block
    pre = trace[f"blocks.{layer}.mlp.hook_pre"][0].numpy()
    post = trace[f"blocks.{layer}.mlp.hook_post"][0].numpy()
    assert values[FEED_FORWARD]["share below 0"] == pytest.approx((pre < 0).mean(), abs=1e-7)
    assert values[FEED_FORWARD]["share GELU sets to 0"] == pytest.approx(
        (post == 0).mean(), abs=1e-7
    )
    assert values[FEED_FORWARD]["share ReLU sets to 0"] == pytest.approx(
        (pre <= 0).mean(), abs=1e-7
    )
    assert values[FEED_FORWARD]["top unit"] == int(post[query].argmax())

    # the NumPy block matches within 1e-4
    assert values[NUMPY_BLOCK]["max_abs_diff"] <= 1e-4
    assert steps[NUMPY_BLOCK].tables[0][1]["max_abs_diff"].max() <= 1e-4

    # parameters as torch counts them (BERT's pooler is not loaded)
    assert values[COST]["parameters"] == sum(p.numel() for p in model.parameters())

    # the sharpest head: the largest mean row maximum
    sharpness = attention.max(axis=-1).mean(axis=-1)  # [L, H]
    assert values[TRAIN_ONE]["sharpest head: mean largest weight"] == pytest.approx(
        sharpness.max(), abs=1e-6
    )

    # the race is the preset's
    race = TRAINING_PRESETS["pre vs post: deep, high lr"]
    assert values[RACE]["race layers"] == race.model.num_layers
    assert values[RACE]["chance loss"] == pytest.approx(math.log(race.num_classes))
    print(
        f"\nthe attention step: query 'it' ({query}), layer {layer}, head {head}, "
        f"key {tokens[key]!r} ({key}), weight {weight:.4f}"
    )


def test_random_weights_say_so_and_every_step_still_runs() -> None:
    run = random_run("post", [SENTENCE])
    lesson = Lesson(run, 0)
    for listed in STEPS:
        listed.build(lesson)
    said = " ".join(
        our_text(paragraph)
        for listed in (ONE_QUERY, WEIGHT, HEADS_DIFFER)
        for paragraph in listed.build(lesson).text.paragraphs
    )
    assert "random" in said and "A trained model" in said


class _Handout(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict] = []
        self.headings: list[str] = []
        self.ids: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        if "id" in dict(attrs):
            self.ids.append(dict(attrs)["id"])
        if tag == "script":
            self.scripts.append(dict(attrs) | {"text": ""})
        self._in = tag

    def handle_data(self, data):
        if self._in == "script" and self.scripts:
            self.scripts[-1]["text"] += data
        if self._in == "h2":
            self.headings.append(data)

    def handle_endtag(self, tag):
        self._in = None


def test_the_handout_holds_every_step_with_plotly_and_each_module_once_and_escapes_user_text():
    sentence = "The <b>cat</b> & the dog: it sat."
    run = random_run("pre", [sentence])
    page = handout.lesson_html(Lesson(run, 0))
    parsed = _Handout()
    parsed.feed(page)
    assert parsed.headings == [f"{n}. {title}" for n, title in enumerate(TITLES, 1)]
    library = [s for s in parsed.scripts if "plotly.js v" in s["text"][:200]]
    assert len(library) == 1  # plotly.js embedded once
    assert not any("src" in s for s in parsed.scripts)  # nothing fetched: opens offline
    built = [figure for listed in STEPS for _, figure in listed.build(Lesson(run, 0)).figures]
    explorers = [s for s in parsed.scripts if "data-explorer-for" in s]
    # the figures a browser module draws on the page: the same module, on the same data
    drawn = [figure for figure in built if isinstance(figure, Drawn)]
    elements = [s for s in parsed.scripts if "data-figure-for" in s]
    assert [s["data-module"] for s in elements] == [figure.module for figure in drawn]
    assert [json.loads(s["text"]) for s in elements] == [told_all(f.data) for f in drawn]
    modules = [s["text"] for s in parsed.scripts if s.get("type") == "module"]
    assert len(modules) == 1 + len({figure.module for figure in drawn})  # the explorer's too
    assert all(module.count("function mount(") == 1 for module in modules)
    assert explorers and page.count("Plotly.newPlot(") == len(built) - len(explorers) - len(drawn)
    assert "<b>cat</b>" not in page and html.escape(sentence) in page


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_norm_step_says_what_this_runs_stream_does(norm: str) -> None:
    """The norm step's verdict follows the run's own ratio (a pre-norm run can stay about the
    same)."""
    run = random_run(norm, [SENTENCE])
    hidden = run.trace.hidden_states
    n = run.n_valid(0)
    ratio = (hidden[-1][0, :n].norm(dim=-1).mean() / hidden[0][0, :n].norm(dim=-1).mean()).item()
    verdict = "grows" if ratio > 1.25 else "shrinks" if ratio < 0.8 else "stays about the same"
    said = our_text(LAYERNORM.build(Lesson(run, 0)).text.paragraphs[0])
    assert f"x{ratio:.2f}: here it {verdict}" in said


EXPLORED = {ONE_QUERY: "lines", HEADS_DIFFER: "heads"}  # step: explorer's view


def test_the_handout_draws_its_attention_steps_with_one_explorer_module(minilm_run, minilm_trace):
    lesson = Lesson(minilm_run, 0)
    page = handout.lesson_html(lesson)
    parsed = _Handout()
    parsed.feed(page)
    modules = [s["text"] for s in parsed.scripts if s.get("type") == "module"]
    assert sum("data-explorer-for" in module for module in modules) == 1  # one explorer module
    assert not any("src" in s for s in parsed.scripts)
    explorers = {s["data-explorer-for"]: s for s in parsed.scripts if "data-explorer-for" in s}
    expected = {f"step-{STEPS.index(listed) + 1}": mode for listed, mode in EXPLORED.items()}
    assert set(explorers) == set(expected) and set(expected) <= set(parsed.ids)

    _, batch, trace = minilm_trace
    n = int(batch.attention_mask[0].sum())
    attention = trace.attention[:, 0, :, :n, :n].numpy()  # [L, H, q, k]
    for element, mode in expected.items():
        data = base64.b64decode(explorers[element]["text"])
        (setup,) = decode_header(data)["setups"]
        assert setup["tokens"] == batch.tokens[0][:n]
        full = full_weights(data)
        assert len(full) == attention.shape[0] * attention.shape[1]  # 16 tokens: every head
        for (layer, head), weights in full.items():
            assert np.abs(weights - attention[layer, head]).max() <= 1e-4, (element, layer, head)
        assert decode_header(data)["start"]["mode"] == mode
    step = decode_header(base64.b64decode(explorers[next(iter(expected))]["text"]))["start"]
    assert (step["layer"], step["head"], step["query"]) == (lesson.layer, lesson.head, 10)  # "it"
