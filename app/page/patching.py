"""Patching a run's model (encoder.inspect.patching) for the Interventions view and the lesson:
the token count a one-word change must keep, and the job computing every grid of two sentences
in the background (app.jobs.patch_job), or the sentence that says why it cannot start."""

from __future__ import annotations

from collections.abc import Callable

import torch

from app.i18n import _, told_sentence
from app.jobs import PatchJob, patch_job
from app.runs import Run, derived_tag
from encoder.inspect.limits import MAX_ACTIVATION_BYTES, estimate_activation_bytes
from encoder.inspect.masked import mask_token_of
from encoder.inspect.patching import check_pair, metric_named, patch


def token_count(run: Run) -> Callable[[str], int]:
    """How many tokens the run's tokenizer reads in a text (words, for a stand-in)."""
    if run.source is None:
        return lambda text: len(text.split())
    return lambda text: len(run.source.reader.encode(text).ids)


def _metric(run: Run, name: str, tokens: list[str]):
    """The named metric for this run's model (ValueError(Said) when it lacks what it needs)."""
    head, task = run.masked_head()[0], run.task_model
    return metric_named(
        name,
        pooling=run.pooling,
        lm_head=head,
        classifier=getattr(task.classifier, "head", None) if task else None,
        tokens=tokens,
        mask_token=mask_token_of(run.source.reader) if run.source else None,
    )


def patching(run: Run, clean: str, corrupted: str, metric_name: str) -> PatchJob | str:
    """The job computing every grid of the pair on this run's model, or why it cannot start."""
    if not clean.strip() or not corrupted.strip():
        return _("Type two sentences: an empty one has no token to patch.")
    try:
        reading = run.reading([clean, corrupted]) if run.reading else None
        if reading is None:
            return _("This run has no model to patch.")
        tokens = reading.tokens
        ids = [torch.from_numpy(reading.input_ids[s, : len(tokens[s])]) for s in (0, 1)]
        metric = _metric(run, metric_name, tokens[0])
        check_pair(ids[0][None], ids[1][None])  # two counts, the same sentence twice
    except ValueError as error:
        return told_sentence(error)
    key = (run.cfg, run.key.source, clean, corrupted, metric_name)
    T, cfg = len(tokens[0]), run.cfg
    reserve = min(MAX_ACTIVATION_BYTES, estimate_activation_bytes(cfg, T + cfg.num_heads, T))
    compute = lambda heard: patch(run.cpu_model(), *ids, metric, tokens[0], heard)  # noqa: E731
    return patch_job(key, compute, reserve, derived_tag(run), ids)
