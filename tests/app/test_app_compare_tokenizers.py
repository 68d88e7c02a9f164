"""Compare mode with two tokenizers (AppTest): a tiny BERT checkpoint built here with its own small
WordPiece vocabulary, uploaded as setup A, beside MiniLM as setup B; and two real families side by
side (BERT's WordPiece beside ModernBERT's BPE, RoBERTa's BPE beside XLM-R's Unigram). Every view
draws each setup with its own tokens; the sentence that says why token-by-token differences are
not drawn quotes each setup's own token count; the differences that need no token alignment (the
stream's size by depth) are B − A of numbers computed here from each model."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import save as save_safetensors
from streamlit.testing.v1 import AppTest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from app import sources
from app.views.attention import METRICS
from app.views.tokens import POSITIONS_PER_ROW
from encoder.io.checkpoint_files import CHECKPOINT_FILES, checkpoint_archive
from encoder.io.checkpoints import checkpoint_from_files
from encoder.io.tokenize import load_tokenizer, tokenize
from tests.app.helpers import (
    STREAM_TAB,
    assert_no_exception,
    go,
    open_page,
    open_tab,
    shown,
    upload,
)
from tests.encoder.family_checkpoints import CORPUS, build_checkpoint, tokenizer_of
from tests.shared import SENTENCE

# A WordPiece vocabulary that splits the lesson's sentence otherwise than MiniLM's does
# ("an ##imal", "did ##n ' t", "be ##cause", "tire ##d").
# fmt: off
VOCABULARY = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "it", "was", "too", "an", "##imal",
    "cross", "street", "be", "##cause", "did", "##n", "'", "t", "tire", "##d", ".", "s", "##t",
    "##r", "##e",
]
# fmt: on
VIEWS = (
    "Tokens",
    "Attention",
    "Attention steps",
    "LayerNorm",
    "Activations",
    "Shapes",
    "Cost",
    "Heads across a corpus",
    "Export",
)


def small_wordpiece() -> Tokenizer:
    ids = {token: index for index, token in enumerate(VOCABULARY)}
    tokenizer = Tokenizer(models.WordPiece(ids, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])]
    )
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer


@pytest.fixture(scope="module")
def tiny_bert() -> dict[str, bytes]:
    """The three files of a 2-layer BERT (d_model 32) reading text with `small_wordpiece`."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    bert = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=len(VOCABULARY),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
        )
    )
    return {
        "config.json": json.dumps(bert.config.to_dict()).encode(),
        "model.safetensors": save_safetensors(
            {name: t.contiguous() for name, t in bert.state_dict().items()}
        ),
        "tokenizer.json": small_wordpiece().to_str().encode(),
    }


@pytest.fixture(scope="module")
def page(tiny_bert: dict[str, bytes]) -> AppTest:
    """The page with the tiny BERT as setup A and MiniLM as setup B."""
    at = upload(
        open_page(view="Tokens", text=SENTENCE), ("tiny-bert.zip", checkpoint_archive(tiny_bert))
    )
    at.toggle(key="compare").set_value(True).run()
    at.radio(key="b_source").set_value("pretrained").run()
    assert_no_exception(at)
    return at


def counts() -> tuple[int, int]:
    """The sentence's tokens as each tokenizer splits it, [CLS] and [SEP] included."""
    return len(small_wordpiece().encode(SENTENCE).tokens), len(
        load_tokenizer().encode(SENTENCE).tokens
    )


def test_the_two_tokenizers_split_the_sentence_differently() -> None:
    a, b = small_wordpiece().encode(SENTENCE).tokens, load_tokenizer().encode(SENTENCE).tokens
    assert a != b and len(a) != len(b)


@pytest.mark.parametrize(  # the corpus view computes the corpus for both tokenizers: slow lane
    "view", [pytest.param(v, marks=pytest.mark.slow) if "corpus" in v else v for v in VIEWS]
)
def test_every_view_draws_each_setup_with_its_own_tokens_and_says_why_no_token_differences(
    page: AppTest, view: str
) -> None:
    go(page, view)
    assert_no_exception(page)
    assert not page.error, [e.value for e in page.error]
    a, b = counts()
    said = [shown(c.value) for c in page.caption]
    assert (
        f"A reads {a} tokens (WordPiece, a vocabulary of {len(VOCABULARY)}), B {b} (WordPiece, a "
        "vocabulary of 30,522): token-by-token differences" in " ".join(said)
    )
    changed = next(c for c in said if c.startswith("B differs from A in"))
    assert (
        f"tokenizer: WordPiece, a vocabulary of {len(VOCABULARY)} → WordPiece, a vocabulary of "
        "30,522" in changed
    )
    assert "weights: a model of this session → Pretrained MiniLM" in changed


def test_tokens_shows_both_tokenizations_one_above_the_other(page: AppTest) -> None:
    go(page, "Tokens")
    a, b = counts()
    lines = [
        t.value for t in page.dataframe if "setup" in t.value.columns
    ]  # the positions, wrapped in lines
    assert len(lines) == -(-max(a, b) // POSITIONS_PER_ROW)
    for line in lines:
        assert line["setup"].tolist() == [f"A · {a} tokens", f"B · {b} tokens"]
    positions = [int(p) for line in lines for p in line.columns[1:]]
    assert positions == list(range(max(a, b)))
    row_a, row_b = ([t for line in lines for t in line.iloc[row, 1:] if t] for row in (0, 1))
    assert row_a == small_wordpiece().encode(SENTENCE).tokens
    assert row_b == load_tokenizer().encode(SENTENCE).tokens
    # each setup's own table below, with its own ids
    tables = [t.value for t in page.dataframe if "token" in t.value.columns]
    assert [len(t) for t in tables] == [a, b]
    assert tables[0]["id"].tolist() == small_wordpiece().encode(SENTENCE).ids
    assert any(f"Sentence 1: {a} tokens" in t.value for t in page.text)
    assert any(f"Sentence 1: {b} tokens" in t.value for t in page.text)


def test_layernorm_draws_b_minus_a_of_the_streams_size_by_depth(
    page: AppTest, tiny_bert: dict[str, bytes], minilm
) -> None:
    open_tab(go(page, "LayerNorm"), *STREAM_TAB)
    checkpoint = checkpoint_from_files(tiny_bert, "tiny-bert")
    batch = tokenize([SENTENCE], checkpoint.tokenizer, 512)
    trace_a = checkpoint.encoder.trace(batch.input_ids, batch.attention_mask)
    trace_b = minilm.trace_of(SENTENCE)
    size_a, size_b = (
        torch.stack(trace.hidden_states)[:, 0].norm(dim=-1).mean(dim=-1)  # [depth]
        for trace in (trace_a, trace_b)
    )
    change = next(t.value for t in page.dataframe if "Δ mean_norm" in t.value.columns)
    assert change["depth"].tolist() == [0, 1, 2]  # the depths both have: A has 2 blocks
    assert "cosine of B's with A's" not in change.columns  # that needs the same tokens
    np.testing.assert_allclose(change["Δ mean_norm"], (size_b[:3] - size_a).numpy(), rtol=1e-4)


@pytest.mark.parametrize(
    ("family_a", "family_b"),
    [("bert", "modernbert"), pytest.param("roberta", "xlm-roberta", marks=pytest.mark.slow)],
)
def test_two_real_families_side_by_side_each_with_its_own_tokens(
    family_a: str, family_b: str, tmp_path
) -> None:
    """Two uploads of real families (tests/encoder/family_checkpoints.py): B is the first, A the
    second; each view reads each with its own tokenizer, and says so with both counts."""
    pytest.importorskip("transformers")
    archives = {}
    for family in (family_b, family_a):
        directory = build_checkpoint(family, tmp_path / family, head=False)
        files = {name: (directory / name).read_bytes() for name in CHECKPOINT_FILES}
        archives[family] = checkpoint_archive(files)
    text = CORPUS[1]  # 47 tokens in BERT's WordPiece, 40 in ModernBERT's BPE: counts differ
    at = upload(open_page(view="Tokens", text=text), (f"{family_b}.zip", archives[family_b]))
    b_source = at.session_state["source"]
    at = upload(at, (f"{family_a}.zip", archives[family_a]))
    at.toggle(key="compare").set_value(True).run()
    at.radio(key="b_source").set_value(b_source).run()
    assert_no_exception(at)
    tokens = {family: tokenizer_of(family).encode(text).tokens for family in (family_a, family_b)}
    assert tokens[family_a] != tokens[family_b]
    kinds = {
        family: f"{type(tokenizer_of(family).model).__name__}, a vocabulary of "
        f"{tokenizer_of(family).get_vocab_size():,}"
        for family in (family_a, family_b)
    }
    sentence = (
        f"A reads {len(tokens[family_a])} tokens ({kinds[family_a]}), B {len(tokens[family_b])} "
        f"({kinds[family_b]})"
    )
    for view in ("Tokens", "Attention", "LayerNorm", "Shapes", "Export"):
        go(at, view)
        assert_no_exception(at)
        assert not at.error, [e.value for e in at.error]
        assert any(sentence in shown(c.value) for c in at.caption), view
        changed = next(c.value for c in at.caption if c.value.startswith("B differs from A"))
        assert "weights: one model of this session → another" in changed
    go(at, "Attention")
    at.session_state[METRICS[0]] = True  # the heads' metrics: both have 3 layers x 2 heads
    at.run()
    n_a, n_b = len(tokens[family_a]), len(tokens[family_b])
    ceilings = (
        f" (each over its own setup's tokens, {n_a} in A and {n_b} in B: entropy's ceiling ln n "
        f"is {math.log(n_a):.2f} in A and {math.log(n_b):.2f} in B, and distances count tokens "
        "of different sizes)"
    )
    heading = "The same metrics, B − A, head by head" + ("" if n_a == n_b else ceilings) + ":"
    assert heading in [c.value for c in at.caption]
    change = next(t.value for t in at.dataframe if "Δ entropy" in t.value.columns)
    metrics = next(t.value for t in at.dataframe if "setup" in t.value.columns)
    by_setup = {
        name: metrics[metrics["setup"] == name].sort_values(["layer", "head"]) for name in "AB"
    }
    expected = by_setup["B"]["entropy"].to_numpy() - by_setup["A"]["entropy"].to_numpy()
    np.testing.assert_allclose(change.sort_values(["layer", "head"])["Δ entropy"], expected)
    go(at, "Tokens")
    lines = [t.value for t in at.dataframe if "setup" in t.value.columns]
    for row, family in enumerate((family_a, family_b)):
        assert [t for line in lines for t in line.iloc[row, 1:] if t] == tokens[family]


def test_two_found_families_are_named_as_found_on_this_machine(tmp_path, monkeypatch) -> None:
    """A link to two encoders found on disk (ENCODER_EXPLORER_MODELS): each setup named by its
    directory, each with its own tokenizer."""
    pytest.importorskip("transformers")
    for family in ("bert", "modernbert"):
        build_checkpoint(family, tmp_path / "models" / f"tiny-{family}", head=False)
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    sources.found_models.clear()
    try:
        at = open_page(
            view="Tokens",
            text=CORPUS[1],
            source="disk:tiny-bert",
            compare="1",
            b_source="disk:tiny-modernbert",
        )
    finally:
        sources.found_models.clear()
    assert_no_exception(at)
    changed = next(c.value for c in at.caption if c.value.startswith("B differs from A"))
    assert (
        "weights: tiny-bert (found on this machine) → tiny-modernbert (found on this machine); "
        "tokenizer: WordPiece" in changed
    )
    titles = [m.value for m in at.markdown if m.value.startswith("**")]
    assert titles[:2] == [
        "**A · tiny-bert (found on this machine): post-norm, 3 layers x 2 heads, d_model 32, GELU, "
        "LayerNorm**",
        "**B · tiny-modernbert (found on this machine): pre-norm, 3 layers x 2 heads, d_model 32, "
        "GeGLU, LayerNorm**",
    ]
