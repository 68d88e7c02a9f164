"""The page's measurements that run longer than a rerun: a model's cost (time, memory and
gradients, in a background thread, one at a time, its report kept in the shared cache) and what
checkpointing saves a training step (measured once per architecture, batch shape and device)."""

from __future__ import annotations

import atexit
import logging
import threading
from dataclasses import dataclass

import streamlit as st
import torch

from app.i18n import N_, _
from app.memory import CACHE
from app.models import model_for, model_key
from app.sources import ModelSource
from encoder import EncoderConfig, TransformerEncoder
from encoder.core import block
from encoder.core.said import said_of
from encoder.inspect.limits import BYTES_PER_VALUE
from encoder.measure.cost import CostReport, CostSettings, cost_report
from encoder.measure.train_memory import TrainMemory, measure_train_memory
from encoder.train.config import TrainConfig

log = logging.getLogger(__name__)


def checkpoint_cost(cfg: TrainConfig) -> TrainMemory:
    """One training step's memory for the backward pass and its time, plain and with every
    block checkpointed: the encoder of `cfg`'s architecture on a batch of its task's shape
    (measured once per architecture, batch shape and device; steps, rates and seeds change
    nothing here)."""
    with st.spinner(_("Measuring what checkpointing saves…")):
        return _checkpoint_cost(cfg.model, cfg.batch_size, cfg.seq_len, cfg.device)


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
    what: str = N_("starting")  # what it measures now (marked: the page tells it)
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
                    keep=(model_key(cfg, source, device),),
                    tag=source.tag,
                    aside=True,
                )
        except Exception as error:  # RunTooLarge, out of memory, a bug: the page stops waiting
            log.exception("measuring the cost of %s failed", cfg)
            job.error = said_of(error) or type(error).__name__  # told when shown

    threading.Thread(target=run, name=MEASURER, daemon=True).start()
    return job


PATCHING_BYTES = 100_000  # a Patching's grids and sentences, generously
MAX_PATCH_JOBS = 32


@dataclass
class PatchJob:
    """Every patching grid of two sentences (encoder.inspect.patching.patch), in a thread of its
    own: the grid it patches now and how far it is (0..1), then its Patching, or why not (the
    library's Said: different token counts, nothing to restore, no mask...)."""

    what: str = "residual"
    done: float = 0.0
    result: object = None  # Patching
    error: str | None = None
    ids: tuple = ()  # the two sentences' token ids
    refused: bool = False  # the library refused (a ValueError): asking again says the same
    thread: threading.Thread | None = None

    @property
    def finished(self) -> bool:
        return self.result is not None or self.error is not None

    def heard(self, what: str, done: float) -> None:
        self.what, self.done = what, done

    def wait(self) -> None:
        """Until it is finished (the lesson's question needs its truth now)."""
        if self.thread is not None:
            self.thread.join()


_PATCH_JOBS: dict[tuple, PatchJob] = {}
_PATCHING = threading.Lock()  # one patching at a time: two would share the cores, both slower


def patch_job(key: tuple, compute, reserve: int, tag: str | None, ids: tuple) -> PatchJob:
    """The grids of `key` (model source, sentences, metric), computed once by `compute(heard)`
    in a background thread and kept in the shared cache (the memory budget); a finished job is
    found again by its key (its result read from the cache while it is there)."""
    with _COST_JOBS_LOCK:
        job = _PATCH_JOBS.get(key)
        if job is not None and (job.error is None or job.refused):
            return job
        job = _PATCH_JOBS[key] = PatchJob(ids=tuple(ids))
        for old in [k for k, j in _PATCH_JOBS.items() if j.finished][:-MAX_PATCH_JOBS]:
            del _PATCH_JOBS[old]

    def run() -> None:
        try:
            with _PATCHING:
                job.result = CACHE.get_or_build(
                    ("patching", *key), lambda: compute(job.heard), lambda found: PATCHING_BYTES,
                    reserve=reserve, what="Patching", tag=tag, aside=True,
                )  # fmt: skip
        except Exception as error:  # the library's refusals (a Said), the budget's, a bug
            job.refused = isinstance(error, ValueError)
            if not job.refused:
                log.exception("patching %s failed", key[:2])
            job.error = said_of(error) or type(error).__name__

    job.thread = threading.Thread(target=run, name="patching", daemon=True)
    job.thread.start()
    return job
