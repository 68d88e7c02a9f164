"""Activation patching (encoder.inspect.patching) against an independent patch made here with
forward hooks on transformers' models: MiniLM (BertModel, the cosine metric) and each masked-LM
family on tiny random weights (the mask metric, their own *ForMaskedLM logits)."""

from __future__ import annotations

import json
import math
from contextlib import contextmanager

import numpy as np
import pytest
import torch

from encoder import load_pretrained
from encoder.cli import USAGE_ERROR, main
from encoder.core import hooks
from encoder.core.capture import replacing
from encoder.core.said import Said
from encoder.inspect import patching
from encoder.inspect.similarity import pooling_of
from encoder.io.checkpoints import load_checkpoint
from encoder.io.tokenize import bundled_model_dir
from tests.encoder.family_checkpoints import MASKED_LM, build_checkpoint
from tests.encoder.head_checkpoints import reference_masked_lm

CLEAN = "The animal didn't cross the street because it was too tired."
CORRUPTED = "The animal didn't cross the street because it was too wide."
TOLERANCE = 1e-5


@pytest.fixture(scope="module", autouse=True)
def offline():
    from transformers.utils import logging

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        verbosity = logging.get_verbosity()
        logging.set_verbosity_error()
        yield
        logging.set_verbosity(verbosity)


def _first(output):
    return output[0] if isinstance(output, tuple) else output


@contextmanager
def hooked(module: torch.nn.Module, change, *, pre: bool = False, call: int | None = None):
    """While inside, `module`'s output (pre: its first input) becomes change(x), on its call-th
    call only when `call` is given (ALBERT runs one shared layer at every depth)."""
    seen = [0]

    def apply(x):
        seen[0] += 1
        return x if call is not None and seen[0] - 1 != call else change(x)

    if pre:
        handle = module.register_forward_pre_hook(lambda _, args: (apply(args[0]), *args[1:]))
    else:

        def hook(_, args, output):
            if isinstance(output, tuple):
                return (apply(output[0]), *output[1:])
            return apply(output)

        handle = module.register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def recorded(run, module, *, pre: bool = False, call: int | None = None) -> torch.Tensor:
    """The tensor `module` gives (pre: takes) in run()."""
    kept = []

    def keep(x):
        kept.append(x.clone())
        return x

    with hooked(module, keep, pre=pre, call=call):
        run()
    return kept[0]


def at(index, value):
    """change(x): x with x[:, index] = value."""

    def change(x):
        x = x.clone()
        x[(slice(None), *index)] = value
        return x

    return change


class Reference:
    """transformers' model with the module that holds each patched tensor, found by layer."""

    def __init__(self, model, metric, clean_ids, corrupted_ids, family="bert"):
        self.model, self.metric, self.family = model, metric, family
        self.ids = {"clean": clean_ids, "corrupted": corrupted_ids}
        base = model.base_model
        shared = None
        if family == "albert":
            shared = base.encoder.albert_layer_groups[0].albert_layers[0]
            self.entry = base.encoder.embedding_hidden_mapping_in
        else:
            self.entry = getattr(base, "embeddings_project", None) or base.embeddings
        layers = {"distilbert": "transformer.layer", "modernbert": "layers"}.get(
            family, "encoder.layer"
        )
        self.layers = [shared] * 99 if shared else base.get_submodule(layers)
        self.parts = {
            "bert": ("attention.output.dense", "output.dense"),
            "distilbert": ("attention.out_lin", "ffn.lin2"),
            "modernbert": ("attn.Wo", "mlp.Wo"),
            "albert": ("attention.dense", "ffn_output"),
        }.get(family, ("attention.output.dense", "output.dense"))
        self.shared = shared is not None
        self.ends = [self.score(self.ids[name]) for name in ("clean", "corrupted")]

    @torch.no_grad()
    def score(self, ids) -> float:
        return float(self.metric(self.model(input_ids=ids)))

    def cell(self, grid: str, layer: int):
        """(module, pre, call) holding the grid's tensor at `layer`."""
        call = layer if self.shared else None
        if grid == "residual":
            if layer == 0:
                return self.entry, False, None
            call = layer - 1 if self.shared else None
            return self.layers[layer - 1], False, call
        block = self.layers[layer]
        attention, mlp = (block.get_submodule(p) for p in self.parts)
        return {"heads": (attention, True), "attention": (attention, False), "mlp": (mlp, False)}[
            grid
        ] + (call,)

    @torch.no_grad()
    def effect(self, grid: str, layer: int, index: tuple) -> float:
        """Patch the clean run's tensor at `index` (after the batch axis) into the corrupted run."""
        module, pre, call = self.cell(grid, layer)
        clean = recorded(
            lambda: self.model(input_ids=self.ids["clean"]), module, pre=pre, call=call
        )
        with hooked(module, at(index, clean[(0, *index)]), pre=pre, call=call):
            patched = self.score(self.ids["corrupted"])
        return (patched - self.ends[1]) / (self.ends[0] - self.ends[1])


def compare(result: patching.Patching, reference: Reference, heads: int, cells) -> float:
    """The largest difference between our grids and the reference over `cells`."""
    worst = 0.0
    for grid, layer, column in cells:
        if grid == "heads":
            width = reference_width(reference) // heads
            index = (slice(None), slice(column * width, (column + 1) * width))
        else:
            index = (column,)
        theirs = reference.effect(grid, layer, index)
        worst = max(worst, abs(getattr(result, grid)[layer, column] - theirs))
    return worst


def reference_width(reference: Reference) -> int:
    """d_model of the reference (transformers' config names it hidden_size, DistilBERT's dim)."""
    config = getattr(reference.model, "config", None)
    if config is None:  # ours
        return reference.model.encoder.cfg.d_model
    return getattr(config, "hidden_size", None) or config.dim


@pytest.fixture(scope="module")
def minilm():
    model, tokenizer = load_pretrained()
    clean, corrupted = (tokenizer.encode(text) for text in (CLEAN, CORRUPTED))
    metric = patching.metric_named("cosine", pooling=pooling_of(bundled_model_dir()))
    result = patching.patch(model, clean.ids, corrupted.ids, metric, clean.tokens)
    return model, tokenizer, clean, corrupted, result


def test_minilm_grids_equal_a_hook_patch_on_transformers_bert(minilm):
    import transformers

    model, _, clean, corrupted, result = minilm
    bert = transformers.BertModel.from_pretrained(
        bundled_model_dir(), attn_implementation="eager", dtype=torch.float32
    ).eval()
    clean_ids, corrupted_ids = torch.tensor([clean.ids]), torch.tensor([corrupted.ids])
    with torch.no_grad():
        target = bert(input_ids=clean_ids).last_hidden_state.mean(1)

    def cosine(output):
        return torch.cosine_similarity(output.last_hidden_state.mean(1), target).double()

    reference = Reference(bert, cosine, clean_ids, corrupted_ids)
    assert result.clean == pytest.approx(reference.ends[0], abs=1e-6)
    assert result.corrupted == pytest.approx(reference.ends[1], abs=1e-6)
    L, T, H = model.cfg.num_layers, len(clean.ids), model.cfg.num_heads
    changed = next(t for t in range(T) if clean.ids[t] != corrupted.ids[t])
    cells = [("residual", layer, t) for layer in range(L + 1) for t in (0, changed, T - 1)]
    cells += [("heads", layer, head) for layer in (0, L - 1) for head in (0, H - 1)]
    cells += [(grid, layer, t) for grid in ("attention", "mlp") for layer in range(L)
              for t in (changed, T - 1)]  # fmt: skip
    assert compare(result, reference, H, cells) < TOLERANCE
    shapes = [getattr(result, g).shape for g in patching.GRIDS]
    assert shapes == [(L + 1, T), (L, H), (L, T), (L, T)]


def test_the_clean_state_restores_1_and_the_corrupted_state_0(minilm):
    model, _, clean, corrupted, result = minilm
    metric = patching.cosine_metric(pooling_of(bundled_model_dir()))
    traces = [
        model.trace(torch.tensor([s.ids]), names=patching.grid_names(model))
        for s in (clean, corrupted)
    ]
    score = metric.scorer(traces[0].output, traces[1].output)
    for grid in patching.GRIDS:
        to_clean = patching.raw_grid(model, grid, traces[0], traces[0], score)
        to_corrupted = patching.raw_grid(model, grid, traces[1], traces[1], score)
        ones = patching.normalised(to_clean, result.clean, result.corrupted)
        zeros = patching.normalised(to_corrupted, result.clean, result.corrupted)
        assert np.abs(ones - 1).max() < TOLERANCE, grid
        assert np.abs(zeros).max() < TOLERANCE, grid
    # row 0 of the residual: only the changed token differs, and restoring it is the clean run
    changed = [t for t in range(len(clean.ids)) if clean.ids[t] != corrupted.ids[t]]
    assert result.residual[0, changed[0]] == pytest.approx(1, abs=TOLERANCE)
    assert np.abs(np.delete(result.residual[0], changed)).max() < TOLERANCE


def test_every_grid_has_a_sentence_true_of_its_numbers(minilm):
    *_, clean, _, result = minilm
    best = result.residual.argmax(axis=1)
    said = result.said["residual"]
    assert isinstance(said, Said) and f"“{clean.tokens[best[0]]}”" in said
    lead = int(np.argmax(best != best[0])) - 1 if (best != best[0]).any() else len(best) - 1
    least = result.residual[np.arange(lead + 1), best[: lead + 1]].min()
    assert f"at least {least:.2f}" in said
    layer, head = np.unravel_index(result.heads.argmax(), result.heads.shape)
    assert f"head {layer}.{head}" in result.said["heads"]
    assert f"{int((result.heads > 0.1).sum())} head" in result.said["heads"]


def test_the_grid_sentences_follow_their_rule_on_any_numbers():
    tokens = ["[CLS]", "it", "tired", "[SEP]"]
    grid = np.array([[0, 0, 1, 0], [0, 0.2, 0.9, 0], [0.3, 0.1, 0.2, 0], [0.1, 0.2, 0, 0.5]])
    assert patching.grid_said("residual", grid, tokens) == (
        "restoring the stream of “tired” brings back the most at layers 0-1 (at least 0.90 of the "
        "clean output); after layer 1, the most comes back from “[CLS]”, “[SEP]”"
    )
    assert patching.grid_said("mlp", grid[:2], tokens) == (
        "restoring the feed-forward output of “tired” brings back the most at layers 0-1: at "
        "least 0.90 of the clean output"
    )
    assert patching.grid_said("attention", grid / 20, tokens) == (
        "no single patch of the attention output brings back more than 0.05 of the clean output"
    )
    assert patching.grid_said("heads", grid, tokens) == (
        "restoring head 0.2 brings back the most, 1.00 of the clean output; 7 heads of 16 bring "
        "back more than 0.1"
    )


@pytest.mark.parametrize("family", list(MASKED_LM))
def test_the_mask_metric_grids_equal_a_hook_patch_on_each_family(tmp_path, family):
    # weights drawn wide (initializer_range): at 0.02 the word biases decide every prediction;
    # both sides in float64, so that float32's rounding (about 1e-5 of the metric's range at this
    # width) does not hide a wrong cell
    directory = build_checkpoint(
        family, tmp_path, model_class=MASKED_LM[family], initializer_range=0.5
    )
    checkpoint = load_checkpoint(directory)
    tokenizer = checkpoint.tokenizer
    mask = "[MASK]" if tokenizer.token_to_id("[MASK]") is not None else "<mask>"
    clean = tokenizer.encode(f"The cat sat on the {mask} in the sentence.")
    position = clean.tokens.index(mask)
    reference_model = reference_masked_lm(directory, family).double()

    @torch.no_grad()
    def top(ids):
        return int(reference_model(input_ids=torch.tensor([ids])).logits[0, position].argmax())

    # corrupt one token with the first word that changes transformers' prediction at the mask
    changed, corrupted_ids = next(
        (t, ids)
        for t in (2, position - 1, position + 1, *range(1, position - 1))
        for word in range(5, tokenizer.get_vocab_size())
        if top(ids := [*clean.ids[:t], word, *clean.ids[t + 1 :]]) != top(clean.ids)
    )
    model, head = checkpoint.encoder.double(), checkpoint.mlm_head.double()
    metric = patching.metric_named("mask", lm_head=head, tokens=clean.tokens, mask_token=mask)
    result = patching.patch(model, clean.ids, corrupted_ids, metric, clean.tokens)
    ids = torch.tensor([clean.ids]), torch.tensor([corrupted_ids])
    words = [top(clean.ids), top(corrupted_ids)]

    def difference(output):
        return (
            output.logits[0, position, words[0]] - output.logits[0, position, words[1]]
        ).double()

    reference = Reference(reference_model, difference, *ids, family=family)
    assert result.clean == pytest.approx(reference.ends[0], abs=1e-4)
    assert result.corrupted == pytest.approx(reference.ends[1], abs=1e-4)
    L, H = model.cfg.num_layers, model.cfg.num_heads
    cells = [("residual", layer, t) for layer in range(L + 1) for t in (changed, position)]
    cells += [("heads", layer, h) for layer in range(L) for h in range(H)]
    cells += [
        (g, layer, t)
        for g in ("attention", "mlp")
        for layer in range(L)
        for t in (changed, position)
    ]
    assert compare(result, reference, H, cells) < TOLERANCE


def test_bad_pairs_are_said(minilm):
    model, tokenizer, clean, corrupted, _ = minilm
    metric = patching.cosine_metric()
    shorter = tokenizer.encode("The animal was tired.")
    with pytest.raises(
        ValueError, match=f"{len(clean.ids)} tokens and the corrupted one {len(shorter.ids)}"
    ) as error:
        patching.patch(model, clean.ids, shorter.ids, metric, clean.tokens)
    assert isinstance(error.value.args[0], Said)
    with pytest.raises(ValueError, match="nothing to restore"):
        patching.patch(model, clean.ids, clean.ids, metric, clean.tokens)
    with pytest.raises(ValueError, match="no masked-LM head"):
        patching.metric_named("mask", tokens=clean.tokens)


def test_the_mask_metric_needs_a_mask(tmp_path):
    directory = build_checkpoint("bert", tmp_path, model_class=MASKED_LM["bert"])
    checkpoint = load_checkpoint(directory)
    tokens = checkpoint.tokenizer.encode("The cat sat on the mat.").tokens
    with pytest.raises(ValueError, match=r"no “\[MASK\]” in the sentence") as error:
        patching.metric_named(
            "mask", lm_head=checkpoint.mlm_head, tokens=tokens, mask_token="[MASK]"
        )
    assert isinstance(error.value.args[0], Said)


def test_causal_attention_is_a_manual_causal_softmax(minilm):
    model, tokenizer, clean, *_ = minilm
    shorter = tokenizer.encode("The animal was tired.")
    ids = torch.zeros(2, len(clean.ids), dtype=torch.long)  # right-padded with [PAD] (id 0)
    mask = torch.zeros_like(ids)
    for row, sentence in enumerate((clean, shorter)):
        ids[row, : len(sentence.ids)], mask[row, : len(sentence.ids)] = (
            torch.tensor(sentence.ids),
            1,
        )
    trace = model.trace(ids, mask, causal=True)
    T, dk = ids.shape[1], model.cfg.head_dim
    later = torch.ones(T, T, dtype=torch.bool).triu(1)
    hidden = later | (mask == 0)[:, None, None, :]  # [B, 1, query, key]
    real = mask.bool()[:, None, :, None].expand(-1, model.cfg.num_heads, -1, T)  # real queries
    for layer in range(model.cfg.num_layers):
        names = hooks.block(layer).attn
        scores = trace[names.q] @ trace[names.k].transpose(-1, -2) / math.sqrt(dk)
        manual = scores.masked_fill(hidden, float("-inf")).softmax(-1)
        assert (trace.attention[layer] - manual).abs()[real].max() < 1e-6
        assert (trace.attention[layer].masked_fill(~real, 0)[..., later] == 0).all()
    # a decoder's token never reads what comes after it: a prefix run alone gives the same states
    prefix = model.trace(ids[:1, :6], causal=True)
    for mine, alone in zip(trace.hidden_states, prefix.hidden_states, strict=True):
        assert (mine[0, :6] - alone[0]).abs().max() < 1e-5


def test_the_cone_reaches_every_token_one_layer_later_and_only_later_ones_when_causal(minilm):
    model, _, clean, corrupted, _ = minilm
    T, L = len(clean.ids), model.cfg.num_layers
    changed = next(t for t in range(T) if clean.ids[t] != corrupted.ids[t])
    for layer in (0, 2):
        cone = patching.cone(model, clean.ids, corrupted.ids, layer, changed, clean.tokens)
        for norms in (cone.encoder, cone.causal):
            assert norms.shape == (L + 1, T)
            assert (norms[:layer] == 0).all()
            assert (np.flatnonzero(norms[layer]) == [changed]).all()
        assert (cone.encoder[layer + 1] > 0).all()
        assert (cone.causal[layer + 1 :, :changed] == 0).all()
        assert (cone.causal[layer + 1, changed:] > 0).all()
        assert f"reached {T} of {T} tokens in the encoder" in cone.said
        assert f"and {T - changed} under a decoder's causal mask: only" in cone.said
    before = patching.cone(model, clean.ids, corrupted.ids, 2, changed - 1, clean.tokens)
    assert (before.causal == 0).all() and (before.encoder[3] > 0).all()
    assert "causal mask the two runs' streams at “too” are the same" in before.said


def test_the_task_metric_grids_equal_a_hook_patch_on_our_own_modules():
    from encoder.train.config import TrainConfig
    from encoder.train.trainer import train

    config = TrainConfig(task="reverse", steps=3, batch_size=8, held_out_examples=10)
    task_model = train(
        config.with_model(num_layers=2, d_model=32, num_heads=2, d_ff=64)
    ).task_model()
    classifier = task_model.classifier.eval()
    L, H, n = (
        classifier.encoder.cfg.num_layers,
        classifier.encoder.cfg.num_heads,
        task_model.seq_len,
    )
    clean = [1 + i % (task_model.vocab - 1) for i in range(n)]
    corrupted = [clean[0], clean[2], *clean[2:]]
    metric = patching.metric_named("task", classifier=classifier.head)
    result = patching.patch(classifier.encoder, clean, corrupted, metric, [str(i) for i in clean])
    ids = torch.tensor([clean]), torch.tensor([corrupted])
    with torch.no_grad():
        target = classifier(ids[0])[0].argmax(-1)

    def correct(logits):  # the clean run's classes, their logits averaged over the tokens
        return logits[0].gather(-1, target[:, None]).mean().double()

    class Ours(Reference):  # the same patches through torch hooks on our blocks' own modules
        def __init__(self):
            self.model, self.metric, self.shared = classifier, correct, False
            self.ids = {"clean": ids[0], "corrupted": ids[1]}
            self.entry, self.layers = classifier.encoder.embed, classifier.encoder.layers
            self.parts = ("self_attn.out_proj", "linear2")
            self.ends = [self.score(i) for i in ids]

    cells = [("residual", layer, t) for layer in range(L + 1) for t in (1, n - 1)]
    cells += [("heads", layer, h) for layer in range(L) for h in range(H)]
    cells += [(g, layer, t) for g in ("attention", "mlp") for layer in range(L) for t in (1, n - 1)]
    assert compare(result, Ours(), H, cells) < TOLERANCE


def patched_json(capsys, *args: str) -> dict:
    assert main(["patch", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_patch_command_prints_the_library_s_grids(capsys, minilm):
    *_, result = minilm
    found = patched_json(capsys, "--clean", CLEAN, "--corrupted", CORRUPTED, "--pretrained")
    keys = ["tokens", "metric", "clean", "corrupted", "residual", "heads", "attention", "mlp"]
    assert list(found) == keys
    assert (found["tokens"], found["metric"]) == (result.tokens, "cosine")
    for grid in patching.GRIDS:
        np.testing.assert_allclose(found[grid], getattr(result, grid), atol=1e-6)


def test_the_patch_command_s_mask_metric_on_a_checkpoint_with_a_head(capsys, tmp_path):
    directory = build_checkpoint(
        "bert", tmp_path, model_class=MASKED_LM["bert"], initializer_range=0.5
    )
    checkpoint = load_checkpoint(directory)
    clean = "The cat sat on the [MASK] in the sentence."
    tokens = checkpoint.tokenizer.encode(clean).tokens
    args = ("--clean", clean, "--checkpoint", str(directory), "--metric", "mask")
    found = patched_json(
        capsys, *args, "--corrupted", "The class sat on the [MASK] in the sentence."
    )
    metric = patching.metric_named(
        "mask", lm_head=checkpoint.mlm_head, tokens=tokens, mask_token="[MASK]"
    )
    ids = [checkpoint.tokenizer.encode(t).ids for t in (clean, clean.replace("cat", "class"))]
    result = patching.patch(checkpoint.encoder, *ids, metric, tokens)
    np.testing.assert_allclose(found["residual"], result.residual, atol=1e-6)
    assert found["metric"] == "mask"


@pytest.mark.parametrize(
    "args, said",
    [
        (("--corrupted", "The animal was tired."), "has 16 tokens and the corrupted one 7"),
        (("--corrupted", CLEAN), "nothing to restore"),
        (("--corrupted", CORRUPTED, "--metric", "mask"), "has no masked-LM head"),
        (("--corrupted", " "), "the corrupted sentence is empty"),
    ],
)
def test_the_patch_command_exits_2_with_a_sentence(capsys, args, said):
    assert main(["patch", "--clean", CLEAN, "--pretrained", *args, "--json"]) == USAGE_ERROR
    captured = capsys.readouterr()
    assert captured.out == "" and said in captured.err and captured.err.count("\n") == 1


def test_a_patch_changes_only_its_own_context_s_forward(minilm):
    """Sessions share one model: a patch in one thread leaves another thread's run alone."""
    import threading

    model, _, clean, *_ = minilm
    ids = torch.tensor([clean.ids])
    plain, seen = model(ids), {}
    with replacing({hooks.stream(2): torch.zeros_like}):
        other = threading.Thread(target=lambda: seen.setdefault("output", model(ids)))
        other.start()
        other.join()
        patched = model(ids)
    assert torch.equal(seen["output"], plain) and not torch.allclose(patched, plain)
    assert torch.equal(model(ids), plain)
