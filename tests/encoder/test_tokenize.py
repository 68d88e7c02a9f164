"""tokenize: batches of any text, padded to the longest, truncated with [SEP] kept and recorded."""

from __future__ import annotations

import time

import pytest
import torch

from encoder.io.tokenize import Truncation, load_tokenizer, tokenize

CLS, SEP, PAD, UNK = 101, 102, 0, 100


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def test_loaded_tokenizer_does_not_pad_or_truncate(tokenizer):
    assert tokenizer.padding is None
    assert tokenizer.truncation is None
    assert tokenizer.get_vocab_size() == 30522


def test_empty_string_is_cls_sep(tokenizer):
    batch = tokenize([""], tokenizer, max_len=16)
    assert batch.tokens == [["[CLS]", "[SEP]"]]
    assert batch.input_ids.tolist() == [[CLS, SEP]]
    assert batch.attention_mask.tolist() == [[1, 1]]
    assert batch.truncations == []


def test_no_sentences_is_an_error(tokenizer):
    with pytest.raises(ValueError, match="no sentences"):
        tokenize([], tokenizer, max_len=16)


def test_max_len_must_leave_room_for_cls_and_sep(tokenizer):
    with pytest.raises(ValueError, match="max_len=1"):
        tokenize(["hello"], tokenizer, max_len=1)


def test_emoji_becomes_unk(tokenizer):
    batch = tokenize(["I love pizza 🍕"], tokenizer, max_len=16)
    assert batch.tokens[0] == ["[CLS]", "i", "love", "pizza", "[UNK]", "[SEP]"]
    assert batch.input_ids[0, 4].item() == UNK


def test_cjk_is_split_per_character(tokenizer):
    batch = tokenize(["日本語"], tokenizer, max_len=16)
    assert batch.tokens[0] == ["[CLS]", "日", "本", "語", "[SEP]"]
    assert UNK not in batch.input_ids[0].tolist()


def test_right_to_left_text_keeps_logical_order(tokenizer):
    batch = tokenize(["שלום مرحبا"], tokenizer, max_len=32)
    tokens = batch.tokens[0]
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert tokens[1] == "ש" and "م" in tokens  # Hebrew first, as typed, then Arabic
    assert tokens.index("ש") < tokens.index("م")
    assert UNK not in batch.input_ids[0].tolist()


def test_html_is_plain_text(tokenizer):
    batch = tokenize(["<script>alert(1)</script>"], tokenizer, max_len=32)
    assert batch.tokens[0][1:4] == ["<", "script", ">"]
    assert "alert" in batch.tokens[0]


def test_batch_is_padded_to_the_longest_sentence_only(tokenizer):
    batch = tokenize(["a b c d e", "hi", ""], tokenizer, max_len=128)
    assert batch.lengths == [7, 3, 2]
    assert batch.input_ids.shape == (3, 7)
    assert batch.input_ids.dtype == torch.long
    assert batch.attention_mask.tolist() == [
        [1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0, 0],
    ]
    assert batch.input_ids[1].tolist() == [
        CLS,
        tokenizer.token_to_id("hi"),
        SEP,
        PAD,
        PAD,
        PAD,
        PAD,
    ]
    assert batch.tokens[1] == ["[CLS]", "hi", "[SEP]"]
    assert batch.padded_tokens()[2] == ["[CLS]", "[SEP]"] + ["[PAD]"] * 5
    assert batch.truncations == []


def test_long_paste_is_truncated_fast_with_sep_kept(tokenizer):
    words = ["Attention", "is", "all", "you", "need", "—", "naïve", "encoders", "日本"]
    paste = " ".join(words[i % len(words)] for i in range(5000))
    start = time.perf_counter()
    batch = tokenize([paste, "short one"], tokenizer, max_len=128)
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"tokenizing a 5,000-word paste took {elapsed:.2f} s"

    full = tokenizer.encode(paste)
    assert batch.input_ids.shape == (2, 128)
    assert batch.tokens[0][-1] == "[SEP]" and batch.input_ids[0, -1].item() == SEP
    assert batch.tokens[0][:127] == full.tokens[:127]
    assert batch.attention_mask[0].sum().item() == 128
    (cut,) = batch.truncations
    assert cut.sentence_index == 0
    assert cut.total_tokens == len(full.ids) > 5000
    assert cut.kept_tokens == 128
    assert cut.dropped_tokens == len(full.ids) - 128
    # The kept text ends where the 127th token (the last one before [SEP]) ends.
    assert cut.kept_chars == full.offsets[126][1]
    assert paste[: cut.kept_chars].endswith(full.tokens[126].removeprefix("##"))


def test_truncation_of_the_second_sentence_is_recorded_by_index(tokenizer):
    batch = tokenize(["short", "one two three four five six"], tokenizer, max_len=5)
    assert batch.truncations == [
        Truncation(sentence_index=1, total_tokens=8, kept_tokens=5, kept_chars=len("one two three"))
    ]
    assert batch.tokens[1] == ["[CLS]", "one", "two", "three", "[SEP]"]
    assert batch.lengths == [3, 5]


def test_the_shared_tokenizer_is_not_changed(tokenizer):
    before = tokenizer.to_str()
    tokenize(["one two three four five six seven", ""], tokenizer, max_len=4)
    assert tokenizer.to_str() == before
    assert tokenizer.padding is None and tokenizer.truncation is None
    assert len(tokenizer.encode("one two three four five six seven").ids) == 9


def test_missing_tokenizer_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        load_tokenizer(tmp_path)
