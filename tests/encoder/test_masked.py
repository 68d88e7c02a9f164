"""Masked-word prediction: every family's masked-LM head, tied and untied, loaded with its model
and equal to transformers' *ForMaskedLM within 1e-5 (tests/encoder/head_checkpoints.py); the lens
at every layer against transformers' own head on its hidden states; the lens's last layer the
prediction itself; a checkpoint without a head says why; the bad inputs' messages; and
`python -m encoder fill`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from encoder.cli import main
from encoder.inspect.masked import (
    MAX_MASKS,
    NO_HEAD,
    fill,
    fills,
    lens_probabilities,
    mask_positions,
    mask_token_of,
)
from encoder.io.checkpoints import Checkpoint, load_checkpoint
from encoder.io.families.electra import DISCRIMINATOR
from encoder.io.tokenize import bundled_model_dir, tokenize
from tests.encoder.family_checkpoints import LAYERS, MASKED_LM, build_checkpoint
from tests.encoder.head_checkpoints import (
    HEAD_CASES,
    head_differences,
    head_run,
    reference_masked_lm,
)
from tests.encoder.helpers import needs_cuda

TOLERANCE = 1e-5
# A sentence with the family's mask token, for each mask token.
MASKED = {
    "[MASK]": "The cat sat on the [MASK] in the sentence.",
    "<mask>": "The cat sat on the <mask> in the sentence.",
}


@pytest.fixture(scope="module", autouse=True)
def offline():
    from transformers.utils import logging

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        verbosity = logging.get_verbosity()
        logging.set_verbosity_error()
        yield
        logging.set_verbosity(verbosity)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Callable[[str], tuple[Path, Checkpoint]]:
    """built(case): the case's *ForMaskedLM checkpoint directory and our load of it, once."""
    cache: dict[str, tuple[Path, Checkpoint]] = {}

    def build(case: str) -> tuple[Path, Checkpoint]:
        if case not in cache:
            family, overrides = HEAD_CASES[case]
            folder = tmp_path_factory.mktemp(case)
            directory = build_checkpoint(family, folder, model_class=MASKED_LM[family], **overrides)
            cache[case] = directory, load_checkpoint(directory)
        return cache[case]

    return build


@pytest.mark.parametrize("case", list(HEAD_CASES))
def test_head_logits_and_lens_match_transformers(built, case):
    directory, checkpoint = built(case)
    head = checkpoint.mlm_head
    assert head is not None and checkpoint.no_head is None
    tied = HEAD_CASES[case][1].get("tie_word_embeddings", True)
    assert head.cfg.tied == tied
    assert (head.decoder.weight is checkpoint.encoder.embed.token.weight) == tied
    differences = head_differences(head_run(directory, checkpoint))
    assert max(differences.values()) < TOLERANCE, differences


@needs_cuda
@pytest.mark.parametrize("case", ["bert-tied", "roberta-untied", "modernbert-biases"])
def test_head_matches_transformers_on_cuda(built, case):
    directory, checkpoint = built(case)
    differences = head_differences(head_run(directory, checkpoint, "cuda:0"))
    assert max(differences.values()) < TOLERANCE, differences


@pytest.mark.parametrize("case", ["bert-untied", "roberta-tied", "albert-tied", "modernbert-tied"])
def test_fill_is_transformers_prediction_and_the_lens_ends_in_it(built, case):
    directory, checkpoint = built(case)
    mask = mask_token_of(checkpoint.tokenizer)
    text = MASKED[mask]
    (masked,) = fill(checkpoint.encoder, checkpoint.mlm_head, checkpoint.tokenizer, text, top=4)
    encoding = checkpoint.tokenizer.encode(text)
    assert encoding.tokens[masked.position] == mask
    with torch.no_grad():
        theirs = reference_masked_lm(directory, HEAD_CASES[case][0])(
            input_ids=torch.tensor([encoding.ids])
        )
    probabilities = theirs.logits[0, masked.position].softmax(-1)
    values, ids = probabilities.topk(4)
    assert [w.id for w in masked.top] == ids.tolist()
    assert [w.token for w in masked.top] == [checkpoint.tokenizer.id_to_token(i) for i in ids]
    assert (
        max(abs(w.probability - v) for w, v in zip(masked.top, values.tolist(), strict=True))
        < TOLERANCE
    )
    assert len(masked.by_layer) == LAYERS and masked.by_layer[-1] == masked.top
    assert all(len(words) == 4 for words in masked.by_layer)


def test_fills_reads_one_sentence_of_a_padded_batch(built):
    """The page's run: a batch of sentences, padded; each sentence's masks as fill gives them."""
    _, checkpoint = built("bert-tied")
    model, head, tokenizer = checkpoint.encoder, checkpoint.mlm_head, checkpoint.tokenizer
    sentences = ["[MASK] cat sat.", "The cat sat on the [MASK] and the [MASK] slept."]
    batch = tokenize(sentences, tokenizer, model.cfg.max_len)
    trace = model.trace(batch.input_ids, batch.attention_mask)
    mine = fills(model, head, trace, batch.tokens[1], "[MASK]", sentence=1, tokenizer=tokenizer)
    alone = fill(model, head, tokenizer, sentences[1])
    assert [m.position for m in mine] == mask_positions(batch.tokens[1], "[MASK]")
    assert len(mine) == 2 and batch.attention_mask[0].sum() < batch.attention_mask[1].sum()
    for ours, single in zip(mine, alone, strict=True):
        assert ours.position == single.position
        assert [w.id for w in ours.top] == [w.id for w in single.top]
        assert (
            max(
                abs(a.probability - b.probability)
                for a, b in zip(ours.top, single.top, strict=True)
            )
            < 1e-6
        )
    lens = lens_probabilities(model, head, trace, 1, [m.position for m in mine])  # [L, M, V]
    assert lens.shape == (LAYERS, 2, head.cfg.vocab_size)
    torch.testing.assert_close(lens.sum(-1), torch.ones(LAYERS, 2))
    assert [w.probability for w in mine[0].by_layer[0]] == lens[0, 0].topk(5).values.tolist()


def test_the_lens_goes_through_the_final_norm_where_the_model_has_one(built):
    """ModernBERT is pre-norm: the lens at an inner layer is the head on final_norm(stream),
    which differs from the head on the raw stream."""
    _, checkpoint = built("modernbert-tied")
    model, head = checkpoint.encoder, checkpoint.mlm_head
    batch = tokenize(["The cat sat on the mat."], checkpoint.tokenizer, model.cfg.max_len)
    trace = model.trace(batch.input_ids, batch.attention_mask)
    lens = lens_probabilities(model, head, trace, 0, [1, 2])
    with torch.no_grad():
        raw = head(trace.hidden_states[1][0, [1, 2]]).softmax(-1)
        normed = head(model.norm(trace.hidden_states[1][0, [1, 2]])).softmax(-1)
    torch.testing.assert_close(lens[0], normed)
    assert (lens[0] - raw).abs().max() > 1e-3


@pytest.mark.parametrize(
    ("case", "text", "said"),
    [
        ("bert-tied", "The cat sat on the mat.", "no “[MASK]” in the sentence"),
        ("bert-tied", " ".join(["[MASK]"] * 20), f"20 masks in the sentence; at most {MAX_MASKS}"),
        (
            "bert-tied",
            MASKED["<mask>"],
            "“<mask>” is the mask token of RoBERTa, XLM-R and CamemBERT; this model's is “[MASK]”",
        ),
        (
            "roberta-tied",
            MASKED["[MASK]"],
            "“[MASK]” is the mask token of BERT, DistilBERT, ALBERT, ELECTRA and ModernBERT; "
            "this model's is “<mask>”",
        ),
        ("xlm-roberta-tied", "The cat sat.", "no “<mask>” in the sentence"),
    ],
)
def test_bad_input_is_said(built, case, text, said):
    _, checkpoint = built(case)
    with pytest.raises(ValueError, match="^" + said.replace("[", r"\[").replace("]", r"\]")):
        fill(checkpoint.encoder, checkpoint.mlm_head, checkpoint.tokenizer, text)


def test_another_familys_mask_is_found_in_the_tokens_alone(built):
    """fills without the text: "[MASK]" typed into a RoBERTa sentence, split into pieces."""
    _, checkpoint = built("roberta-tied")
    model, tokenizer = checkpoint.encoder, checkpoint.tokenizer
    batch = tokenize([MASKED["[MASK]"]], tokenizer, model.cfg.max_len)
    trace = model.trace(batch.input_ids, batch.attention_mask)
    with pytest.raises(ValueError, match="mask token of BERT") as raised:
        fills(model, checkpoint.mlm_head, trace, batch.tokens[0], "<mask>", tokenizer=tokenizer)
    assert raised.value.args[0].values["mask"].text == "<mask>"


def test_minilm_has_no_head_and_says_why():
    checkpoint = load_checkpoint()
    assert checkpoint.mlm_head is None
    assert checkpoint.no_head == (
        "all-MiniLM-L6-v2 was trained for sentence embeddings (a sentence-transformers model); "
        "its checkpoint has no masked-LM head"
    )
    with pytest.raises(ValueError, match=NO_HEAD):
        fill(checkpoint.encoder, None, checkpoint.tokenizer, "The [MASK] sat.")


def test_checkpoints_without_a_head_load_and_say_what_they_lack(tmp_path):
    bare = load_checkpoint(build_checkpoint("bert", tmp_path / "bare", head=False))
    assert bare.mlm_head is None and bare.encoder is not None
    assert "has no masked-LM head: it lacks the tensors cls.predictions." in bare.no_head
    discriminator = load_checkpoint(build_checkpoint("electra", tmp_path / "discriminator"))
    assert discriminator.mlm_head is None and discriminator.no_head == DISCRIMINATOR
    # the pretraining classes most checkpoints on the Hub are saved as carry the head
    assert load_checkpoint(build_checkpoint("bert", tmp_path / "pretraining")).mlm_head is not None
    assert load_checkpoint(build_checkpoint("albert", tmp_path / "albert")).mlm_head is not None


def test_a_head_missing_one_tensor_or_mis_shaped_says_so_and_the_encoder_still_loads(tmp_path):
    directory = build_checkpoint("roberta", tmp_path, model_class="RobertaForMaskedLM")
    weights = directory / "model.safetensors"
    tensors = load_file(weights)
    save_file({k: v for k, v in tensors.items() if k != "lm_head.layer_norm.bias"}, weights)
    checkpoint = load_checkpoint(directory)
    assert checkpoint.mlm_head is None
    assert checkpoint.no_head.endswith("lacks the tensors lm_head.layer_norm.bias")
    save_file(
        {**tensors, "lm_head.dense.weight": tensors["lm_head.dense.weight"][:, :-1].contiguous()},
        weights,
    )
    checkpoint = load_checkpoint(directory)
    assert checkpoint.mlm_head is None and checkpoint.encoder is not None
    assert "tensor lm_head.dense.weight has shape (32, 31), but config.json implies (32, 32)" in (
        checkpoint.no_head
    )


def test_fill_command_prints_the_masks_as_json(built, capsys):
    directory, checkpoint = built("bert-tied")
    text = MASKED["[MASK]"]
    assert main(["fill", text, "--checkpoint", str(directory), "--top", "3", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == ["masks"] and len(printed["masks"]) == 1
    (masked,) = printed["masks"]
    assert list(masked) == ["position", "top", "by_layer"]
    assert len(masked["by_layer"]) == LAYERS and masked["by_layer"][-1] == masked["top"]
    (expected,) = fill(checkpoint.encoder, checkpoint.mlm_head, checkpoint.tokenizer, text, 3)
    assert masked["position"] == expected.position
    assert masked["top"] == [
        {"token": w.token, "id": w.id, "probability": w.probability} for w in expected.top
    ]


def test_fill_command_without_a_head_exits_2_with_one_sentence(capsys):
    assert main(["fill", "The [MASK] sat.", "--checkpoint", str(bundled_model_dir())]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == [f"error: {load_checkpoint().no_head}"]
