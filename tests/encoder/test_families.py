"""Every encoder family the loaders read, against transformers on tiny checkpoints built here
(tests/encoder/family_checkpoints.py): attention of every layer, every hidden state and the output
within 1e-5 on the real tokens of a padded batch; the tokenizer's ids are tokenizers' own; sharded
weights; uploads; and each refusal's message."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

from encoder.io.checkpoint_files import (
    checkpoint_archive,
    files_from_archive,
    read_checkpoint_dir,
)
from encoder.io.checkpoints import (
    checkpoint_from_files,
    load_checkpoint,
    load_pretrained,
)
from tests.encoder.family_checkpoints import (
    CASES,
    HIDDEN,
    LAYERS,
    POSITIONS,
    SENTENCES,
    Run,
    build_checkpoint,
    largest_differences,
    run_both,
)
from tests.encoder.helpers import needs_cuda

TOLERANCE = 1e-5


@pytest.fixture(scope="module", autouse=True)
def offline(tmp_path_factory):
    """transformers reads only the files built here, and keeps quiet about the heads it drops."""
    from transformers.utils import logging

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        verbosity = logging.get_verbosity()
        logging.set_verbosity_error()
        yield
        logging.set_verbosity(verbosity)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Callable[[str], Run]:
    """run(case): the case's Run on the CPU, built once per module."""
    built: dict[str, Run] = {}

    def run(case: str) -> Run:
        if case not in built:
            family, overrides, _ = CASES[case]
            directory = build_checkpoint(family, tmp_path_factory.mktemp(case), **overrides)
            built[case] = run_both(directory, load_checkpoint(directory))
        return built[case]

    return run


@pytest.fixture(params=list(CASES))
def both(request, runs) -> tuple[str, Run]:
    return request.param, runs(request.param)


def test_the_batch_is_padded(both):
    _, (_, _, batch, _, _) = both
    assert len(set(batch.lengths)) == 3 and (batch.attention_mask == 0).any()


def test_family_is_named(both):
    case, (_, checkpoint, _, _, _) = both
    assert checkpoint.family == CASES[case][2]
    assert not checkpoint.encoder.training


def test_attention_hidden_states_and_output_match_transformers(both):
    """Every layer's attention, the embeddings' output (after ELECTRA's and ALBERT's projection)
    and each block's but the last (transformers' last hidden state is its output, after
    ModernBERT's final norm; ours is the residual stream before it), and the output."""
    _, run = both
    assert run.ours.attention.shape[0] == len(run.theirs.attentions) == LAYERS
    assert len(run.ours.hidden_states) == len(run.theirs.hidden_states) == LAYERS + 1
    differences = largest_differences(run)
    assert max(differences.values()) < TOLERANCE, differences


def test_padded_keys_get_no_attention_and_the_last_hidden_state_is_before_any_final_norm(both):
    _, (_, checkpoint, batch, ours, theirs) = both
    real = batch.attention_mask.bool()  # [B, T]
    assert (ours.attention.masked_select(~real[None, :, None, None, :]) == 0).all()
    torch.testing.assert_close(theirs.hidden_states[-1], theirs.last_hidden_state)
    final_norm = (ours.hidden_states[-1] - ours.output).abs()[real].max().item()
    if checkpoint.encoder.cfg.norm_first:
        assert final_norm > 0.1
    else:
        assert final_norm == 0


@needs_cuda
@pytest.mark.parametrize("case", list(CASES))
def test_every_family_matches_transformers_on_cuda(runs, case):
    on_cpu = runs(case)
    differences = largest_differences(run_both(on_cpu.directory, on_cpu.checkpoint, "cuda:0"))
    assert max(differences.values()) < TOLERANCE, differences


def test_token_ids_are_the_tokenizers_own(both):
    _, (directory, _, batch, _, _) = both
    reference = Tokenizer.from_file(str(directory / "tokenizer.json"))
    for row, sentence in enumerate(SENTENCES):
        encoding = reference.encode(sentence)
        length = len(encoding.ids)
        assert batch.input_ids[row, :length].tolist() == encoding.ids
        assert batch.tokens[row] == encoding.tokens
        padding = batch.padded_tokens()[row][length:]
        assert set(padding) <= {batch.pad_token}
        assert (batch.input_ids[row, length:] == reference.token_to_id(batch.pad_token)).all()


def test_pad_token_is_the_familys(both):
    case, (directory, _, batch, _, _) = both
    config = json.loads((directory / "config.json").read_text())
    reference = Tokenizer.from_file(str(directory / "tokenizer.json"))
    assert batch.pad_token == reference.id_to_token(config["pad_token_id"])
    family = CASES[case][0]
    assert batch.pad_token == (
        "[PAD]" if family in ("bert", "distilbert", "electra", "modernbert") else "<pad>"
    )


# --- what each family's config becomes ---------------------------------------------------------


@pytest.mark.parametrize("case", ["roberta", "xlm-roberta", "camembert"])
def test_roberta_positions_start_after_the_padding_index(runs, case):
    checkpoint = runs(case).checkpoint
    cfg = checkpoint.encoder.cfg
    assert (cfg.position_offset, cfg.max_len) == (2, POSITIONS - 2)  # pad_token_id 1
    assert checkpoint.encoder.embed.position.weight.shape[0] == POSITIONS


def test_albert_shares_one_layer(runs):
    model = runs("albert").checkpoint.encoder
    assert model.cfg.shared_layers and model.cfg.activation == "gelu_tanh"
    assert model.cfg.embedding_size == 16
    assert model.layers[2].linear1.weight is model.layers[0].linear1.weight
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    assert not any(name.startswith("layers.1.") for name in shapes)  # counted once


@pytest.mark.parametrize("case", ["modernbert", "modernbert-biases"])
def test_modernbert_is_pre_norm_rope_geglu_local(runs, case):
    cfg = runs(case).checkpoint.encoder.cfg
    assert (cfg.norm_first, cfg.positional, cfg.activation) == (True, "rope", "geglu")
    assert (cfg.rope_base_of(0), cfg.rope_base_of(1)) == (160000.0, 10000.0)
    assert [cfg.is_local(i) for i in range(LAYERS)] == [False, True, True]
    assert cfg.attention_window == 4 and not cfg.first_attention_norm
    biased = case == "modernbert-biases"
    assert (cfg.linear_bias, cfg.norm_bias) == (biased, biased)


# --- sharded weights and uploads ---------------------------------------------------------------


@pytest.mark.parametrize("family", ["bert", "modernbert"])
def test_sharded_weights_load_as_one_file(tmp_path: Path, family: str):
    whole = build_checkpoint(family, tmp_path / "whole")
    sharded = build_checkpoint(family, tmp_path / "sharded", max_shard_size="20KB")
    shards = sorted(path.name for path in sharded.glob("*.safetensors"))
    assert len(shards) > 1 and not (sharded / "model.safetensors").exists()
    expected = load_pretrained(whole)[0].state_dict()
    got = load_pretrained(sharded)[0].state_dict()
    assert expected.keys() == got.keys()
    for name, tensor in expected.items():
        assert torch.equal(got[name], tensor), name
    # the same shards uploaded as a zip archive
    files = files_from_archive(checkpoint_archive(read_checkpoint_dir(sharded)), "up.zip")
    assert set(files) == {"config.json", "tokenizer.json", "model.safetensors.index.json", *shards}
    uploaded = checkpoint_from_files(files, "up.zip")
    assert torch.equal(uploaded.encoder.embed.token.weight, expected["embed.token.weight"])


def test_a_shard_missing_from_an_upload_is_named(tmp_path: Path):
    sharded = build_checkpoint("bert", tmp_path, max_shard_size="20KB")
    files = read_checkpoint_dir(sharded)
    shard = sorted(name for name in files if name.endswith(".safetensors"))[-1]
    del files[shard]
    with pytest.raises(ValueError, match=f"up lacks {shard}"):
        checkpoint_from_files(files, "up")


def test_a_family_uploads_as_a_zip(tmp_path: Path):
    directory = build_checkpoint("roberta", tmp_path)
    archive = checkpoint_archive(read_checkpoint_dir(directory))
    checkpoint = checkpoint_from_files(files_from_archive(archive, "roberta.zip"), "roberta.zip")
    assert checkpoint.family == "RoBERTa" and checkpoint.encoder.cfg.position_offset == 2


# --- refusals ----------------------------------------------------------------------------------


class Touch:
    """A pickle that, were it ever loaded, would create the file at `path`."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def _config_dir(tmp_path: Path, config: dict) -> Path:
    """A directory that claims to be a checkpoint: config.json, weights as a pickle."""
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "pytorch_model.bin").write_bytes(b"never read")
    return tmp_path


def refusal(path: Path) -> str:
    with pytest.raises(ValueError) as error:
        load_pretrained(path)
    return str(error.value)


@pytest.mark.parametrize(
    ("config", "said"),
    [
        (
            {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]},
            "model_type 'gpt2' is a decoder",
        ),
        ({"model_type": "llama"}, "model_type 'llama' is a decoder"),
        ({"model_type": "bert", "is_decoder": True}, "model_type 'bert' is a decoder"),
        ({"model_type": "t5", "is_encoder_decoder": True}, "model_type 't5' is an encoder-decoder"),
        ({"model_type": "bart"}, "model_type 'bart' is an encoder-decoder"),
        ({"model_type": "deberta-v2"}, "DeBERTa's disentangled attention"),
        ({"model_type": "deberta"}, "is not this model's attention"),
        (
            {"model_type": "xlnet"},
            "model_type 'xlnet' is not a family this loader reads; it reads BERT, RoBERTa, XLM-R",
        ),
    ],
)
def test_what_is_not_an_encoder_we_read_is_refused_as_what_it_is(tmp_path, config, said):
    message = refusal(_config_dir(tmp_path, config))
    assert message.startswith(f"{tmp_path / 'config.json'}: ")
    assert said in message


def test_weights_only_as_a_pickle_are_refused_with_the_way_to_convert_them(tmp_path: Path):
    directory = build_checkpoint("bert", tmp_path / "bert")
    (directory / "model.safetensors").unlink()
    marker = tmp_path / "unpickled"
    (directory / "pytorch_model.bin").write_bytes(pickle.dumps(Touch(marker)))
    message = refusal(directory)
    assert message.startswith(
        f"{directory} has its weights only as pytorch_model.bin, a Python pickle"
    )
    assert "AutoModel.from_pretrained('DIR').save_pretrained('DIR')" in message
    assert not marker.exists()  # never unpickled
    files = {"config.json": (directory / "config.json").read_bytes(),
             "tokenizer.json": (directory / "tokenizer.json").read_bytes(),
             "pytorch_model.bin": (directory / "pytorch_model.bin").read_bytes()}  # fmt: skip
    with pytest.raises(ValueError, match="up has its weights only as pytorch_model.bin"):
        checkpoint_from_files(files, "up")
    with pytest.raises(ValueError, match="up.zip has its weights only as pytorch_model.bin"):
        files_from_archive(checkpoint_archive(files), "up.zip")
    assert not marker.exists()


def test_a_missing_tokenizer_is_said(tmp_path: Path):
    directory = build_checkpoint("xlm-roberta", tmp_path)
    files = read_checkpoint_dir(directory)
    (directory / "tokenizer.json").unlink()
    assert refusal(directory).startswith(f"{directory} has no tokenizer.json")
    del files["tokenizer.json"]
    with pytest.raises(ValueError, match="^up lacks tokenizer.json$"):
        checkpoint_from_files(files, "up")


def _edit_weights(directory: Path, edit) -> None:
    tensors = load_file(directory / "model.safetensors")
    edit(tensors)
    save_file(tensors, directory / "model.safetensors")


def test_a_mis_shaped_position_table_is_named(tmp_path: Path):
    """RoBERTa's table has max_len + 2 rows; one row short is refused."""
    directory = build_checkpoint("roberta", tmp_path)
    name = "roberta.embeddings.position_embeddings.weight"
    _edit_weights(directory, lambda tensors: tensors.update({name: tensors[name][:-1]}))
    message = refusal(directory)
    assert message == (
        f"{directory}/model.safetensors: tensor embeddings.position_embeddings.weight has shape "
        f"({POSITIONS - 1}, {HIDDEN}), but config.json implies ({POSITIONS}, {HIDDEN})"
    )


def test_a_mis_shaped_gated_projection_is_named(tmp_path: Path):
    directory = build_checkpoint("modernbert", tmp_path)
    name = "model.layers.1.mlp.Wi.weight"
    _edit_weights(directory, lambda tensors: tensors.update({name: tensors[name][:48]}))
    assert refusal(directory) == (
        f"{directory}/model.safetensors: tensor layers.1.mlp.Wi.weight has shape (48, {HIDDEN}), "
        f"but config.json implies (96, {HIDDEN})"
    )


def test_biases_the_config_does_not_have_are_named(tmp_path: Path):
    directory = build_checkpoint("modernbert", tmp_path)
    name = "model.layers.0.attn.Wo.bias"
    _edit_weights(directory, lambda tensors: tensors.update({name: torch.zeros(HIDDEN)}))
    assert refusal(directory) == (
        f"{directory}/model.safetensors has tensors this encoder does not use: "
        f"layers.0.attn.Wo.bias"
    )


def test_albert_with_layer_groups_is_refused(tmp_path: Path):
    directory = build_checkpoint("albert", tmp_path, num_hidden_groups=2)
    assert "num_hidden_groups=2; only ALBERT with one group of one shared layer" in refusal(
        directory
    )


def test_modernbert_with_biases_on_one_side_only_is_refused(tmp_path: Path):
    directory = build_checkpoint("modernbert", tmp_path, attention_bias=True)
    assert "attention_bias=True and mlp_bias=False differ" in refusal(directory)


def test_modernbert_scaled_rope_is_refused(tmp_path: Path):
    directory = build_checkpoint("modernbert", tmp_path)
    config = json.loads((directory / "config.json").read_text())
    config["rope_parameters"]["full_attention"]["rope_type"] = "linear"
    (directory / "config.json").write_text(json.dumps(config))
    assert "only plain RoPE (rope_type 'default' with a rope_theta) is" in refusal(directory)


def test_a_config_without_model_type_reads_as_bert(tmp_path: Path):
    directory = build_checkpoint("bert", tmp_path)
    config = json.loads((directory / "config.json").read_text())
    del config["model_type"]
    (directory / "config.json").write_text(json.dumps(config))
    checkpoint = load_checkpoint(directory)
    assert checkpoint.family == "BERT"


def test_the_bundled_minilm_is_bert():
    assert load_checkpoint().family == "BERT"


def _sharded_files(tmp_path: Path) -> dict[str, bytes]:
    return read_checkpoint_dir(build_checkpoint("bert", tmp_path, max_shard_size="20KB"))


def test_an_index_naming_a_shard_outside_its_directory_is_refused(tmp_path: Path):
    files = _sharded_files(tmp_path)
    index = json.loads(files["model.safetensors.index.json"])
    tensor = next(iter(index["weight_map"]))
    index["weight_map"][tensor] = "../elsewhere.safetensors"
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    with pytest.raises(ValueError) as error:
        checkpoint_from_files(files, "up")
    assert str(error.value) == (
        "up/model.safetensors.index.json names shards that are not .safetensors files beside "
        "it: ../elsewhere.safetensors"
    )


def test_a_tensor_in_another_shard_than_the_index_says_is_refused(tmp_path: Path):
    files = _sharded_files(tmp_path)
    index = json.loads(files["model.safetensors.index.json"])
    first, second = sorted(set(index["weight_map"].values()))[:2]
    moved = next(name for name, shard in index["weight_map"].items() if shard == first)
    index["weight_map"][moved] = second
    files["model.safetensors.index.json"] = json.dumps(index).encode()
    with pytest.raises(ValueError) as error:
        checkpoint_from_files(files, "up")
    assert str(error.value) == (
        f"up/{first} holds {moved}, which model.safetensors.index.json does not place there"
    )


def _edit_config(directory: Path, edit) -> None:
    config = json.loads((directory / "config.json").read_text())
    edit(config)
    (directory / "config.json").write_text(json.dumps(config))


def test_modernbert_configs_of_transformers_4_read_as_those_of_5(tmp_path: Path):
    """transformers 4 wrote global_rope_theta and local_rope_theta, no layer_types; 5 writes
    rope_parameters and layer_types. Both are the same encoder."""
    directory = build_checkpoint("modernbert", tmp_path, global_rope_theta=80000.0)
    written = load_checkpoint(directory).encoder.cfg

    def as_version_4(config: dict) -> None:
        rope = config.pop("rope_parameters")
        config["global_rope_theta"] = rope["full_attention"]["rope_theta"]
        config["local_rope_theta"] = rope["sliding_attention"]["rope_theta"]
        del config["layer_types"]

    _edit_config(directory, as_version_4)
    assert load_checkpoint(directory).encoder.cfg == written
    assert (written.rope_base, written.rope_local_base, written.global_every) == (80000.0, 1e4, 3)


def test_modernbert_layer_types_other_than_global_every_n_layers_are_refused(tmp_path: Path):
    directory = build_checkpoint("modernbert", tmp_path)
    _edit_config(directory, lambda config: config["layer_types"].reverse())
    assert "is not global attention every n layers from layer 0" in refusal(directory)
