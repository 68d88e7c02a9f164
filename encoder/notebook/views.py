"""`explore` (our models, by sentence) and `head_view` (any model's attentions, BertViz's way)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from encoder.notebook.setups import (
    ModelLike,
    SentenceAttention,
    TokenizerLike,
    resolve,
    sentence_attention,
)
from encoder.notebook.widget import AttentionExplorer, payload_of
from encoder.web.offline import explorer_html

SetupLike = ModelLike | tuple[ModelLike, TokenizerLike]
HTML_ACTIONS = ("view", "return")


def explore(
    text: str,
    model: ModelLike = None,
    tokenizer: TokenizerLike = None,
    *,
    compare: SetupLike = None,
    layer: int = 0,
    head: int = 0,
) -> AttentionExplorer:
    """The explorer for one sentence: every layer and head of `model` (default: the bundled
    all-MiniLM-L6-v2; or a TransformerEncoder of ours, a checkpoint directory, or the name of a
    model found on this machine, such as "FacebookAI/roberta-base": encoder.io.finder).

    compare: a second setup (a model, a directory, or a (model, tokenizer) pair) run on the same
    sentence; the explorer then draws A, B and B - A with one selection.
    """
    runs = [sentence_attention(resolve(model, tokenizer, "A"), text)]
    if compare is not None:
        model_b, tokenizer_b = compare if isinstance(compare, tuple) else (compare, None)
        runs.append(sentence_attention(resolve(model_b, tokenizer_b, "B"), text))
    return AttentionExplorer(runs, layer, head)


def head_view(
    attention: Sequence[torch.Tensor] | None = None,
    tokens: Sequence[str] | None = None,
    sentence_b_start: int | None = None,
    prettify_tokens: bool = True,
    layer: int | None = None,
    heads: Sequence[int] | None = None,
    encoder_attention=None,
    decoder_attention=None,
    cross_attention=None,
    encoder_tokens=None,
    decoder_tokens=None,
    include_layers: Sequence[int] | None = None,
    html_action: str = "view",
):
    """BertViz's head_view, drawn by our explorer: `from bertviz import head_view` becomes
    `from encoder.notebook import head_view`.

    attention: one tensor per layer, [batch=1, heads, T, T] (a Hugging Face model's
    `outputs.attentions` with output_attentions=True); tokens: the T tokens.
    layer, heads: the layer and first head shown; include_layers: the layers kept.
    html_action: "view" returns the widget; "return" an IPython HTML object holding the
    self-contained explorer (no server, no network).
    Encoder-decoder attention and sentence_b_start are refused with a ValueError.
    """
    encoder_decoder = (
        encoder_attention,
        decoder_attention,
        cross_attention,
        encoder_tokens,
        decoder_tokens,
    )
    if any(given is not None for given in encoder_decoder):
        raise ValueError(
            "encoder-decoder attention is not drawn here: the explorer shows self-attention; "
            "pass attention= and tokens= of an encoder (or one stack at a time)"
        )
    if sentence_b_start is not None:
        raise ValueError(
            f"sentence_b_start={sentence_b_start} is not supported: the explorer draws every token "
            "of the pair together; leave it out"
        )
    if html_action not in HTML_ACTIONS:
        raise ValueError(f"html_action={html_action!r} must be one of {HTML_ACTIONS}")
    if attention is None or tokens is None:
        raise ValueError("head_view needs attention= (one tensor per layer) and tokens=")
    stacked = stack_layers(attention, len(tokens))  # [L, H, T, T]
    kept = _kept_layers(include_layers, stacked.shape[0])
    first_layer = 0 if layer is None else kept.index(_check_layer(layer, kept))
    first_head = 0 if not heads else _check_head(heads[0], stacked.shape[1])
    words = [prettify(token) for token in tokens] if prettify_tokens else [str(t) for t in tokens]
    runs = [SentenceAttention(stacked[kept], words, "A", tuple(kept))]
    if html_action == "return":
        from IPython.display import HTML

        page = payload_of(runs, first_layer, first_head)
        return HTML(explorer_html(page, "Attention", layer=first_layer, head=first_head))
    return AttentionExplorer(runs, first_layer, first_head)


def stack_layers(attention: Sequence[torch.Tensor], n_tokens: int) -> torch.Tensor:
    """Per-layer [1, heads, T, T] tensors as one float32 [layers, heads, T, T] on the CPU.

    ValueError naming the shapes when they are not 4-D, not one sentence, differ between layers,
    or do not match the tokens.
    """
    if isinstance(attention, torch.Tensor) or not len(attention):
        raise ValueError(
            "attention must be a tuple or list with one tensor per layer, each [batch=1, heads, "
            "T, T] (a Hugging Face model's outputs.attentions with output_attentions=True)"
        )
    layers = [torch.as_tensor(layer).detach() for layer in attention]
    shapes = [tuple(layer.shape) for layer in layers]
    if len(set(shapes)) > 1:
        raise ValueError(f"every layer's attention must have one shape; got {_listed(shapes)}")
    shape = shapes[0]
    if len(shape) != 4 or shape[0] != 1 or shape[2] != shape[3]:
        raise ValueError(
            f"each layer's attention must be [batch=1, heads, T, T]; got {shape} "
            "(one sentence at a time, with output_attentions=True)"
        )
    if shape[3] != n_tokens:
        raise ValueError(
            f"attention is {shape} per layer (T={shape[3]}) but there are {n_tokens} tokens: "
            "give one token per position"
        )
    return torch.stack([layer[0] for layer in layers]).to("cpu", torch.float32)


def prettify(token: str) -> str:
    """A word piece as BertViz shows it: byte-level and sentence-piece word starts as spaces.
    (Not encoder.inspect.lesson.word_text, which drops the mark, "##" too, to read a word's text:
    here the mark is shown, as the space it stands for, and "##" stays as BertViz leaves it.)"""
    return str(token).replace("Ġ", " ").replace("▁", " ").replace("</w>", "")


def _kept_layers(include_layers: Sequence[int] | None, num_layers: int) -> list[int]:
    if include_layers is None:
        return list(range(num_layers))
    kept = [int(layer) for layer in include_layers]
    wrong = [layer for layer in kept if not 0 <= layer < num_layers]
    if not kept or wrong:
        raise ValueError(
            f"include_layers={list(include_layers)} must name layers 0..{num_layers - 1}"
        )
    return kept


def _check_layer(layer: int, kept: list[int]) -> int:
    if layer not in kept:
        raise ValueError(f"layer={layer} is not among the layers shown: {kept}")
    return layer


def _check_head(head: int, num_heads: int) -> int:
    if not 0 <= head < num_heads:
        raise ValueError(f"heads=[{head}, ...] must name heads 0..{num_heads - 1}")
    return head


def _listed(shapes: list[tuple[int, ...]]) -> str:
    return ", ".join(f"layer {index}: {shape}" for index, shape in enumerate(shapes))
