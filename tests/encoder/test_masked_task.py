"""The masked-word task: its vocabulary and split, BERT's masking rules, a short training that
beats guessing on held-out sentences, and its model (with its masked-LM head) saved and loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from encoder.core.lm_head import MaskedLMHead
from encoder.inspect.corpus import bundled_corpus
from encoder.io.checkpoints import load_checkpoint
from encoder.io.task_model import TIED_WEIGHT, load_task_model, task_model_from_files
from encoder.tasks import masked
from encoder.tasks.tasks import get_task, guessing_accuracy
from encoder.train.config import TrainConfig
from encoder.train.trainer import Trainer, _loss_and_accuracy, torch_threads, train

pytestmark = pytest.mark.usefixtures("one_thread")
SEQ_LEN = masked.longest_sentence()


def test_the_vocabulary_is_the_corpus_words_after_the_specials() -> None:
    vocab = masked.word_vocabulary()
    assert list(vocab)[: masked.FIRST_WORD] == list(masked.SPECIALS)
    words = {w.lower() for line in bundled_corpus() for w in line.replace(".", " .").split()}
    assert {"cat", "mat", "rain", "the", "."} <= set(vocab)
    assert "the" in words and list(vocab)[masked.FIRST_WORD] == "the"  # the most frequent
    tokens = masked.word_tokenizer().encode("The [MASK] sat on the Zorblax.").tokens
    assert tokens == ["[CLS]", "the", "[MASK]", "sat", "on", "the", "[UNK]", ".", "[SEP]"]


def test_held_out_sentences_are_never_trained_on() -> None:
    assert masked.corpus_sentences() == tuple(dict.fromkeys(bundled_corpus()))
    trained, held = masked.sentence_split(False), masked.sentence_split(True)
    assert len(trained) + len(held) == len(set(bundled_corpus())) and len(held) >= 30
    assert not {tuple(s) for s in trained} & {tuple(s) for s in held}
    inputs, targets = masked.masked_batch(512, SEQ_LEN, 907, torch.Generator().manual_seed(0))
    originals = torch.where(targets != masked.IGNORE, targets, inputs)  # unmasked
    rows = {tuple(row[row != masked.PAD].tolist()) for row in originals}
    assert rows <= {tuple(s) for s in trained}


def test_bert_masking_shares_on_a_big_batch() -> None:
    ids = masked.padded(masked.sentence_split(False) * 40, SEQ_LEN)  # [~11840, T]
    vocab = len(masked.word_vocabulary())
    inputs, targets = masked.mask_words(ids, torch.Generator().manual_seed(3), vocab)
    words = ids >= masked.FIRST_WORD
    chosen = targets != masked.IGNORE
    assert torch.equal(targets[chosen], ids[chosen])  # the targets are the original words
    assert not (chosen & ~words).any()  # never a special token, never padding
    assert torch.equal(inputs[~chosen], ids[~chosen])  # what is not chosen is untouched
    assert chosen.any(-1).all()  # at least one per sentence
    # 15% of the words, plus the forced one where the draw chose none (about (0.85)^n of rows)
    n = words.sum(-1).float()
    expected = (0.15 * n + 0.85**n).sum() / n.sum()
    assert chosen.sum() / words.sum() == pytest.approx(expected.item(), abs=0.005)
    to_mask = (inputs[chosen] == masked.MASK).float().mean().item()
    kept = (inputs[chosen] == ids[chosen]).float().mean().item()  # includes a random draw of it
    assert to_mask == pytest.approx(0.8, abs=0.01)
    assert kept == pytest.approx(0.1, abs=0.01)
    assert 1 - to_mask - kept == pytest.approx(0.1, abs=0.01)  # a random (other) word
    swapped = chosen & (inputs != masked.MASK) & (inputs != ids)
    assert (inputs[swapped] >= masked.FIRST_WORD).all() and (inputs[swapped] < vocab).all()


def test_held_out_masks_are_all_mask_tokens() -> None:
    inputs, targets = masked.masked_batch(
        200, SEQ_LEN, 907, torch.Generator().manual_seed(1), held_out=True
    )
    chosen = targets != masked.IGNORE
    assert (inputs[chosen] == masked.MASK).all() and chosen.any(-1).all()


def test_the_loss_is_taken_only_at_the_chosen_positions() -> None:
    cfg = TrainConfig(task="masked", seq_len=SEQ_LEN, held_out_examples=1).with_model(
        num_layers=1, d_model=32, num_heads=2, d_ff=64
    )
    trainer = Trainer(cfg)
    inputs, targets = trainer.task.sample(8, SEQ_LEN, cfg.model.vocab_size, trainer.train_stream)
    model = trainer.model.eval()
    loss, _ = _loss_and_accuracy(model, trainer.task, inputs, targets)
    logits = model(inputs, (inputs != masked.PAD).long())  # [B, T, vocab] every position
    chosen = targets != masked.IGNORE
    assert loss.item() == pytest.approx(F.cross_entropy(logits[chosen], targets[chosen]).item())
    everywhere = torch.where(chosen, targets, inputs)[inputs != masked.PAD]  # every real token
    assert loss.item() != pytest.approx(
        F.cross_entropy(logits[inputs != masked.PAD], everywhere).item(), rel=1e-3
    )


def test_the_guessing_baseline_is_the_most_frequent_word() -> None:
    chance = guessing_accuracy("masked", SEQ_LEN, 10)
    _, targets = masked.masked_batch(
        20_000, SEQ_LEN, 907, torch.Generator().manual_seed(0), held_out=True
    )
    counted = targets[targets != masked.IGNORE]
    the = masked.word_vocabulary()["the"]
    assert masked.most_frequent_word() == the
    assert chance == pytest.approx((counted == the).float().mean().item(), abs=0.001)
    assert 0.05 < chance < 0.2


@pytest.fixture(scope="module")
def short_run():
    """A small model trained briefly: about 10 s on one thread here."""
    cfg = TrainConfig(
        task="masked", seq_len=SEQ_LEN, steps=150, batch_size=32, lr=3e-3, warmup_steps=15
    ).with_model(num_layers=1, d_model=64, num_heads=2, d_ff=128)
    with torch_threads(1):
        return train(cfg)


def test_a_short_training_beats_guessing_on_held_out_sentences(short_run) -> None:
    chance = guessing_accuracy("masked", SEQ_LEN, 10)
    assert short_run.held_out_examples == short_run.config.held_out_examples  # none seen
    assert short_run.held_out_accuracy > chance + 0.05


def test_save_and_load_keep_the_head_and_the_logits(short_run, tmp_path: Path) -> None:
    model = short_run.task_model()
    assert isinstance(model.mlm_head, MaskedLMHead)
    assert model.mlm_head.decoder.weight is model.encoder.embed.token.weight  # tied
    model.save(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["task"]["head"]["tied"] is True and config["task"]["name"] == "masked"
    loaded = load_task_model(tmp_path)
    ids = torch.tensor([loaded.check_text("The [MASK] sat on the mat.")])
    assert loaded.check_text("zorblax [MASK]")[1] == masked.UNK  # unknown words read as [UNK]
    with torch.no_grad():
        before = model.mlm_head(model.encoder(ids))
        after = loaded.mlm_head(loaded.encoder(ids))
    assert torch.equal(before, after)
    assert loaded.mlm_head.decoder.weight is loaded.encoder.embed.token.weight
    checkpoint = load_checkpoint(tmp_path)
    assert checkpoint.mlm_head is checkpoint.task_model.mlm_head
    with torch.no_grad():
        assert torch.equal(checkpoint.mlm_head(checkpoint.encoder(ids)), before)


def test_check_text_takes_any_words_up_to_the_length(short_run) -> None:
    model = short_run.task_model()
    assert len(model.check_text("a " * (SEQ_LEN - 2))) == SEQ_LEN
    with pytest.raises(ValueError, match=rf"{SEQ_LEN + 1} tokens with \[CLS\] and \[SEP\], but"):
        model.check_text("a " * (SEQ_LEN - 1))
    with pytest.raises(ValueError, match="has no words"):
        model.check_text("   ")
    assert "[MASK]" in model.example and model.check_text(model.example)
    held_out = masked.word_tokenizer().encode(model.example.replace("[MASK]", "river")).ids
    assert held_out in masked.sentence_split(held_out=True)  # never trained on


def _edited(files: dict[str, bytes], edit) -> dict[str, bytes]:
    config = json.loads(files["config.json"])
    edit(config)
    return {**files, "config.json": json.dumps(config).encode()}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["task"].pop("head"), r"the masked task's 'head' must be \{.*\}, not absent"),
        (lambda c: c["task"]["head"].update(tied=False), r"'head' must be \{.*'tied': True.*, not"),
        (lambda c: c["task"]["head"].update(extra=1), r"'head' must be .*'extra': 1"),
        (lambda c: c["task"].update(head=[1]), r"'head' must be \{.*\}, not \[1\]"),
        (
            lambda c: c["task"].update(name="reverse"),
            r"the reverse task's 'head' must be absent, not \{",
        ),
    ],
)
def test_bad_config_files_are_refused_with_messages(short_run, edit, message) -> None:
    files = short_run.task_model().files()
    with pytest.raises(ValueError, match=message):
        task_model_from_files(_edited(files, edit), "upload.zip")


def test_a_saved_tied_weight_or_another_tokenizer_is_refused(short_run) -> None:
    from safetensors.torch import load, save

    model = short_run.task_model()
    files = model.files()
    tensors = load(files["model.safetensors"])
    assert TIED_WEIGHT not in tensors  # stored once, as the word embeddings
    extra = {**tensors, TIED_WEIGHT: tensors["encoder.embed.token.weight"].clone()}
    with pytest.raises(ValueError, match="tensors this model does not use: head.decoder.weight"):
        task_model_from_files({**files, "model.safetensors": save(extra)}, "upload.zip")
    other = get_task("reverse").tokenizer(10).to_str().encode()
    with pytest.raises(ValueError, match="is not the masked task.s tokenizer"):
        task_model_from_files({**files, "tokenizer.json": other}, "upload.zip")
