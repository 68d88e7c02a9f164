"""Tiny checkpoints of every encoder family the loaders read, built here, offline, the way a
Hugging Face checkpoint on disk looks: `transformers` builds the model from a small random config
(every LayerNorm's gain and bias and every linear bias randomised, so that a norm or bias read
from the wrong place changes the numbers) and `save_pretrained` writes config.json and
model.safetensors (or shards and model.safetensors.index.json); `tokenizers` builds a
tokenizer.json of the family's kind with its special tokens and post-processor:

    family        saved as                 tokenizer  special tokens (pad)
    bert          BertForPreTraining       WordPiece  [CLS] [SEP] ([PAD])
    distilbert    DistilBertForMaskedLM    WordPiece  [CLS] [SEP] ([PAD])
    electra       ElectraForPreTraining    WordPiece  [CLS] [SEP] ([PAD]), embedding_size 16
    roberta       RobertaForMaskedLM       BPE        <s> </s> (<pad>), byte-level
    modernbert    ModernBertForMaskedLM    BPE        [CLS] [SEP] ([PAD]), byte-level
    xlm-roberta   XLMRobertaForMaskedLM    Unigram    <s> </s> (<pad>), metaspace
    camembert     CamembertForMaskedLM     Unigram    <s> </s> (<pad>), metaspace
    albert        AlbertForPreTraining     Unigram    [CLS] [SEP] (<pad>), embedding_size 16

(with head=False the bare encoder class: BertModel, RobertaModel, ...; with
model_class=MASKED_LM[family] the family's *ForMaskedLM). Nothing is downloaded.

    directory = build_checkpoint("roberta", tmp_path)            # config.json, model.safetensors,
                                                                 # tokenizer.json
    reference = reference_model(directory)                       # transformers' encoder, eager
    run = run_both(directory, load_checkpoint(directory))        # ours and theirs, one batch
    largest_differences(run)                                     # {attention, hidden, output}

CASES names each family case the parity tests and `python tests/bench/family_parity.py` run.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import torch
from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

from encoder.core.capture import Trace
from encoder.io.checkpoints import Checkpoint
from encoder.io.tokenize import TokenizedBatch, tokenize

# Text the BPE and Unigram tokenizers are trained on, and the batch the parity tests encode.
CORPUS = [
    "The cat sat on the mat.",
    "Attention lets every token look at every other token in the sentence.",
    "A teacher shows the class how an encoder reads a sentence, one layer at a time.",
    "Students compare BERT with ModernBERT: post-norm and learned positions against pre-norm "
    "and rotary positions.",
    "Les chats dorment sur le tapis, et les élèves lisent.",
    "El gato duerme en la alfombra mientras los estudiantes leen.",
]
WORDS = sorted({word.strip(".,:").lower() for line in CORPUS for word in line.split()})

WORDPIECE_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ROBERTA_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # <mask> comes last, as RoBERTa's
MODERNBERT_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
XLMR_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
ALBERT_SPECIALS = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]

# Small sizes shared by every family: 2 heads of 16, 3 layers (ModernBERT's third is global).
HIDDEN, HEADS, LAYERS, FFN, POSITIONS = 32, 2, 3, 48, 64


def _template(cls: str, sep: str, tokenizer: Tokenizer) -> processors.TemplateProcessing:
    """BERT's post-processor: [CLS] A [SEP] (and [CLS] A [SEP] B [SEP] for pairs)."""
    return processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, tokenizer.token_to_id(cls)), (sep, tokenizer.token_to_id(sep))],
    )


def wordpiece_tokenizer() -> Tokenizer:
    """BERT's kind: lower-cased, split on whitespace and punctuation, ## continuations."""
    pieces = sorted({f"##{c}" for word in WORDS for c in word[1:]} | {c for w in WORDS for c in w})
    vocab = {token: i for i, token in enumerate(WORDPIECE_SPECIALS + WORDS[::2] + pieces)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.add_special_tokens(WORDPIECE_SPECIALS)
    tokenizer.post_processor = _template("[CLS]", "[SEP]", tokenizer)
    return tokenizer


def bpe_tokenizer(specials: list[str], mask: str | None, roberta: bool) -> Tokenizer:
    """RoBERTa's (and ModernBERT's) kind: byte-level BPE trained on CORPUS; `mask` (RoBERTa's
    <mask>) is added after the trained vocabulary."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    if mask is not None:
        tokenizer.add_special_tokens([mask])
    if roberta:
        tokenizer.post_processor = processors.RobertaProcessing(
            ("</s>", tokenizer.token_to_id("</s>")), ("<s>", tokenizer.token_to_id("<s>"))
        )
    else:
        tokenizer.post_processor = _template("[CLS]", "[SEP]", tokenizer)
    return tokenizer


def unigram_tokenizer(specials: list[str], mask: str | None, cls: str, sep: str) -> Tokenizer:
    """XLM-R's, CamemBERT's and ALBERT's kind: a SentencePiece-style Unigram trained on CORPUS;
    `mask` (XLM-R's <mask>) is added after the trained vocabulary."""
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=150, special_tokens=specials, unk_token="<unk>", show_progress=False
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    if mask is not None:
        tokenizer.add_special_tokens([mask])
    tokenizer.post_processor = _template(cls, sep, tokenizer)
    return tokenizer


def _ids(tokenizer: Tokenizer, **tokens: str) -> dict[str, int]:
    """{"pad_token_id": id, ...} for a config, from the tokenizer's special tokens."""
    return {f"{role}_token_id": tokenizer.token_to_id(token) for role, token in tokens.items()}


def _bert_like(tokenizer: Tokenizer) -> dict:
    return {
        "vocab_size": tokenizer.get_vocab_size(),
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": FFN,
        "max_position_embeddings": POSITIONS,
        "initializer_range": 0.1,
    }


def _bert(tokenizer: Tokenizer) -> dict:
    return {**_bert_like(tokenizer), "type_vocab_size": 2, **_ids(tokenizer, pad="[PAD]")}


def _roberta(tokenizer: Tokenizer) -> dict:
    ids = _ids(tokenizer, pad="<pad>", bos="<s>", eos="</s>")
    return {**_bert_like(tokenizer), "type_vocab_size": 1, **ids}


def _distilbert(tokenizer: Tokenizer) -> dict:
    return {
        "vocab_size": tokenizer.get_vocab_size(),
        "dim": HIDDEN,
        "n_heads": HEADS,
        "n_layers": LAYERS,
        "hidden_dim": FFN,
        "max_position_embeddings": POSITIONS,
        "initializer_range": 0.1,
        **_ids(tokenizer, pad="[PAD]"),
    }


def _electra(tokenizer: Tokenizer) -> dict:
    return {**_bert(tokenizer), "embedding_size": 16, "hidden_act": "gelu"}


def _albert(tokenizer: Tokenizer) -> dict:
    return {
        **_bert_like(tokenizer),
        "embedding_size": 16,
        "type_vocab_size": 2,
        "hidden_act": "gelu_new",
        **_ids(tokenizer, pad="<pad>", bos="[CLS]", eos="[SEP]"),
    }


def _modernbert(tokenizer: Tokenizer) -> dict:
    """Pre-norm, RoPE with two bases, GeGLU, no biases (as ModernBERT-base), a window of 4
    (a query sees 2 tokens either side) in layers 1 and 2; layer 0 is global."""
    return {
        "vocab_size": tokenizer.get_vocab_size(),
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "intermediate_size": FFN,
        "max_position_embeddings": POSITIONS,
        "hidden_activation": "gelu",
        "local_attention": 4,
        "global_attn_every_n_layers": 3,
        "global_rope_theta": 160000.0,
        "local_rope_theta": 10000.0,
        "initializer_range": 0.1,
        **_ids(tokenizer, pad="[PAD]", bos="[CLS]", eos="[SEP]", cls="[CLS]", sep="[SEP]"),
    }


# family -> (model_type, tokenizer builder, config builder, pretraining class, encoder class)
FAMILIES: dict[str, tuple[str, Callable[[], Tokenizer], Callable[[Tokenizer], dict], str, str]] = {
    "bert": ("bert", wordpiece_tokenizer, _bert, "BertForPreTraining", "BertModel"),
    "distilbert": (
        "distilbert",
        wordpiece_tokenizer,
        _distilbert,
        "DistilBertForMaskedLM",
        "DistilBertModel",
    ),
    "electra": ("electra", wordpiece_tokenizer, _electra, "ElectraForPreTraining", "ElectraModel"),
    "roberta": (
        "roberta",
        lambda: bpe_tokenizer(ROBERTA_SPECIALS, "<mask>", roberta=True),
        _roberta,
        "RobertaForMaskedLM",
        "RobertaModel",
    ),
    "modernbert": (
        "modernbert",
        lambda: bpe_tokenizer(MODERNBERT_SPECIALS, None, roberta=False),
        _modernbert,
        "ModernBertForMaskedLM",
        "ModernBertModel",
    ),
    "xlm-roberta": (
        "xlm-roberta",
        lambda: unigram_tokenizer(XLMR_SPECIALS, "<mask>", "<s>", "</s>"),
        _roberta,
        "XLMRobertaForMaskedLM",
        "XLMRobertaModel",
    ),
    "camembert": (
        "camembert",
        lambda: unigram_tokenizer(XLMR_SPECIALS, "<mask>", "<s>", "</s>"),
        _roberta,
        "CamembertForMaskedLM",
        "CamembertModel",
    ),
    "albert": (
        "albert",
        lambda: unigram_tokenizer(ALBERT_SPECIALS, None, "[CLS]", "[SEP]"),
        _albert,
        "AlbertForPreTraining",
        "AlbertModel",
    ),
}


# family -> its masked-LM class (ELECTRA's is the generator's)
MASKED_LM = {
    "bert": "BertForMaskedLM",
    "distilbert": "DistilBertForMaskedLM",
    "electra": "ElectraForMaskedLM",
    "roberta": "RobertaForMaskedLM",
    "modernbert": "ModernBertForMaskedLM",
    "xlm-roberta": "XLMRobertaForMaskedLM",
    "camembert": "CamembertForMaskedLM",
    "albert": "AlbertForMaskedLM",
}


def randomise(model: torch.nn.Module, seed: int = 7) -> None:
    """Every LayerNorm a gain around 1 and a bias, every linear layer a bias, every masked-LM
    head's own bias (where they have them): transformers initialises them to 1 and 0, which
    would hide a norm or bias mixed up."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm) and module.weight is not None:
                module.weight.copy_(1 + 0.3 * torch.randn(module.weight.shape, generator=generator))
            if isinstance(getattr(module, "bias", None), torch.nn.Parameter):
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))


def tokenizer_of(family: str) -> Tokenizer:
    """The family's tokenizer, as build_checkpoint writes it."""
    return FAMILIES[family][1]()


def config_of(family: str, **overrides) -> dict:
    """The config.json keys build_checkpoint gives `family` (before transformers adds its own)."""
    _, make_tokenizer, make_config, _, _ = FAMILIES[family]
    return {**make_config(make_tokenizer()), **overrides}


def build_checkpoint(
    family: str,
    directory: str | Path,
    *,
    head: bool = True,
    model_class: str | None = None,
    max_shard_size: str | None = None,
    seed: int = 0,
    **overrides,
) -> Path:
    """A tiny random checkpoint of `family` (a key of FAMILIES) in `directory`: config.json,
    model.safetensors (or shards with model.safetensors.index.json when max_shard_size is given,
    e.g. "40KB") and tokenizer.json. head: save the pretraining class (its heads' tensors and
    the base-model prefix, as most checkpoints on the Hub), else the bare encoder; model_class:
    another of transformers' classes of the family (e.g. MASKED_LM[family]). overrides:
    config keys (e.g. num_hidden_groups=2)."""
    import transformers

    transformers.utils.logging.disable_progress_bar()
    model_type, make_tokenizer, make_config, pretraining, bare = FAMILIES[family]
    tokenizer = make_tokenizer()
    config = transformers.AutoConfig.for_model(
        model_type, **{**make_config(tokenizer), **overrides}
    )
    torch.manual_seed(seed)
    name = model_class or (pretraining if head else bare)
    model = getattr(transformers, name)(config).eval()
    randomise(model, seed)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    shards = {"max_shard_size": max_shard_size} if max_shard_size else {}
    model.save_pretrained(directory, **shards)
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


def reference_model(directory: str | Path) -> torch.nn.Module:
    """transformers' bare encoder of the checkpoint in `directory` (eager attention, float32,
    eval mode), read from its files as a user's would be."""
    import transformers

    model_type = json.loads((Path(directory) / "config.json").read_text())["model_type"]
    family = next(name for name, spec in FAMILIES.items() if spec[0] == model_type)
    bare = getattr(transformers, FAMILIES[family][4])
    return bare.from_pretrained(directory, attn_implementation="eager", dtype=torch.float32).eval()


SENTENCES = CORPUS[:3]  # three lengths: a padded batch

# case -> (family builder, config overrides, the family's name as Checkpoint.family says it)
CASES = {
    "bert": ("bert", {}, "BERT"),
    "distilbert": ("distilbert", {}, "DistilBERT"),
    "electra": ("electra", {}, "ELECTRA"),
    "electra-unprojected": ("electra", {"embedding_size": HIDDEN}, "ELECTRA"),
    "roberta": ("roberta", {}, "RoBERTa"),
    "xlm-roberta": ("xlm-roberta", {}, "XLM-R"),
    "camembert": ("camembert", {}, "CamemBERT"),
    "albert": ("albert", {}, "ALBERT"),
    "modernbert": ("modernbert", {}, "ModernBERT"),
    "modernbert-biases": (
        "modernbert",
        {"attention_bias": True, "mlp_bias": True, "norm_bias": True},
        "ModernBERT",
    ),
}


class Run(NamedTuple):
    """One family's checkpoint, loaded by us and run by both on the same padded batch."""

    directory: Path
    checkpoint: Checkpoint
    batch: TokenizedBatch
    ours: Trace
    theirs: object  # transformers' BaseModelOutput, with attentions and hidden_states


def run_both(directory: Path, checkpoint: Checkpoint, device: str = "cpu") -> Run:
    """Our encoder and transformers' on `device`, on the same padded batch; results on the CPU."""
    batch = tokenize(SENTENCES, checkpoint.tokenizer, checkpoint.encoder.cfg.max_len)
    ids, mask = batch.input_ids.to(device), batch.attention_mask.to(device)
    ours = copy.deepcopy(checkpoint.encoder).to(device).trace(ids, mask).to("cpu")
    with torch.no_grad():
        theirs = reference_model(directory).to(device)(
            input_ids=ids, attention_mask=mask, output_attentions=True, output_hidden_states=True
        )
    theirs.attentions = tuple(attention.cpu() for attention in theirs.attentions)
    theirs.hidden_states = tuple(hidden.cpu() for hidden in theirs.hidden_states)
    theirs.last_hidden_state = theirs.last_hidden_state.cpu()
    return Run(directory, checkpoint, batch, ours, theirs)


def largest_differences(run: Run) -> dict[str, float]:
    """The largest difference on real tokens: of the attention (every layer), of the hidden
    states before the last (transformers' last one is its output) and of the output."""
    real = run.batch.attention_mask.bool()  # [B, T]
    pairs = real[:, None, :, None] & real[:, None, None, :]  # [B, 1, query, key]
    attention = torch.stack(run.theirs.attentions)  # [L, B, H, T, T]
    hidden = zip(run.ours.hidden_states[:-1], run.theirs.hidden_states[:-1], strict=True)
    return {
        "attention": (run.ours.attention - attention).abs().masked_select(pairs).max().item(),
        "hidden": max((mine - theirs).abs()[real].max().item() for mine, theirs in hidden),
        "output": (run.ours.output - run.theirs.last_hidden_state).abs()[real].max().item(),
    }
