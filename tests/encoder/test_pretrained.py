"""load_pretrained: parity with transformers' BertModel on the bundled MiniLM (on the CPU and on a
GPU, where it also matches the CPU), and clear errors."""

from __future__ import annotations

import copy
import json
import shutil
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from encoder.io.checkpoints import bundled_model_dir, load_pretrained
from encoder.io.tokenize import tokenize
from tests.encoder.helpers import DEVICES, needs_cuda

SENTENCES = [
    "The cat sat on the mat.",
    "Attention lets every token look at every other token in the sentence.",
    "",
]
FILES = ("config.json", "model.safetensors", "tokenizer.json")


@pytest.fixture(scope="module", params=DEVICES)
def both_runs(minilm, request):
    """Our trace and BertModel's outputs for the same padded batch, both run on the device and
    moved to the CPU."""
    device = request.param
    model, tokenizer = minilm
    batch = tokenize(SENTENCES, tokenizer, max_len=model.cfg.max_len)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        from transformers import BertModel

        bert = BertModel.from_pretrained(bundled_model_dir(), attn_implementation="eager")
    bert.eval().to(device)
    ids, mask = batch.input_ids.to(device), batch.attention_mask.to(device)
    with torch.no_grad():
        theirs = bert(input_ids=ids, attention_mask=mask, output_hidden_states=True,
                      output_attentions=True)  # fmt: skip
    theirs = {
        "hidden_states": [h.cpu() for h in theirs.hidden_states],
        "attentions": [a.cpu() for a in theirs.attentions],
    }
    placed = model if device == "cpu" else copy.deepcopy(model).to(device)
    ours = placed.trace(ids, mask)
    assert ours.output.device.type == torch.device(device).type
    return batch, ours.to("cpu"), theirs


def test_loaded_model_is_bert_shaped_and_in_eval_mode(minilm):
    model, tokenizer = minilm
    cfg = model.cfg
    assert not model.training
    assert (cfg.d_model, cfg.num_heads, cfg.num_layers, cfg.d_ff) == (384, 12, 6, 1536)
    assert (cfg.norm_first, cfg.activation, cfg.positional) == (False, "gelu", "learned")
    assert cfg.layer_norm_eps == 1e-12 and cfg.type_vocab_size == 2
    assert cfg.embedding_norm and not cfg.scale_embeddings
    assert tokenizer.padding is None and tokenizer.truncation is None


def test_batch_has_padding(both_runs):
    batch, _, _ = both_runs
    assert (batch.attention_mask == 0).any()


def test_every_hidden_state_matches_bert(both_runs):
    batch, ours, theirs = both_runs
    real = batch.attention_mask.bool()  # [B, T]
    assert len(ours.hidden_states) == len(theirs["hidden_states"]) == 7
    for layer, (mine, bert) in enumerate(
        zip(ours.hidden_states, theirs["hidden_states"], strict=True)
    ):
        difference = (mine - bert).abs()[real].max().item()
        assert difference < 1e-4, f"hidden state {layer} differs by {difference}"


def test_every_attention_matrix_matches_bert(both_runs):
    batch, ours, theirs = both_runs
    real = batch.attention_mask.bool()
    pairs = real[:, None, :, None] & real[:, None, None, :]  # [B, 1, query, key]
    assert ours.attention.shape[0] == len(theirs["attentions"]) == 6
    for layer, bert in enumerate(theirs["attentions"]):
        mine = ours.attention[layer]  # [B, H, T, T]
        difference = (mine - bert).abs().masked_select(pairs).max().item()
        assert difference < 1e-4, f"attention of layer {layer} differs by {difference}"


@needs_cuda
def test_minilm_on_cuda_has_the_numbers_it_has_on_the_cpu(minilm):
    """The real weights on a GPU: every captured tensor (each norm's mean and std with its
    1e-12 eps, GELU's hidden layer, the attention weights) as on the CPU, within float32
    rounding at MiniLM's size."""
    model, tokenizer = minilm
    batch = tokenize(SENTENCES, tokenizer, max_len=model.cfg.max_len)
    on_cpu = model.trace(batch.input_ids, batch.attention_mask)
    on_gpu = copy.deepcopy(model).to("cuda:0")
    on_cuda = on_gpu.trace(batch.input_ids.cuda(), batch.attention_mask.cuda())
    assert on_cuda.output.is_cuda
    on_cuda = on_cuda.to("cpu")
    real = batch.attention_mask.bool()  # [B, T]: padded rows hold numbers nobody reads
    torch.testing.assert_close(on_cuda.output[real], on_cpu.output[real], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(on_cuda.attention, on_cpu.attention, atol=1e-4, rtol=1e-4)
    for hook, want in on_cpu.tensors.items():
        got = on_cuda.tensors[hook]
        if got.shape[:2] == real.shape:  # [B, T, ...]: the real tokens' rows
            got, want = got[real], want[real]
        torch.testing.assert_close(
            got, want, atol=1e-4, rtol=1e-4, msg=lambda message, hook=hook: f"{hook}: {message}"
        )


@pytest.fixture()
def checkpoint_copy(tmp_path: Path) -> Path:
    """A writable copy of the bundled checkpoint's three files."""
    for name in FILES:
        shutil.copy(bundled_model_dir() / name, tmp_path / name)
    return tmp_path


def test_bert_prefix_and_extra_heads_are_accepted(checkpoint_copy: Path):
    path = checkpoint_copy / "model.safetensors"
    tensors = load_file(path)
    renamed = {f"bert.{name}": tensor for name, tensor in tensors.items()}
    renamed["cls.predictions.bias"] = torch.zeros(4)
    save_file(renamed, path)
    model, _ = load_pretrained(checkpoint_copy)
    expected = tensors["embeddings.word_embeddings.weight"]
    assert torch.equal(model.embed.token.weight, expected)
    key = tensors["encoder.layer.2.attention.self.key.weight"]
    assert torch.equal(model.layers[2].self_attn.in_proj_weight[384:768], key)  # rows of W_k


def test_missing_directory(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_pretrained(tmp_path / "nowhere")


@pytest.mark.parametrize("name", ["config.json", "model.safetensors"])
def test_missing_file_is_named(checkpoint_copy: Path, name: str):
    (checkpoint_copy / name).unlink()
    with pytest.raises(FileNotFoundError, match=name):
        load_pretrained(checkpoint_copy)


def test_missing_tokenizer_is_a_message_that_says_so(checkpoint_copy: Path):
    (checkpoint_copy / "tokenizer.json").unlink()
    with pytest.raises(ValueError) as error:
        load_pretrained(checkpoint_copy)
    assert str(error.value).startswith(
        f"{checkpoint_copy} has no tokenizer.json: its tokenizer is read only from that file"
    )


def test_malformed_config(checkpoint_copy: Path):
    (checkpoint_copy / "config.json").write_text('{"hidden_size": 384,')
    with pytest.raises(ValueError, match="not valid JSON"):
        load_pretrained(checkpoint_copy)


def _edit_config(directory: Path, **changes) -> None:
    path = directory / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            del config[key]
        else:
            config[key] = value
    path.write_text(json.dumps(config))


def test_missing_config_key(checkpoint_copy: Path):
    _edit_config(checkpoint_copy, num_attention_heads=None)
    with pytest.raises(ValueError, match="num_attention_heads"):
        load_pretrained(checkpoint_copy)


def test_unsupported_activation(checkpoint_copy: Path):
    _edit_config(checkpoint_copy, hidden_act="swish")
    with pytest.raises(ValueError, match="hidden_act='swish' is not supported"):
        load_pretrained(checkpoint_copy)


def test_relu_is_accepted(checkpoint_copy: Path):
    _edit_config(checkpoint_copy, hidden_act="relu")
    model, _ = load_pretrained(checkpoint_copy)
    assert model.cfg.activation == "relu"


def test_invalid_architecture_in_config(checkpoint_copy: Path):
    _edit_config(checkpoint_copy, num_attention_heads=5)
    with pytest.raises(ValueError, match="num_heads=5"):
        load_pretrained(checkpoint_copy)


def _edit_weights(directory: Path, edit) -> None:
    path = directory / "model.safetensors"
    tensors = load_file(path)
    edit(tensors)
    save_file(tensors, path)


def test_missing_tensor(checkpoint_copy: Path):
    name = "encoder.layer.3.attention.self.value.bias"
    _edit_weights(checkpoint_copy, lambda tensors: tensors.pop(name))
    with pytest.raises(ValueError, match=name):
        load_pretrained(checkpoint_copy)


def test_unexpected_tensor(checkpoint_copy: Path):
    name = "encoder.layer.6.output.dense.weight"
    _edit_weights(checkpoint_copy, lambda tensors: tensors.update({name: torch.zeros(2, 2)}))
    with pytest.raises(ValueError, match=name):
        load_pretrained(checkpoint_copy)


def test_mis_shaped_tensor(checkpoint_copy: Path):
    name = "encoder.layer.1.intermediate.dense.weight"
    _edit_weights(checkpoint_copy, lambda tensors: tensors.update({name: torch.zeros(1536, 100)}))
    with pytest.raises(ValueError, match=r"intermediate\.dense\.weight has shape \(1536, 100\)"):
        load_pretrained(checkpoint_copy)


def test_corrupt_weights_file(checkpoint_copy: Path):
    (checkpoint_copy / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ValueError, match="safetensors"):
        load_pretrained(checkpoint_copy)


def test_huge_bert_config_is_refused_before_anything_is_allocated(checkpoint_copy: Path):
    _edit_config(checkpoint_copy, vocab_size=10**12)  # 1.5 PB of embeddings, were they built
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"word_embeddings\.weight has shape \(30522, 384\)"):
        load_pretrained(checkpoint_copy)
    assert time.perf_counter() - started < 20


def test_too_many_bert_layers_are_refused_before_any_is_built(checkpoint_copy: Path):
    _edit_config(checkpoint_copy, num_hidden_layers=1_000_000)
    with pytest.raises(ValueError, match="num_layers=1000000 is more than the 64 blocks"):
        load_pretrained(checkpoint_copy)


def test_activation_of_the_wrong_type_is_a_message(checkpoint_copy: Path):
    _edit_config(checkpoint_copy, hidden_act=["gelu"])
    with pytest.raises(ValueError, match=r"hidden_act=\['gelu'\] is not supported"):
        load_pretrained(checkpoint_copy)


def test_bert_files_over_the_size_limit_are_refused(checkpoint_copy: Path):
    size = (checkpoint_copy / "model.safetensors").stat().st_size
    with pytest.raises(ValueError, match=f"model.safetensors is {size:,} bytes, more than"):
        load_pretrained(checkpoint_copy, max_bytes=size - 1)


def test_a_pickle_in_place_of_bert_weights_is_refused(checkpoint_copy: Path, minilm):
    torch.save(minilm.model.state_dict(), checkpoint_copy / "model.safetensors")
    with pytest.raises(ValueError, match="model.safetensors is not a valid safetensors file"):
        load_pretrained(checkpoint_copy)
