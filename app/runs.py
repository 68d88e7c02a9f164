"""The runs the views draw: one batch through one model (`Run`), and setup A's and B's (`Runs`).

A run's model source arrives resolved (app.sources.ModelSource: its id, its tokenizer, a session
model's own encoder), so nothing here reads a browser session; runs are built and cached by
app.run_cache, their models by app.models.

A `Run` is what the views draw: the batch, the Trace and the model's weights (its state_dict), with
the tables of encoder.inspect computed from them on first use; it never calls the model again. So a
stand-in built from other arrays (tests/bench/floor_page.py) draws the same views. Runs live in a
cache shared by every browser session of the server, so they are read-only: runs hold arrays and
tables that nobody mutates (a run only fills in its lazily computed tables, the same for every
session). Setup B's run in compare mode is one more run of the same cache; the comparison of A and
B and the effect of switching heads off are cached beside them with their real bytes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import torch

from app.i18n import _, told
from app.jobs import CostJob
from app.memory import CACHE
from app.models import model_for
from app.sources import BUILT_IN, NO_HEAD_RANDOM, ModelSource
from encoder import EncoderConfig, Trace, TransformerEncoder
from encoder.core import block
from encoder.core.lm_head import MaskedLMHead
from encoder.inspect import ablation, activations, heads, ledger, norms
from encoder.inspect.attention_steps import AttentionSteps, attention_steps
from encoder.inspect.compare import TraceComparison, compare_traces, same_input
from encoder.inspect.limits import RunTooLarge
from encoder.inspect.similarity import (
    AlikePair,
    Pooling,
    alike_depths,
    cosine_matrix,
    embeddings_by_depth,
    pooling_of,
)
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import Truncation
from encoder.tasks.tasks import get_task

RUN_OVERHEAD_BYTES = 1_000_000  # tokens, tables and Python objects beside a run's arrays


@dataclass(frozen=True)
class RunKey:
    """What identifies a run: the model, the sentences, what is kept, which heads are off."""

    cfg: EncoderConfig
    source: str  # the source's id
    device: str
    sentences: tuple[str, ...]
    names: tuple[str, ...]  # hooks kept for the view, sorted
    ablate: tuple[tuple[int, int], ...] = ()


@dataclass
class Run:
    """What the views draw: one batch through one model, computed once per RunKey.

    Tables are computed from the trace, the config and the weights on first use, so a view pays
    only for what it shows; `heads_off` runs the same batch again with heads switched off.
    """

    key: RunKey
    cfg: EncoderConfig
    tokens: list[list[str]]  # each sentence's real tokens
    padded_tokens: list[list[str]]  # each sentence's tokens padded with [PAD] to T
    input_ids: np.ndarray  # [B, T]
    attention_mask: np.ndarray  # [B, T]
    attention: np.ndarray  # [L, B, H, T, T] float32 (shares memory with trace.attention)
    trace: Trace  # on the CPU, only the kept hooks
    # the model's state_dict, fetched when a table needs it (a run holds no reference to the
    # model, which the cache may evict and rebuild)
    load_weights: Callable[[], Mapping[str, torch.Tensor]]
    truncations: list[Truncation]
    forward_ms: float
    heads_off: Callable[[tuple[tuple[int, int], ...]], Run]  # this run with those heads off
    # this run's weights and batch with another activation or norm placement (config fields)
    variant: Callable[..., Run] | None = None
    task_model: TaskModel | None = None  # the source's, when it was trained on a toy task
    # what the model costs, measured in the background within a time budget (None: no model to
    # measure, e.g. a stand-in); budget_s -> its CostJob (app.jobs.cost_job)
    measure_cost: Callable[[float], CostJob] | None = None
    source: ModelSource | None = None  # where the weights came from and what read the text
    # the same model and device reading other sentences (a cached run keeping no hook)
    reading: Callable[[list[str]], Run] | None = None

    def model(self) -> TransformerEncoder:
        """The run's model, from the shared cache (for readings that need its weights whole)."""
        if self.source is None:
            raise ValueError("This run has no model source (a stand-in): nothing to read.")
        return model_for(self.cfg, self.source, self.device)

    @property
    def device(self) -> str:
        return self.key.device

    @property
    def sentences(self) -> list[str]:
        return list(self.key.sentences)

    @property
    def lengths(self) -> list[int]:
        """Each sentence's real tokens."""
        return [len(tokens) for tokens in self.tokens]

    @property
    def parameters(self) -> int:
        return block.parameters(self.cfg)

    @property
    def weights(self) -> Mapping[str, torch.Tensor]:
        return self.load_weights()

    @property
    def tokenizer_name(self) -> str:
        """What split the text: its tokenizer's model and vocabulary, "WordPiece, a vocabulary of
        30,522" ("its own tokenizer" for a stand-in without a source)."""
        if self.source is None:
            return "its own tokenizer"
        reader = self.source.reader
        return f"{type(reader.model).__name__}, a vocabulary of {reader.get_vocab_size():,}"

    @property
    def pooling(self) -> Pooling:
        """How the model pools a sentence's embedding (its source's; mean for a stand-in)."""
        return pooling_of(None) if self.source is None else self.source.pooling

    def masked_head(self) -> tuple[MaskedLMHead | None, str | None]:
        """The model's masked-LM head (on the CPU), or why it has none (ModelSource's)."""
        return (None, NO_HEAD_RANDOM) if self.source is None else self.source.masked_head()

    def cpu_model(self) -> TransformerEncoder:
        """The model on the CPU, where the run's trace and the head are."""
        return self.model() if self.device == "cpu" else model_for(self.cfg, self.source, "cpu")

    @cached_property
    def similarity(self) -> np.ndarray:
        """The cosines of the sentences' embeddings at every depth, [L+1, B, B] (depth 0: the
        embeddings, L: the output, the embedding the model gives), pooled as the model pools."""
        mask = torch.from_numpy(self.attention_mask)
        embeddings = embeddings_by_depth(self.trace, mask, self.pooling)
        return cosine_matrix(embeddings).numpy()

    @cached_property
    def alike(self) -> list[AlikePair]:
        """Each pair of sentences: the depth at which it becomes alike, said (ALIKE_RULE)."""
        return alike_depths(torch.from_numpy(self.similarity), self.sentences)

    def n_valid(self, sentence: int) -> int:
        return int(self.attention_mask[sentence].sum())

    # Computed on first use: a view pays only for the tables it shows.
    @cached_property
    def task_answers(self) -> tuple[list[list[str]], list[list[str]]] | None:
        """For a task model: per sentence and position, (what the task asks for, what the model
        answers), as class names; None for other sources."""
        model = self.task_model
        if model is None:
            return None
        task = get_task(model.task)
        targets = task.targets(torch.from_numpy(self.input_ids), model.vocab)  # [B, T]
        expected = [[task.class_name(c, model.vocab) for c in row] for row in targets.tolist()]
        return expected, model.predicted_classes(self.trace.output)

    @cached_property
    def layernorm_stats(self) -> pd.DataFrame:
        return norms.layernorm_stats(self.trace, self.cfg)

    @cached_property
    def residual_norms(self) -> pd.DataFrame:
        return norms.residual_norms(self.trace)

    @cached_property
    def norm_parameters(self) -> pd.DataFrame:
        return norms.norm_parameters(self.cfg, self.weights)

    @cached_property
    def ledger(self) -> pd.DataFrame:
        return ledger.shape_ledger(self.cfg, *self.input_ids.shape)

    @cached_property
    def parameter_counts(self) -> pd.DataFrame:
        return ledger.parameter_counts(self.cfg)

    @cached_property
    def cost(self) -> dict:
        return ledger.cost_summary(self.cfg, self.trace)

    def block_ops(self) -> list[block.Op]:
        """Block 0's operations with this run's shapes (what the block diagram draws)."""
        return block.block_ops(self.cfg, 0, *self.input_ids.shape)

    def attention_steps(self, sentence: int, layer: int, head: int, query: int) -> AttentionSteps:
        """One query's attention computation (the run must keep names_for_steps of `layer`)."""
        tokens = self.padded_tokens[sentence]
        return attention_steps(
            self.cfg, self.weights, self.trace, sentence, layer, head, query, tokens
        )

    _head_metrics: dict[int, pd.DataFrame] = field(default_factory=dict, repr=False)

    def head_metrics(self, sentence: int) -> pd.DataFrame:
        """Every head's metrics over one sentence's real tokens."""
        if sentence not in self._head_metrics:
            self._head_metrics[sentence] = heads.head_metrics(self.trace, sentence)
        return self._head_metrics[sentence]

    _activation_summaries: dict[int, activations.SentenceSummary] = field(
        default_factory=dict, repr=False
    )

    def activation_summary(self, sentence: int) -> activations.SentenceSummary:
        """One sentence's every-layer activation tables (the run must keep
        activations.hook_names)."""
        if sentence not in self._activation_summaries:
            self._activation_summaries[sentence] = activations.SentenceSummary(self.trace, sentence)
        return self._activation_summaries[sentence]


@dataclass(frozen=True)
class Runs:
    """What a view draws: setup A's run and, in compare mode, setup B's (or why B has none)."""

    a: Run
    b: Run | None = None
    b_problem: str = ""  # compare mode without a B run: why (an impossible setup, a bad input)

    @property
    def compare(self) -> bool:
        return self.b is not None or bool(self.b_problem)

    def named(self) -> list[tuple[str, Run]]:
        """[("A", run)] or [("A", run), ("B", run)]."""
        return [("A", self.a)] + ([("B", self.b)] if self.b is not None else [])

    @property
    def same_tokens(self) -> bool:
        """True when A and B read the same token ids (B's tokens line up with A's)."""
        return self.b is not None and same_input(self.a.trace, self.b.trace)

    @property
    def token_difference(self) -> str:
        """Why token-by-token differences are not drawn, with each setup's own token counts:
        "A reads 20 tokens (WordPiece, a vocabulary of 26), B 16 (BPE, ...): ..."; "" when
        A and B read the same tokens (or there is no B). Two tokenizations are not lined up by
        the text's character offsets either: a word that A splits in three pieces and B in two
        has no one attention row or stream vector to subtract, so the page compares only what
        each setup averages over its own tokens (per depth, per layer, per head) and shapes,
        parameters and cost."""
        if self.b is None or self.same_tokens:
            return ""
        a, b = self.a, self.b
        if a.tokens == b.tokens and a.lengths == b.lengths:
            return _(
                "A and B read the same {counts} tokens under different ids ({a_reader} in A, "
                "{b_reader} in B): token-by-token differences are not drawn",
                counts=_counts(a),
                a_reader=a.tokenizer_name,
                b_reader=b.tokenizer_name,
            )
        values = {
            "a_counts": _counts(a),
            "a_reader": a.tokenizer_name,
            "b_counts": _counts(b),
            "b_reader": b.tokenizer_name,
        }
        if a.lengths != b.lengths:
            return _(
                "A reads {a_counts} tokens ({a_reader}), B {b_counts} ({b_reader}): "
                "token-by-token differences (B − A of attention weights, the streams' cosines) "
                "are not drawn; numbers per layer and per head are compared where both setups "
                "have them",
                **values,
            )
        return _(
            "A reads {a_counts} tokens ({a_reader}), B {b_counts} ({b_reader}), not the same "
            "ones: token-by-token differences (B − A of attention weights, the streams' cosines) "
            "are not drawn; numbers per layer and per head are compared where both setups have "
            "them",
            **values,
        )

    @cached_property
    def _compared(self) -> tuple[TraceComparison | None, str]:
        if self.b is None:
            return None, self.b_problem
        if not self.same_tokens:
            return None, self.token_difference
        try:
            return compare_runs(self.a, self.b), ""
        except RunTooLarge as error:  # the budget's message: nothing was computed
            return None, told(error)

    @property
    def comparison(self) -> TraceComparison | None:
        """B against A where both read the same tokens and it fits in the memory budget; None
        otherwise (`why_no_comparison`)."""
        return self._compared[0]

    @property
    def why_no_comparison(self) -> str:
        return self._compared[1]


def _counts(run: Run) -> str:
    """A run's real tokens per sentence: "20", or "20, 9 and 14" for several sentences."""
    counts = [str(n) for n in run.lengths]
    if len(counts) == 1:
        return counts[0]
    return _("{first} and {last}", first=", ".join(counts[:-1]), last=counts[-1])


def derived_tag(*runs: Run) -> str | None:
    """The session model an entry derives from (it leaves with it), if any."""
    return next((run.key.source for run in runs if run.key.source not in BUILT_IN), None)


def _arrays_bytes(value: TraceComparison) -> int:
    """A comparison's real bytes: its arrays, and the Python objects around them."""
    arrays = [v for v in vars(value).values() if isinstance(v, np.ndarray)]
    return sum(array.nbytes for array in arrays) + RUN_OVERHEAD_BYTES


def _comparison_reserve(a: Run, b: Run) -> int:
    """compare_traces' peak: float64 copies of both passes' attention and streams, and the
    differences and cosines computed from them."""
    values = sum(
        run.attention.size + sum(h.numel() for h in run.trace.hidden_states) for run in (a, b)
    )
    return 2 * 8 * values


def compare_runs(a: Run, b: Run) -> TraceComparison:
    """B against A (same tokens), computed once per pair of runs and kept in the shared cache
    with its real bytes; RunTooLarge (the budget's message) when it cannot fit."""
    return CACHE.get_or_build(
        ("comparison", a.key, b.key),
        lambda: compare_traces(a.trace, b.trace),
        _arrays_bytes,
        reserve=_comparison_reserve(a, b),
        what=_(
            "Comparing A with B ({sentences} sentence(s) x {tokens} tokens)",
            sentences=len(a.sentences),
            tokens=a.input_ids.shape[1],
        ),
        keep=(("run", a.key), ("run", b.key)),
        tag=derived_tag(a, b),
    )


def ablation_effect(run: Run, heads_off: tuple[tuple[int, int], ...]) -> ablation.AblationEffect:
    """What switching `heads_off` changes in `run`: the run without them (a cached run) compared
    with it, computed once and kept in the shared cache with its real bytes; RunTooLarge (the
    budget's message) when either cannot fit."""
    ablated = run.heads_off(heads_off)
    return CACHE.get_or_build(
        ("ablation", run.key, ablated.key.ablate),
        lambda: ablation.compare(run.trace, ablated.trace),
        _arrays_bytes,
        reserve=_comparison_reserve(run, ablated),
        what=_("The effect of switching off {count} head(s)", count=len(ablated.key.ablate)),
        keep=(("run", run.key), ("run", ablated.key)),
        tag=derived_tag(run),
    )
