"""Cached models and cached runs: where the page builds models and runs their forward pass.

A run's model source arrives resolved (app.sources.ModelSource: its id, its tokenizer, a session
model's own encoder), so nothing here reads a browser session; runs are cached under the config
itself (a frozen EncoderConfig), the source's id, the device, the text, the hooks and the heads off.

A `Run` is what the views draw: the batch, the Trace and the model's weights (its state_dict), with
the tables of encoder.inspect computed from them on first use; it never calls the model again. So a
stand-in built from other arrays (tests/bench/floor_page.py) draws the same views. A run keeps only
the hooks the open view reads (`names`, a function of the config and the selection), plus the
attention weights and the residual stream that every trace returns. Models and runs live in one
cache bounded in bytes (app.memory.CACHE; ENCODER_EXPLORER_MEMORY_BUDGET, default 2 GB) shared by
every browser session of the server, so they are read-only: models sit in eval mode and runs hold
arrays and tables that nobody mutates (a run only fills in its lazily computed tables, the same for
every session). Setup B's run in compare mode is one more run of the same cache. A session model's
weights count in the same budget as what its session keeps (app.controls.session_models); its runs
(and its copies on other devices) are cached entries tagged with its id, which leave the cache when
the model leaves its session. Entries a page gets inside `CACHE.holding()` (app.main) are not
evicted while the page draws them."""

from __future__ import annotations

import atexit
import copy
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd
import streamlit as st
import torch

from app.i18n import _, told
from app.memory import CACHE, tensor_bytes
from app.sources import BUILT_IN, ModelSource, built_in, pretrained_config
from encoder import EncoderConfig, Trace, TransformerEncoder, load_pretrained
from encoder.core import block
from encoder.core.said import said_of
from encoder.inspect import ablation, activations, heads, ledger, norms
from encoder.inspect.attention_steps import AttentionSteps, attention_steps
from encoder.inspect.compare import TraceComparison, compare_traces, same_input
from encoder.inspect.limits import (
    BYTES_PER_VALUE,
    MAX_SENTENCES,
    RunTooLarge,
    check_run,
    estimate_trace_bytes,
)
from encoder.io.task_model import TaskModel
from encoder.io.tokenize import TokenizedBatch, Truncation, tokenize
from encoder.measure.cost import CostReport, CostSettings, cost_report
from encoder.measure.timing import synchronize
from encoder.measure.train_memory import TrainMemory, measure_train_memory
from encoder.tasks.tasks import get_task
from encoder.train.trainer import TrainConfig

# One torch thread per forward pass. The page streams to the browser while the script runs, so
# on a small machine Chromium draws while torch computes, and two torch threads then wait on
# each other: measured rerun at 6 x 8 heads, d_model 512, 33 tokens, 0.52 s -> 0.43 s.
torch.set_num_threads(1)

log = logging.getLogger(__name__)

RUN_OVERHEAD_BYTES = 1_000_000  # tokens, tables and Python objects beside a run's arrays


def _build_model(cfg: EncoderConfig, source: ModelSource, device: str) -> TransformerEncoder:
    if source.encoder is not None:  # a copy for this device; the session keeps the CPU one
        return _same_weights(copy.deepcopy(source.encoder), cfg).to(device)
    if source.id == "pretrained":
        if device == "cpu":
            return _same_weights(load_pretrained()[0], cfg)
        # A copy per device: the CPU model is shared by every session.
        return copy.deepcopy(model_for(cfg, source, "cpu")).to(device)
    return TransformerEncoder(cfg).eval().to(device)


def _same_weights(model: TransformerEncoder, cfg: EncoderConfig) -> TransformerEncoder:
    """`model`'s weights in the block `cfg` describes: the same model, or with another
    activation or norm placement (a lesson question's other variant). Pre-norm's final norm,
    which a post-norm model lacks, starts as the identity LayerNorm; post-norm drops it."""
    if model.cfg == cfg:
        return model
    other = TransformerEncoder(cfg).eval()
    missing, _unexpected = other.load_state_dict(model.state_dict(), strict=False)
    if any(not name.startswith("norm.") for name in missing):
        raise ValueError(f"the model's weights do not fit {cfg}: {missing}")
    return other


def _model_key(cfg: EncoderConfig, source: ModelSource, device: str) -> tuple:
    return ("model", cfg, source.id, device)


def model_for(cfg: EncoderConfig, source: ModelSource, device: str) -> TransformerEncoder:
    """One model per (config, source, device), in eval mode, never trained or mutated."""
    if source.encoder is not None and device == "cpu" and source.encoder.cfg == cfg:
        return source.encoder  # counted in the budget as what its session keeps
    return CACHE.get_or_build(
        _model_key(cfg, source, device),
        lambda: _build_model(cfg, source, device),
        lambda model: tensor_bytes([model]),
        reserve=2 * BYTES_PER_VALUE * block.parameters(cfg),  # the model and its init
        what=_("This model"),
        tag=source.tag,
    )


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
    # measure, e.g. a stand-in); budget_s -> its CostJob (app.runs.cost_job)
    measure_cost: Callable[[float], CostJob] | None = None
    source: ModelSource | None = None  # where the weights came from and what read the text

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


def split_lines(text: str) -> tuple[list[str], int]:
    """The non-blank lines to run (at most MAX_SENTENCES) and how many lines there were."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[:MAX_SENTENCES], len(lines)


def _run_bytes(run: Run) -> int:
    return run.trace.nbytes + RUN_OVERHEAD_BYTES


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


def tokenize_for(source: ModelSource, cfg: EncoderConfig, sentences: list[str]) -> TokenizedBatch:
    """The batch the source's model reads, with the source's tokenizer. A task model first
    checks every sequence: a symbol it does not know or a length it was not trained on is a
    ValueError naming the sequence."""
    if source.check is not None:
        for number, sentence in enumerate(sentences, 1):
            try:
                source.check(sentence)
            except ValueError as error:
                raise ValueError(
                    _("Sequence {number}: {error}.", number=number, error=told(error))
                ) from None
    return tokenize(sentences, source.reader, cfg.max_len)


def _build_run(key: RunKey, source: ModelSource, batch, model: TransformerEncoder) -> Run:
    input_ids = batch.input_ids.to(key.device)
    attention_mask = batch.attention_mask.to(key.device)
    start = time.perf_counter()
    trace = model.trace(input_ids, attention_mask, names=key.names, ablate_heads=key.ablate)
    synchronize(key.device)  # a GPU's queued work, so the clock measures the pass
    forward_ms = (time.perf_counter() - start) * 1000
    trace = trace.to("cpu")
    cfg, names = key.cfg, key.names
    return Run(
        key=key,
        cfg=cfg,
        tokens=batch.tokens,
        padded_tokens=batch.padded_tokens(),
        input_ids=trace.input_ids.numpy(),
        attention_mask=trace.attention_mask.numpy(),
        attention=trace.attention.numpy(),
        trace=trace,
        load_weights=lambda: model_for(cfg, source, key.device).state_dict(),
        truncations=batch.truncations,
        forward_ms=forward_ms,
        heads_off=lambda heads: run_for(
            cfg, source, key.device, list(key.sentences), names, ablate=heads
        ),
        variant=lambda **changes: _variant(key, source, replace(cfg, **changes)),
        task_model=source.task_model,
        measure_cost=lambda budget_s: cost_job(
            cfg, source, key.device, batch.input_ids, batch.attention_mask, budget_s
        ),
        source=source,
    )


def _variant(key: RunKey, source: ModelSource, cfg: EncoderConfig) -> Run:
    """The run of `key` with another config of the same weights, keeping the hooks of `key`
    that exist in `cfg` (a post-norm model has no final norm)."""
    names = set(block.hook_names(cfg)).intersection(key.names)
    return run_for(cfg, source, key.device, list(key.sentences), names)


def checkpoint_cost(cfg: TrainConfig) -> TrainMemory:
    """One training step's memory for the backward pass and its time, plain and with every
    block checkpointed: the encoder of `cfg`'s architecture on a batch of its task's shape
    (measured once per architecture, batch shape and device; steps, rates and seeds change
    nothing here)."""
    with st.spinner(_("Measuring what checkpointing saves…")):
        return _checkpoint_cost(cfg.encoder_config(), cfg.batch_size, cfg.seq_len, cfg.device)


@st.cache_resource(max_entries=16, show_spinner=False)
def _checkpoint_cost(
    encoder_cfg: EncoderConfig, batch_size: int, seq_len: int, device: str
) -> TrainMemory:
    model = TransformerEncoder(encoder_cfg).to(device)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, encoder_cfg.vocab_size, (batch_size, seq_len), generator=generator)
    return measure_train_memory(model, ids.to(device), None, repeats=2)


COST_REPORT_BYTES = 100_000  # a cost report's rows, generously
MAX_COST_JOBS = 32  # measurements the server remembers (each a report of about 100 kB)


@dataclass
class CostJob:
    """One cost measurement, running in a thread of its own (never the script's thread, so it
    makes no st call): what it measures now and how far it is (0..1), then its report, or why it
    failed. `batch`: [B, T] of the batch it measures on (the text of the page that started it)."""

    batch: tuple[int, int]
    what: str = "starting"
    done: float = 0.0
    report: CostReport | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.report is not None or self.error is not None

    def heard(self, what: str, done: float) -> None:
        self.what, self.done = what, done


_COST_JOBS: dict[tuple, CostJob] = {}  # (config, device, budget) -> its job, oldest first
_COST_JOBS_LOCK = threading.Lock()
_MEASURING = threading.Lock()  # one measurement at a time: two would time each other
MEASURER = "cost-measure"  # the measuring thread's name
_STOP_MEASURING = threading.Event()  # set at exit: a measurement then ends within a step
ENDING_S = 30.0  # at most this long, the process's end waits for the measurement to end


@atexit.register
def _end_measuring() -> None:
    """At the process's end (a server stopped, a test session over), before its daemon threads
    are cut off: end a running measurement within a step and wait for it. Cut off inside torch's
    code, its thread would abort the process ("terminate called without an active exception")."""
    _STOP_MEASURING.set()
    for thread in threading.enumerate():
        if thread.name == MEASURER:
            thread.join(timeout=ENDING_S)


def cost_job(
    cfg: EncoderConfig,
    source: ModelSource,
    device: str,
    input_ids: torch.Tensor,  # [B, T]
    attention_mask: torch.Tensor,  # [B, T]
    budget_s: float,
) -> CostJob:
    """The architecture's cost on this device, measured once per (config, device, budget) in a
    background thread on the batch of the first page that asks (timing, memory and gradients at
    initialisation depend on the shapes, not on the weights' values); a job that failed is
    started again. The report is kept in the shared cache meanwhile (its working copies reserved
    in the memory budget, one measurement at a time, built aside: the pages' runs go on
    meanwhile)."""
    key = (cfg, device, budget_s)
    with _COST_JOBS_LOCK:
        job = _COST_JOBS.get(key)
        if job is not None and job.error is None:
            return job
        job = _COST_JOBS[key] = CostJob(batch=tuple(input_ids.shape))
        finished = [k for k, j in _COST_JOBS.items() if j.finished]
        for old in finished[: max(0, len(_COST_JOBS) - MAX_COST_JOBS)]:
            del _COST_JOBS[old]

    def measure() -> CostReport:
        model = model_for(cfg, source, device)
        settings = CostSettings(budget_s=budget_s)
        ids, mask = input_ids.to(device), attention_mask.to(device)
        return cost_report(model, ids, mask, settings, job.heard, stop=_STOP_MEASURING)

    def run() -> None:
        try:
            with _MEASURING:
                job.report = CACHE.get_or_build(
                    ("cost", *key),
                    measure,
                    lambda report: COST_REPORT_BYTES,
                    reserve=4 * BYTES_PER_VALUE * block.parameters(cfg),  # trainable copy, grads
                    what="Measuring this model",
                    keep=(_model_key(cfg, source, device),),
                    tag=source.tag,
                    aside=True,
                )
        except Exception as error:  # RunTooLarge, out of memory, a bug: the page stops waiting
            log.exception("measuring the cost of %s failed", cfg)
            job.error = said_of(error) or type(error).__name__  # told when shown

    threading.Thread(target=run, name=MEASURER, daemon=True).start()
    return job


def run_key(
    cfg: EncoderConfig,
    source: ModelSource,
    device: str,
    sentences: list[str],
    names: Iterable[str] | None = (),
    ablate: Iterable[tuple[int, int]] = (),
) -> RunKey:
    """What a run is cached under: its config, weights, device, sentences, the hooks it keeps
    (None: every hook) and the heads switched off, each in one canonical order."""
    kept = tuple(sorted(block.hook_names(cfg) if names is None else set(names)))
    return RunKey(cfg, source.id, device, tuple(sentences), kept, tuple(sorted(set(ablate))))


def run_for(
    cfg: EncoderConfig,
    source: ModelSource,
    device: str,
    sentences: list[str],
    names: Iterable[str] | None = (),
    ablate: Iterable[tuple[int, int]] = (),
) -> Run:
    """The cached run keeping `names` (None: every hook) on a device the controls have checked;
    raises RunTooLarge / ValueError with a message for the page (a task model's ValueError
    quotes the text: show it literally)."""
    key = run_key(cfg, source, device, sentences, names, ablate)
    batch = tokenize_for(source, cfg, list(sentences))
    B, T = batch.input_ids.shape
    check_run(cfg, B, T)
    wanted = set(key.names)
    model = model_for(cfg, source, device)
    return CACHE.get_or_build(
        ("run", key),
        lambda: _build_run(key, source, batch, model),
        _run_bytes,
        reserve=estimate_trace_bytes(cfg, B, T, wanted.__contains__),
        what=_(
            "This run ({sentences} sentence(s) x {tokens} tokens, {layers} layers)",
            sentences=B,
            tokens=T,
            layers=cfg.num_layers,
        ),
        keep=(_model_key(cfg, source, device),),
        tag=source.tag,
    )


@st.cache_resource(show_spinner=False)
def warm_landing(text: str) -> threading.Thread:
    """Once per process, on its first page: MiniLM's run of the landing page's `text`, every hook
    kept (the Lesson's), built in the background into the shared cache, so that a room opening
    the student link at once finds it there instead of each waiting on a forward pass."""
    cfg = pretrained_config()
    sentences, _count = split_lines(text)
    thread = threading.Thread(
        target=run_for,
        args=(cfg, built_in("pretrained", cfg), "cpu", sentences, None),
        name="warm-landing-run",
        daemon=True,
    )
    thread.start()
    return thread
