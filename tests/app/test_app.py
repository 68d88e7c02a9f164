"""The page driven as a user would, through Streamlit's AppTest (no browser)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from encoder.io.tokenize import load_tokenizer, tokenize
from encoder.web.payload import decode_header
from tests.app.helpers import (
    architecture_said,
    array,
    assert_no_exception,
    explorer,
    figure,
    go,
    heatmaps,
    module_data,
    open_page,
    page_model,
    shown,
    tokens_of,
)
from tests.shared import SENTENCE


def explorer_tokens(at: AppTest) -> list[str]:
    return explorer(at)[0]["tokens"]


def test_default_page_draws_every_head_and_no_status_line():
    at = open_page(view="Attention")
    assert_no_exception(at)
    keys = {chart.key for chart in at.get("plotly_chart")}
    assert not keys & {"overview", "head_detail"}  # every head, one head: the explorer draws them
    tokens = tokens_of(SENTENCE)
    entry, weights = explorer(at)
    assert weights.shape == (4, 4, len(tokens), len(tokens))  # every head at full resolution
    assert entry["tokens"] == tokens  # user text as data, unescaped: the browser draws it as text
    model = page_model()
    batch = tokenize([SENTENCE], load_tokenizer(), 512)
    with torch.no_grad():
        expected = model.trace(batch.input_ids).attention[:, 0].numpy()  # [L, H, T, T]
    np.testing.assert_allclose(weights, expected, atol=1e-4)
    assert not [c for c in at.main.caption if "forward pass" in c.value]  # a developer's line
    at = open_page(view="Attention", timing="1")  # asked for: last on the page
    status = at.main.caption[-1].value
    assert "Device cpu" in status and f"{len(tokens)} tokens" in status
    assert at.toggle(key="timing").value is True and at.query_params["timing"] == "1"
    at.toggle(key="timing").set_value(False).run()  # the sidebar's switch turns it off
    assert "forward pass" not in at.main.caption[-1].value and "timing" not in at.query_params


def test_heads_norm_and_layers_change_what_is_drawn():
    at = open_page(view="Attention")
    at.selectbox(key="num_heads").set_value(8).run()
    at.slider(key="num_layers").set_value(2).run()
    assert_no_exception(at)
    n = len(tokens_of(SENTENCE))
    assert explorer(at)[1].shape == (2, 8, n, n)
    assert at.query_params["num_heads"] == "8" and at.query_params["num_layers"] == "2"
    at.radio(key="norm").set_value("post").run()
    go(at, "LayerNorm")
    assert_no_exception(at)
    assert at.info[0].value.startswith("Post-norm")
    at.radio(key="norm").set_value("pre").run()
    assert at.info[0].value.startswith("Pre-norm")


def test_heads_offered_are_the_divisors_of_d_model():
    at = open_page(view="Attention")
    at.select_slider(key="d_model").set_value(96).run()
    assert at.selectbox(key="num_heads").options == [
        str(h) for h in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64) if 96 % h == 0
    ]


def test_pretrained_model_locks_the_architecture_and_restores_it_after():
    at = open_page(view="Attention")
    at.radio(key="source").set_value("pretrained").run()
    assert_no_exception(at)
    assert architecture_said(at) == (
        "post-norm, d_model 384, 12 heads, 6 layers, d_ff 1536, GELU, LayerNorm, learned positions"
    )  # in place of the controls: its weights fit no other architecture
    assert not at.sidebar.select_slider and not at.sidebar.number_input  # d_model, d_ff, seed
    n = len(tokens_of(SENTENCE))
    assert explorer(at)[1].shape == (6, 12, n, n)
    at.radio(key="source").set_value("random").run()
    assert at.select_slider(key="d_model").value == 256
    assert at.radio(key="norm").value == "pre"


@pytest.mark.parametrize("view", ["Tokens", "Attention", "LayerNorm", "Shapes", "Export"])
def test_every_view_renders_for_two_sentences(view):
    at = open_page(text="The cat sat on the mat.\nA much longer second sentence pads the first.")
    go(at, view)
    assert_no_exception(at)
    assert not at.error


def test_tokens_view_shows_the_padded_batch():
    longer = "A much longer second sentence pads the first one."
    at = open_page(text=f"Short one.\n{longer}", view="Tokens")
    assert_no_exception(at)
    grid = figure(at, "mask_grid")
    z = array(heatmaps(grid)[0]["z"])
    longest = len(tokens_of(longer))
    short = len(tokens_of("Short one."))
    assert z.shape == (2, longest)
    assert z[0].sum() == short and z[1].sum() == longest


def test_shapes_view_has_ledger_diagram_and_equations():
    at = open_page(view="Shapes")
    assert_no_exception(at)
    ledger = at.table[0].value  # HTML: its long shapes wrap
    assert {"operation", "input shape", "output shape", "params", "flops"} <= set(ledger.columns)
    assert len(at.latex) >= 3
    n = len(tokens_of(SENTENCE))  # the default text's first example
    # the block diagram: block_diagram.js's data (SVG in the browser), no plotly on the view
    diagram = module_data(at, "block_diagram")
    assert not at.get("plotly_chart")
    assert diagram["title"].startswith("Pre-norm block")
    nodes = diagram["nodes"]
    assert len(nodes) == 12 and [n["kind"] for n in (nodes[0], nodes[-1])] == ["io", "io"]
    shapes = [node["shape"] for node in nodes]
    assert shapes[0] == shapes[-1] == f"[1, {n}, 256]"  # d 256
    assert f"[1, 4, {n}, 64]" in shapes and f"[1, 4, {n}, {n}]" in shapes  # 4 heads of 64
    assert f"[1, {n}, 1024]" in shapes  # the feed-forward's d_ff
    assert diagram["skips"] == [[0, 5], [5, 10]] and diagram["notes"] == []


def test_empty_text_gets_a_message_and_the_page_keeps_working():
    at = open_page(text="   \n  ")
    assert_no_exception(at)
    assert "empty" in at.info[0].value
    at.text_area(key="text").set_value("Back to work.").run()
    assert_no_exception(at)
    assert explorer_tokens(at) == tokens_of("Back to work.")


def test_a_5000_word_paste_is_truncated_and_the_page_says_where():
    at = open_page()
    at.text_area(key="text").set_value(" ".join(["word"] * 5000) + " ending").run()
    assert_no_exception(at)
    warning = at.warning[0].value
    assert "only the first 512 are used" in warning and "cut after" in warning


def test_hundreds_of_lines_use_only_the_first_sentences():
    at = open_page()
    at.text_area(key="text").set_value("\n".join(f"Line {i}." for i in range(300))).run()
    assert_no_exception(at)
    assert any("Only the first 16 of 300 lines" in w.value for w in at.warning)


@pytest.mark.parametrize(
    "text",
    [
        "I love pizza 🍕🍕!",
        "我喜欢机器学习。",
        "مرحبا بالعالم",
        "<img src=x onerror=alert(1)> <b>bold</b>",
    ],
)
def test_unusual_text_is_shown_literally(text):
    at = open_page(text=text)
    assert_no_exception(at)
    tokens = tokens_of(text)
    assert explorer_tokens(at) == tokens
    unknown = tokens.count("[UNK]")
    said = f"{unknown} {'token is' if unknown == 1 else 'tokens are'} [UNK]: pieces of the text"
    assert any(said in shown(i.value) for i in at.info) == (unknown > 0)
    go(at, "Tokens")
    assert list(at.dataframe[0].value["token"]) == tokens


def test_impossible_url_combination_is_explained_and_repaired():
    at = open_page(d_model="100", num_heads="12")
    assert_no_exception(at)
    assert any("num_heads=12 does not divide d_model=100" in w.value for w in at.warning)
    assert at.selectbox(key="num_heads").value == 10
    assert at.header[0].value == "Every head at once: 4 layers x 10 heads"


def test_bad_url_values_fall_back_with_a_message():
    at = open_page(norm="sideways", num_layers="many", device="cuda:7")
    assert_no_exception(at)
    messages = re.sub(r"\\(.)", r"\1", " ".join(w.value for w in at.warning))  # as shown
    assert "norm='sideways'" in messages and "num_layers='many'" in messages
    assert "'cuda:7' is not available" in messages
    assert at.selectbox(key="device").value == "cpu"


def test_a_model_too_large_is_refused_with_the_estimate_and_the_limit():
    at = open_page(d_model="1024", num_heads="16", num_layers="24", d_ff="8192")
    assert_no_exception(at)
    assert "million parameters" in at.error[0].value and "limit is 150 million" in at.error[0].value
    at.slider(key="num_layers").set_value(2).run()
    assert not at.error and explorer(at)


def test_impossible_sinusoidal_config_is_an_error_not_a_traceback():
    at = open_page(d_model="7", num_heads="7", positional="sinusoidal")  # sin/cos pairs need even d
    assert_no_exception(at)
    assert at.select_slider(key="d_model").value == 7
    (error,) = at.error
    assert error.value.startswith("This architecture is impossible: d_model=7 must be even")
    assert "positional='sinusoidal'" in error.value
    assert not at.get("bidi_component")
    at.radio(key="positional").set_value("learned").run()  # learned positions take any width
    assert_no_exception(at)
    assert not at.error and explorer(at)


def test_a_link_reopens_the_exact_setup():
    query = dict(
        text="Links carry the text.",
        norm="post",
        d_model="128",
        num_heads="8",
        num_layers="3",
        d_ff="512",
        activation="relu",
        norm_type="rmsnorm",
        positional="learned",
        seed="7",
        view="Shapes",
    )
    at = open_page(**query)
    assert_no_exception(at)
    assert at.text_area(key="text").value == "Links carry the text."
    assert at.radio(key="norm").value == "post"
    assert at.select_slider(key="d_model").value == 128
    assert at.selectbox(key="num_heads").value == 8
    assert at.slider(key="num_layers").value == 3
    assert at.radio(key="norm_type").value == "rmsnorm"
    assert at.number_input(key="seed").value == 7
    assert at.session_state["view"] == "Shapes"  # the page's path now names the view
    assert "view" not in at.query_params
    for key, value in query.items():
        assert key == "view" or at.query_params[key] == value


def test_the_link_carries_only_what_differs_from_what_a_bare_link_opens():
    at = open_page(view="Attention", source="pretrained")
    assert_no_exception(at)
    assert dict(at.query_params) == {"source": "pretrained"}  # MiniLM's architecture: its own
    again = open_page(**at.query_params, view="Attention")  # the short link: the same setup
    assert architecture_said(again) == architecture_said(at)
    assert again.text_area(key="text").value == at.text_area(key="text").value == SENTENCE
    at = open_page(view="Attention", num_heads="8", layer="1")
    assert dict(at.query_params) == {"num_heads": "8", "layer": "1"}
    at.selectbox(key="num_heads").set_value(4).run()  # back to the default: out of the link
    assert dict(at.query_params) == {"layer": "1"}
    at = open_page(view="Attention", source="random")  # random weights are the default
    assert dict(at.query_params) == {}


def test_choices_in_one_view_survive_a_visit_to_another():
    at = open_page(view="Attention", layer="2", head="3")  # the explorer's head, in the link
    go(at, "Training")
    at.number_input(key="train_steps").set_value(345).run()
    go(at, "Shapes")
    go(at, "Attention")
    assert (at.session_state["layer"], at.session_state["head"]) == (2, 3)
    assert (at.query_params["layer"], at.query_params["head"]) == ("2", "3")
    go(at, "Training")
    assert at.number_input(key="train_steps").value == 345


def test_examples_and_presets_fill_the_controls():
    at = open_page(view="Attention")
    at.selectbox(key="example").set_value("Two sentences (padding)").run()
    assert at.text_area(key="text").value.startswith("The cat sat on the mat.\n")
    at.selectbox(key="preset").set_value(
        "Original Transformer base (post-norm, ReLU, 6 x 8, d 512)"
    ).run()
    assert_no_exception(at)
    assert at.radio(key="norm").value == "post" and at.radio(key="activation").value == "relu"
    assert at.select_slider(key="d_model").value == 512
    first = at.text_area(key="text").value.splitlines()[0]
    n = len(tokens_of(first))  # the explorer draws the first sentence's real tokens, no padding
    assert explorer(at)[1].shape == (6, 8, n, n)


def test_one_layer_and_one_head_need_no_slider():
    at = open_page(num_layers="1", num_heads="1")
    assert_no_exception(at)
    assert at.header[0].value == "Every head at once: 1 layer x 1 head"
    go(at, "LayerNorm")
    assert_no_exception(at)


@pytest.mark.parametrize(
    ("norm_bias", "said"), [("on", "gain and bias"), ("off", "gain (no bias)")]
)
def test_the_layernorm_view_says_a_bias_only_where_the_norms_have_one(norm_bias, said):
    at = open_page(view="LayerNorm", norm_bias=norm_bias)
    assert_no_exception(at)
    sentence = next(i.value for i in at.info if "applies its gain" in i.value)
    assert f"then applies its {said}." in sentence


def test_a_chosen_layer_beyond_a_shrunken_model_is_brought_back_in_range():
    at = open_page(view="Attention", layer="3")
    at.slider(key="num_layers").set_value(2).run()
    assert_no_exception(at)
    assert at.session_state["layer"] == 1


def test_markdown_in_user_text_stays_literal_in_messages():
    at = open_page(norm="**bold** :red[x] $x$")
    assert_no_exception(at)
    assert any(r"\*\*bold\*\* \:red\[x\] \$x\$" in w.value for w in at.warning)


def test_the_explorer_is_sent_without_words_and_the_same_in_every_language():
    # it speaks the page's words (encoder/web/shared.js's PAGE_SPEECH): a switch sends it again
    # only as a reference
    at = open_page(view="Attention")
    sent = at.get("bidi_component")[0].proto.bytes
    assert not {"lang", "words"} & decode_header(sent).keys()
    at.selectbox(key="_language").set_value("ar").run()
    assert_no_exception(at)
    assert at.get("bidi_component")[0].proto.bytes == sent


def test_stretched_colours_for_random_weights():
    at = open_page(view="Attention")
    header = decode_header(at.get("bidi_component")[0].proto.bytes)
    assert header["stretch"] is False
    at.toggle(key="stretch").set_value(True).run()
    assert_no_exception(at)
    assert decode_header(at.get("bidi_component")[0].proto.bytes)["stretch"] is True
