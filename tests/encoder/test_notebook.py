"""encoder.notebook: explore and head_view build the explorer's widget from the model's own
attention, refuse what they cannot draw with a message naming the shapes, and need neither
Streamlit nor (for the message) anywidget."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from encoder import EncoderConfig, TransformerEncoder
from encoder.io.checkpoint_files import CHECKPOINT_FILES
from encoder.io.tokenize import bundled_model_dir, tokenize
from encoder.notebook import AttentionExplorer, explore, head_view
from encoder.web.offline import explorer_html
from encoder.web.payload import SCALE, build_setup, decode_header, encode, full_weights
from tests.shared import SENTENCE, hub_snapshot

STEP = 1 / (2 * SCALE)  # the payload's rounding: at most half a uint16 step


def setups_of(widget: AttentionExplorer) -> list[dict]:
    return decode_header(widget.payload)["setups"]


def weights_of(widget: AttentionExplorer, index: int = 0) -> np.ndarray:
    """The [layers, heads, n, n] weights a payload holds at full resolution, as floats."""
    setup = setups_of(widget)[index]
    layers, heads = setup["layers"], setup["heads"]
    full = full_weights(widget.payload, index)
    assert list(full) == [(layer, head) for layer in range(layers) for head in range(heads)]
    return np.stack(list(full.values())).reshape(layers, heads, setup["n"], setup["n"])


def hf_style(attention: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """[layers, heads, T, T] as Hugging Face returns it: one [1, heads, T, T] per layer."""
    return tuple(layer[None] for layer in attention)


def test_explore_draws_minilms_attention_for_the_sentence(minilm):
    attention, tokens = minilm.attention_of(SENTENCE)
    widget = explore(SENTENCE)
    (setup,) = setups_of(widget)
    assert setup["tokens"] == tokens and setup["name"] == "A"
    assert (setup["layers"], setup["heads"], setup["n"]) == (6, 12, len(tokens))
    assert np.abs(weights_of(widget) - attention.numpy()).max() <= STEP + 1e-7
    assert (widget.layer, widget.head) == (0, 0)


def test_explore_compares_two_setups_on_one_sentence(minilm):
    model, tokenizer = minilm
    untrained = TransformerEncoder(model.cfg).eval()
    widget = explore(SENTENCE, model, tokenizer, compare=(untrained, tokenizer), layer=2, head=1)
    a, b = setups_of(widget)
    assert (a["name"], b["name"]) == ("A", "B") and a["tokens"] == b["tokens"]
    batch = tokenize([SENTENCE], tokenizer, model.cfg.max_len)
    theirs = untrained.trace(batch.input_ids, batch.attention_mask).attention[:, 0]
    assert np.abs(weights_of(widget, 1) - theirs.numpy()).max() <= STEP + 1e-7
    assert (widget.layer, widget.head) == (2, 1)


def test_explore_takes_a_checkpoint_directory(tmp_path):
    from encoder.tasks.tasks import example_sequence
    from encoder.train.config import TrainConfig
    from encoder.train.trainer import train

    config = TrainConfig(steps=1).with_model(d_model=16, num_layers=1)
    train(config).task_model().save(tmp_path)
    (setup,) = setups_of(explore(example_sequence(config.seq_len, config.vocab), tmp_path))
    heads = config.model.num_heads
    assert (setup["layers"], setup["heads"], setup["n"]) == (1, heads, config.seq_len)


def test_explore_takes_the_name_of_a_model_found_on_this_machine(minilm, tmp_path, monkeypatch):
    files = {name: (bundled_model_dir() / name).read_bytes() for name in CHECKPOINT_FILES}
    hub_snapshot(tmp_path / "hub", "sentence-transformers/all-MiniLM-L6-v2", files)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("ENCODER_EXPLORER_MODELS", "")
    attention, tokens = minilm.attention_of(SENTENCE)
    widget = explore(SENTENCE, model="sentence-transformers/all-MiniLM-L6-v2")
    (setup,) = setups_of(widget)
    assert setup["tokens"] == tokens
    assert np.abs(weights_of(widget) - attention.numpy()).max() <= STEP + 1e-7
    with pytest.raises(ValueError, match="found there: sentence-transformers/all-MiniLM-L6-v2$"):
        explore(SENTENCE, model="nobody/nothing")


def masked_cells(windows: list[int], n: int) -> np.ndarray:
    """[layers, n, n] True where a layer's window hides the key from the query: |q - k| > w // 2
    in a local layer (window w > 0), written out here from ModernBERT's sliding-window rule."""
    distance = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])  # [n, n]
    return np.stack([(distance > w // 2) if w else np.zeros((n, n), bool) for w in windows])


def test_explore_carries_each_layers_window_as_the_pages_payload_does(minilm):
    cfg = EncoderConfig(vocab_size=minilm.model.cfg.vocab_size, d_model=32, num_heads=2,
                        num_layers=5, d_ff=64, positional="rope", attention_window=4,
                        global_every=3)  # fmt: skip
    model = TransformerEncoder(cfg).eval()
    widget = explore(SENTENCE, model, minilm.tokenizer)
    (setup,) = setups_of(widget)
    windows = [0, 4, 4, 0, 4]  # global_every=3: layers 0 and 3 attend to every token
    assert setup["windows"] == windows
    batch = minilm.batch(SENTENCE)
    attention = model.trace(batch.input_ids, batch.attention_mask).attention[:, 0]  # [L,H,T,T]
    page = encode([build_setup(attention, setup["tokens"], windows=windows)])
    assert widget.payload == page  # the page's builder, given the same windows: the same bytes
    hidden = masked_cells(windows, setup["n"])[:, None].repeat(cfg.num_heads, 1)  # [L, H, n, n]
    assert hidden.any() and (weights_of(widget)[hidden] == 0).all()  # what the marks say
    assert (weights_of(widget)[~hidden] > 0).all()
    widget.head = 1  # a settled head re-sends nothing here (every head fits), windows stay
    assert setups_of(widget)[0]["windows"] == windows


def test_the_offline_file_of_a_windowed_explorer_carries_its_windows(minilm):
    cfg = EncoderConfig(vocab_size=minilm.model.cfg.vocab_size, d_model=16, num_heads=2,
                        num_layers=2, d_ff=32, attention_window=2, global_every=2)  # fmt: skip
    widget = explore(SENTENCE, TransformerEncoder(cfg), minilm.tokenizer)
    page = explorer_html(widget.payload)
    (data,) = re.findall(r'data-explorer-for="explorer">([A-Za-z0-9+/=]+)<', page)
    assert decode_header(base64.b64decode(data))["setups"][0]["windows"] == [0, 2]


def test_explore_runs_a_modernbert_checkpoint_beside_a_roberta_one(tmp_path):
    pytest.importorskip("transformers")
    from encoder.io.checkpoints import load_pretrained
    from tests.encoder.family_checkpoints import build_checkpoint

    modernbert = build_checkpoint("modernbert", tmp_path / "modernbert")
    roberta = build_checkpoint("roberta", tmp_path / "roberta")
    widget = explore(SENTENCE, model=modernbert, compare=roberta, layer=2, head=1)
    a, b = setups_of(widget)
    for index, directory in enumerate((modernbert, roberta)):
        model, tokenizer = load_pretrained(directory)
        batch = tokenize([SENTENCE], tokenizer, model.cfg.max_len)
        assert setups_of(widget)[index]["tokens"] == batch.tokens[0]
        ours = model.trace(batch.input_ids, batch.attention_mask).attention[:, 0]  # [L, H, T, T]
        assert np.abs(weights_of(widget, index) - ours.numpy()).max() <= STEP + 1e-7
    window = json.loads((modernbert / "config.json").read_text())["local_attention"]
    assert a["windows"] == [0, window, window]  # ModernBERT: every third layer global, from 0
    assert b["windows"] == [0, 0, 0]  # RoBERTa: every layer global
    assert a["tokens"][0] == "[CLS]" and b["tokens"][0] == "<s>"
    assert (widget.layer, widget.head) == (2, 1)


def test_explore_refuses_what_it_cannot_run():
    tiny = TransformerEncoder(EncoderConfig(vocab_size=100, d_model=16, num_heads=2, num_layers=1))
    with pytest.raises(ValueError, match=r"ids must be in \[0, 100\) \(vocab_size=100\)"):
        explore(SENTENCE, tiny)
    with pytest.raises(TypeError, match="model=dict is not one of ours"):
        explore(SENTENCE, {"not": "a model"})
    with pytest.raises(TypeError, match="text=list"):
        explore([SENTENCE])


def test_head_view_takes_hugging_face_attentions_and_tokens(minilm):
    attention, tokens = minilm.attention_of(SENTENCE)
    widget = head_view(hf_style(attention), tokens, layer=3, heads=[5, 2])
    assert np.abs(weights_of(widget) - attention.numpy()).max() <= STEP + 1e-7
    assert (widget.layer, widget.head) == (3, 5)
    assert setups_of(widget)[0]["tokens"] == tokens


def test_head_view_keeps_the_included_layers_with_their_numbers(minilm):
    attention, tokens = minilm.attention_of(SENTENCE)
    widget = head_view(hf_style(attention), tokens, include_layers=[1, 4], layer=4)
    (setup,) = setups_of(widget)
    assert setup["layer_labels"] == [1, 4] and widget.layer == 1  # the second layer shown
    assert np.abs(weights_of(widget) - attention[[1, 4]].numpy()).max() <= STEP + 1e-7


def test_head_view_prettifies_word_pieces_as_bertviz_does():
    attention = hf_style(torch.full((1, 1, 3, 3), 1 / 3))
    widget = head_view(attention, ["Ġthe", "▁cat", "sat</w>"])
    assert setups_of(widget)[0]["tokens"] == [" the", " cat", "sat"]
    raw = head_view(attention, ["Ġthe", "▁cat", "sat</w>"], prettify_tokens=False)
    assert setups_of(raw)[0]["tokens"] == ["Ġthe", "▁cat", "sat</w>"]


def test_head_view_can_return_the_offline_html():
    html = head_view(
        hf_style(torch.full((1, 2, 2, 2), 0.5)), ["<b>a</b>", "b"], html_action="return"
    )
    assert "function mount(" in html.data and "<b>a</b>" not in html.data


@pytest.mark.parametrize(
    ("attention", "tokens", "message"),
    [
        (
            (torch.full((1, 2, 3, 3), 1 / 3),),
            ["a", "b"],
            r"\(1, 2, 3, 3\) per layer \(T=3\) but there are 2 tokens",
        ),
        (
            (torch.full((2, 2, 3, 3), 1 / 3),),
            ["a", "b", "c"],
            r"\[batch=1, heads, T, T\]; got \(2, 2, 3, 3\)",
        ),
        ((torch.full((2, 3, 3), 1 / 3),), ["a", "b", "c"], r"got \(2, 3, 3\)"),
        (
            (torch.full((1, 2, 3, 3), 1 / 3), torch.full((1, 4, 3, 3), 1 / 3)),
            ["a", "b", "c"],
            r"layer 0: \(1, 2, 3, 3\), layer 1: \(1, 4, 3, 3\)",
        ),
        (torch.full((1, 1, 2, 2), 0.5), ["a", "b"], "one tensor per layer"),
    ],
)
def test_head_view_names_the_shapes_that_do_not_match(attention, tokens, message):
    with pytest.raises(ValueError, match=message):
        head_view(attention, tokens)


def test_head_view_refuses_what_the_explorer_does_not_draw():
    attention, tokens = hf_style(torch.full((1, 2, 2, 2), 0.5)), ["a", "b"]
    with pytest.raises(ValueError, match="encoder-decoder attention is not drawn here"):
        head_view(encoder_attention=attention, encoder_tokens=tokens)
    with pytest.raises(ValueError, match="sentence_b_start=1 is not supported"):
        head_view(attention, tokens, sentence_b_start=1)
    with pytest.raises(ValueError, match="html_action='save' must be one of"):
        head_view(attention, tokens, html_action="save")
    with pytest.raises(ValueError, match=r"layer=3 is not among the layers shown: \[0\]"):
        head_view(attention, tokens, layer=3)
    with pytest.raises(ValueError, match=r"heads=\[2, ...\] must name heads 0..1"):
        head_view(attention, tokens, heads=[2])
    with pytest.raises(ValueError, match="is not a number at query 0, key 1"):
        head_view(hf_style(torch.tensor([[[[0.5, float("nan")], [0.5, 0.5]]]])), tokens)


def test_a_long_input_sends_the_settled_head_at_full_resolution():
    n = 300  # 6 x 12 heads of 300 tokens do not all fit at full resolution
    attention = torch.softmax(
        torch.randn(6, 12, n, n, generator=torch.Generator().manual_seed(0)), -1
    )
    widget = head_view(hf_style(attention), [f"t{i}" for i in range(n)])
    assert setups_of(widget)[0]["full"] == [[0, 0]]
    widget.head = 7  # what the browser's onSelect does when a head settles
    assert setups_of(widget)[0]["full"] == [[0, 7]]


IMPORTS = """
import sys
sys.modules["anywidget"] = None  # as if the notebook extra were not installed
try:
    import encoder.notebook
except ImportError as error:
    print(error)
del sys.modules["anywidget"]
import encoder.notebook
print("streamlit" in sys.modules)
"""


def test_the_import_names_the_missing_extra_and_never_imports_streamlit():
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.splitlines() == [
        'encoder.notebook needs anywidget: pip install "encoder-explorer[notebook]"',
        "False",
    ], done.stderr
