"""Every family's masked-LM head against transformers: tiny checkpoints of each family's
*ForMaskedLM (tests/encoder/family_checkpoints.py's tokenizers, configs and randomised norms and
biases), the decoder tied to the word embeddings or not, loaded by us and by transformers (eager
attention, float32) and run on the same padded batch:

    directory = build_checkpoint("bert", tmp_path, model_class=MASKED_LM["bert"],
                                 tie_word_embeddings=False)
    head_differences(head_run(directory, load_checkpoint(directory)))   # {"logits", "lens"}

"logits": the largest difference of the head's logits on the real tokens; "lens": of the lens's
log-probabilities (encoder.inspect.masked.lens_probabilities) at every layer and real token
against an independent computation: transformers' own head on its hidden_states[l + 1] (through
ModernBERT's final_norm; its last hidden state is already after it).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import NamedTuple

import torch

from encoder.inspect.masked import lens_probabilities
from encoder.io.checkpoints import Checkpoint
from encoder.io.tokenize import TokenizedBatch, tokenize
from tests.encoder.family_checkpoints import FAMILIES, HIDDEN, MASKED_LM, SENTENCES

# case -> (family, config overrides): every family tied and untied, and the head's options
HEAD_CASES: dict[str, tuple[str, dict]] = {
    f"{family}-{'tied' if tied else 'untied'}": (family, {"tie_word_embeddings": tied})
    for family in MASKED_LM
    for tied in (True, False)
}
HEAD_CASES |= {
    "electra-unprojected": ("electra", {"embedding_size": HIDDEN}),
    "distilbert-relu": ("distilbert", {"activation": "relu"}),
    "modernbert-biases": (
        "modernbert",
        {"attention_bias": True, "mlp_bias": True, "norm_bias": True, "classifier_bias": True},
    ),
    "modernbert-no-decoder-bias": ("modernbert", {"decoder_bias": False}),
}


def reference_masked_lm(directory: str | Path, family: str) -> torch.nn.Module:
    """transformers' *ForMaskedLM of the checkpoint (eager attention, float32, eval mode)."""
    import transformers

    masked = getattr(transformers, MASKED_LM[family])
    return masked.from_pretrained(
        directory, attn_implementation="eager", dtype=torch.float32
    ).eval()


def their_head(reference: torch.nn.Module, family: str):
    """transformers' head of `reference` as a function: hidden [..., d] -> logits [..., vocab]."""
    if family == "bert":
        return reference.cls
    if family in ("roberta", "xlm-roberta", "camembert"):
        return reference.lm_head
    if family == "albert":
        return reference.predictions
    if family == "distilbert":
        r = reference
        return lambda h: r.vocab_projector(r.vocab_layer_norm(r.activation(r.vocab_transform(h))))
    if family == "electra":
        return lambda h: reference.generator_lm_head(reference.generator_predictions(h))
    return lambda h: reference.decoder(reference.head(h))  # ModernBERT


class HeadRun(NamedTuple):
    batch: TokenizedBatch
    logits: tuple[torch.Tensor, torch.Tensor]  # ours, theirs [B, T, vocab]
    lens: list[tuple[torch.Tensor, torch.Tensor]]  # per sentence: ours, theirs [L, n, vocab]
    # log-probabilities at its n real tokens


@torch.no_grad()
def head_run(directory: Path, checkpoint: Checkpoint, device: str = "cpu") -> HeadRun:
    """Our encoder and head and transformers' *ForMaskedLM on `device`, on the same batch."""
    model_type = json.loads((directory / "config.json").read_text())["model_type"]
    family = next(name for name, spec in FAMILIES.items() if spec[0] == model_type)
    batch = tokenize(SENTENCES, checkpoint.tokenizer, checkpoint.encoder.cfg.max_len)
    ids, mask = batch.input_ids.to(device), batch.attention_mask.to(device)
    model = copy.deepcopy(checkpoint.encoder).to(device)
    head = copy.deepcopy(checkpoint.mlm_head).to(device)
    if head.cfg.tied:  # deepcopy of the encoder alone unties them: tie the copies again
        head.tie(model.embed.token)
    trace = model.trace(ids, mask)
    reference = reference_masked_lm(directory, family).to(device)
    theirs = reference(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    apply = their_head(reference, family)
    final_norm = getattr(getattr(reference, "model", None), "final_norm", None)
    inner = theirs.hidden_states[1:-1]  # after blocks 0 .. L-2, before any final norm
    their_states = [final_norm(h) if final_norm is not None else h for h in inner]
    their_states.append(theirs.hidden_states[-1])  # transformers' last is after the final norm
    lens = []
    for s, length in enumerate(batch.lengths):
        ours = lens_probabilities(model, head, trace, s, list(range(length))).log()
        mine = torch.stack([apply(h[s, :length]) for h in their_states]).log_softmax(-1)
        lens.append((ours.cpu(), mine.cpu()))
    return HeadRun(batch, (head(trace.output).cpu(), theirs.logits.cpu()), lens)


def head_differences(run: HeadRun) -> dict[str, float]:
    """The largest difference of the logits on real tokens, and of the lens's log-probabilities."""
    real = run.batch.attention_mask.bool()
    ours, theirs = run.logits
    return {
        "logits": (ours - theirs).abs()[real].max().item(),
        "lens": max((mine - other).abs().max().item() for mine, other in run.lens),
    }
