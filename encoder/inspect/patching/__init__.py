"""Activation patching: copy one piece of a clean run's state into a corrupted run (two sentences
of the same token count) and measure how much of the clean output comes back (causal tracing,
Meng et al. 2022), and the cone: where one patch spreads, with the encoder's attention and with
a decoder's causal mask.

    metric = metric_named("cosine", pooling=pooling_of(directory))  # or "mask", "task"
    result = patch(model, clean_ids, corrupted_ids, metric, tokens)  # ids [T] or [1, T]
    result.residual[l, t]   # restoring the stream entering block l at token t
    result.said["residual"] # a sentence a teacher can say about that grid
    seen = cone(model, clean_ids, corrupted_ids, layer=2, position=5, tokens=tokens)

Each grid holds the normalised effect (metric(patched) - metric(corrupted)) / (metric(clean) -
metric(corrupted)): 0 is the corrupted run, 1 the clean one. The grids (ROME's three, plus heads):

    residual  [L+1, T]  the stream entering block l at token t (row 0: the embeddings' output;
                        row L: the last block's output, trace.hidden_states[L]). A pre-norm
                        model's final norm comes after the patch (the metric reads the model's
                        output); it acts on each token alone, so row L equals patching the
                        output itself at that token.
    heads     [L, H]    one head's output before the output projection (attn.hook_z), every token
    attention [L, T]    block l's attention output (attn.hook_out, after W_O) at token t
    mlp       [L, T]    block l's feed-forward output (mlp.hook_out) at token t

Every grid runs batched, one partial forward per layer: the corrupted stream entering block l,
repeated once per token (or head) of the grid's row, runs blocks l.. (model.blocks_from), each
batch row patched at its own cell by encoder.core.capture.replacing (the HookPoint the hook
names name passes on the patched tensor, in this thread's context only: a torch hook on a model
the page shares would patch every session's forward); the blocks before l are the same for
every row and are not run again.

Metrics (`Metric`: a name and, from the clean and corrupted outputs, a scorer of a batch of
outputs [B, T, d] -> [B]):
    cosine  the cosine of the sentence embedding (the model's Pooling) with the clean one
    mask    at the first mask of the clean sentence, the masked-LM head's logit of the clean
            run's top word minus the corrupted run's top word's
    task    a task model's classifier: the logit of the class the clean run predicts at each
            token, averaged over the tokens
metric_named(name, pooling=, lm_head=, classifier=, tokens=, mask_token=) picks one by name and
says (ValueError(Said)) what a model lacks for it: no head, no mask in the clean sentence.

What a page reads (`Patching`, numpy arrays): tokens (the clean sentence's), metric, clean and
corrupted (the metric's two ends), residual, heads, attention, mlp, and said = {grid: Said}. The
sentence per grid follows one rule, true of any model's numbers: at each layer the token whose
patch restores the most; the first run of layers one token leads, the least it restores there,
and the tokens that lead after (MiniLM, "...too tired." against "...too wide.": "restoring the
stream of “tired” brings back the most at layers 0-6: at least 0.47 of the clean output"); for
heads, the head that restores the most and how many restore over 0.1. to_json() is the command
line's JSON. `patch` refuses (ValueError(Said)) two token counts, the same sentence twice, a
metric equal on both runs: nothing to restore.

The cone (`Cone`: layer, position, encoder and causal [L+1, T], said): after copying the clean
stream entering block `layer` at `position` into the corrupted run, the norm of (patched -
corrupted) stream at every depth (trace.hidden_states, before any final norm) and token, with
the model's attention and with a decoder's causal mask (model.trace(..., causal=True): each
query sees the keys at or before it); rows before `layer` are 0. Its sentence says how many
tokens each reaches one layer later (the encoder: all; the causal mask: the patched token and
those after it, or none where the two runs' streams there are equal).

The pair a page patches by default (one_word_changed: the clean sentence with one word changed,
said) and the lesson's question (deciding_token: which token's stream matters most at the middle
layer, a Prediction): question.py.

Lower level, for a test or a notebook: raw_grid(model, grid, into, source, score) patches any
run with any other's states (traces keeping grid_names(model)); cone_norms one cone.
"""

from encoder.inspect.patching.cone import Cone, cone, cone_norms, cone_said, reached
from encoder.inspect.patching.grids import (
    GRIDS,
    Patching,
    as_batch,
    check_pair,
    grid_cells,
    grid_names,
    grid_said,
    normalised,
    patch,
    raw_grid,
)
from encoder.inspect.patching.metrics import (
    METRICS,
    Metric,
    Scorer,
    cosine_metric,
    mask_metric,
    metric_named,
    task_metric,
)
from encoder.inspect.patching.question import deciding_token, one_word_changed

__all__ = [
    "GRIDS", "METRICS", "Cone", "Metric", "Patching", "Scorer", "as_batch", "check_pair", "cone",
    "cone_norms", "cone_said", "cosine_metric", "deciding_token", "grid_cells", "grid_names",
    "grid_said", "mask_metric", "metric_named", "normalised", "one_word_changed", "patch",
    "raw_grid", "reached", "task_metric",
]  # fmt: skip
