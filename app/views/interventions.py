"""Interventions: activation patching (encoder.inspect.patching). Two sentences of the same token
count (the clean one: setup A's first sentence; the corrupted one: it with one word changed,
editable), a metric, and the effect of copying each piece of the clean run's state into the
corrupted run: the residual stream (tokens x layers 0..L), the attention and feed-forward outputs
(tokens x layers) and each head (heads x layers), each with the library's sentence; then the
cone of one patch in the encoder beside a decoder's causal mask. The grids are computed in the
background (app.jobs.patch_job, kept in the memory budget) while a progress bar shows how far;
only the open tab is drawn. Bad input is the library's sentence, never a traceback."""

from __future__ import annotations

import zlib

import numpy as np
import streamlit as st

from app.charts.patching import grid_figure
from app.i18n import N_, _, number, told, told_sentence
from app.jobs import PatchJob
from app.keys import Key, Selection
from app.memory import CACHE
from app.page.changes import what_changed
from app.page.layout import pair, show_for, side_by_side
from app.page.patching import patching, token_count
from app.runs import Run, Runs, derived_tag
from app.user_text import literal
from encoder.inspect.limits import estimate_activation_bytes
from encoder.inspect.patching import (
    METRICS,
    Patching,
    cone,
    one_word_changed,
)

POLL_S = 0.5
CHART_KEYS = {"A": "a", "B": "b", "B − A": "difference"}
METRIC_NAMES = {
    "cosine": N_("cosine of the sentence embeddings"),
    "mask": N_("the mask's logit difference"),
    "task": N_("the task's logit"),
}
TABS = {
    "residual": N_("Residual stream"),
    "parts": N_("Attention and feed-forward"),
    "heads": N_("Heads"),
    "cone": N_("The cone"),
}


def tab_labels() -> list[str]:
    return [_(label) for label in TABS.values()]


KEYS = (
    Key("patch_metric", "cosine", in_url=True, choices=METRICS, selects=True),
    Key("patch_tab", labels=tab_labels),
)


def pair_keys(sentence: str) -> tuple[str, str]:
    """The two text boxes' keys: new ones (prefilled anew) when the sidebar's sentence changes."""
    tag = zlib.crc32(sentence.encode())
    return f"patch_clean_{tag}", f"patch_corrupted_{tag}"


def _sentences(run: Run) -> tuple[str, str]:
    """The two text boxes: the clean sentence and the corrupted one (prefilled), and what the
    rule changed."""
    first = run.sentences[0]
    changed = one_word_changed(first, token_count(run))
    corrupted, said = changed if changed else (first, None)
    clean_key, corrupted_key = pair_keys(first)
    left, right = st.columns(2)
    clean = left.text_input(_("Clean sentence"), first, key=clean_key)
    corrupted = right.text_input(_("Corrupted sentence"), corrupted, key=corrupted_key)
    if said is not None and clean == first and corrupted == changed[0]:
        st.caption(literal(_("The corrupted sentence: {said}.", said=told(said))))
    return clean, corrupted


def draw(runs: Runs, chosen: Selection) -> None:
    st.header(_("Interventions"))
    st.markdown(
        _(
            "Run a clean sentence and one with a word changed, copy one piece of the clean run's "
            "state into the corrupted run, and measure how much of the clean output comes back: "
            "0 is the corrupted run, 1 the clean one. Where the biggest numbers are is where the "
            "model keeps what the changed word decides."
        )
    )
    what_changed(runs)
    clean, corrupted = _sentences(runs.a)
    offered = ["cosine"]
    offered += ["mask"] if runs.a.masked_head()[0] is not None else []
    offered += ["task"] if runs.a.task_model is not None else []
    asked = chosen.patch_metric
    offered += [asked] if asked not in offered else []  # a link's: its refusal is said below
    names = {name: _(METRIC_NAMES[name]) for name in offered}  # made now, read after the run
    metric = st.radio(_("Metric"), offered, key="patch_metric", horizontal=True,
                      format_func=names.get)  # fmt: skip
    jobs = {name: patching(run, clean, corrupted, metric) for name, run in runs.named()}
    for name, job in jobs.items():
        if isinstance(job, str):
            said = _("Setup {name}: {said}", name=name, said=job) if runs.b else job
            st.warning(literal(said))
    ready = {name: job for name, job in jobs.items() if not isinstance(job, str)}
    if ready:
        polling = not all(job.finished for job in ready.values())
        st.fragment(_grids, run_every=POLL_S if polling else None)(runs, ready, polling)


def _grids(runs: Runs, jobs: dict[str, PatchJob], polling: bool) -> None:
    """A progress bar while the grids are computed (this fragment polls), then the tabs."""
    waiting = [job for job in jobs.values() if not job.finished]
    if waiting:
        done = sum(job.done for job in waiting) / len(waiting)
        what = {"residual": TABS["residual"], "heads": TABS["heads"]}.get(waiting[0].what)
        st.progress(done, text=_("Patching every piece of the corrupted run ({what})…",
                                 what=_(what or TABS["parts"])))  # fmt: skip
        return
    if polling:
        st.rerun(scope="app")
    found = {}
    for name, job in jobs.items():
        if job.error is not None:
            st.warning(literal(_("Setup {name}: {said}", name=name, said=told_sentence(job.error))
                               if runs.b else told_sentence(job.error)))  # fmt: skip
        else:
            found[name] = job
    if not found:
        return
    first = next(iter(found.values())).result
    st.caption(
        _(
            "The metric, {metric}: {clean} on the clean sentence, {corrupted} on the corrupted "
            "one. Each cell: (patched − corrupted) / (clean − corrupted).",
            metric=_(METRIC_NAMES[first.metric]),
            clean=number(first.clean, 3),
            corrupted=number(first.corrupted, 3),
        )
    )
    labels = tab_labels()
    tabs = st.tabs(labels, key="patch_tab", on_change="rerun")
    draws = (_residual, _parts, _heads, _cone)
    for tab, draw_tab in zip(tabs, draws, strict=True):
        if tab.open:
            with tab:
                draw_tab(runs, found)


def _layers(count: int) -> list[str]:
    return [str(layer) for layer in range(count)]


def _token_rows(result: Patching) -> list[str]:
    return [f"{t} {token}" for t, token in enumerate(result.tokens)]


def _grid(runs: Runs, jobs: dict, grid: str, title: str) -> None:
    """One grid of every setup (tokens or heads x layers), its sentence, and B − A."""
    results = {name: job.result for name, job in jobs.items()}
    shown = dict(results)
    shapes = {getattr(result, grid).shape for result in results.values()}
    if len(results) == 2 and len(shapes) == 1:
        shown["B − A"] = None
    for name, result in shown.items():
        values = (
            getattr(results["B"], grid) - getattr(results["A"], grid)
            if result is None
            else getattr(result, grid)
        )
        reference = result or results["A"]
        if grid == "heads":
            rows = [_("head {head}", head=h) for h in range(values.shape[1])]
            axes = (_("head"), _("layer"))
        else:
            rows, axes = _token_rows(reference), (_("token"), _("layer"))
        named = title if len(shown) == 1 else f"{name} · {title}"
        fig = grid_figure(values.T, rows, _layers(values.shape[0]), title=named,
                          colour_title=_("restored"), axes=axes)  # fmt: skip
        show_for(fig, f"patch_{grid}_{CHART_KEYS[name]}", "")
        if result is not None:
            said = told_sentence(result.said[grid])
            st.info(literal(_("Setup {name}: {said}", name=name, said=said) if runs.b else said))


def _residual(runs: Runs, jobs: dict) -> None:
    _grid(runs, jobs, "residual", _("Restoring the stream entering each layer (L: the output)"))


def _parts(runs: Runs, jobs: dict) -> None:
    _grid(runs, jobs, "attention", _("Restoring each block's attention output"))
    _grid(runs, jobs, "mlp", _("Restoring each block's feed-forward output"))


def _heads(runs: Runs, jobs: dict) -> None:
    _grid(runs, jobs, "heads", _("Restoring each head's output, at every token"))


def _cone(runs: Runs, jobs: dict) -> None:
    """After one chosen patch of the stream, its change at every later layer and token: in the
    encoder, and the same patch under a decoder's causal mask."""
    a = next(iter(jobs.values()))
    tokens = a.result.tokens
    changed = int(np.argmax((a.ids[0] != a.ids[1]).numpy()))
    left, right = st.columns(2)
    layers = a.result.residual.shape[0]
    layer = left.select_slider(_("Patch the stream entering layer"), range(layers), value=0,
                               key=f"patch_cone_layer_{layers}")  # fmt: skip
    position = right.selectbox(_("at token"), range(len(tokens)), index=changed,
                               key=f"patch_cone_token_{len(tokens)}",
                               format_func=lambda t: f"{t} {tokens[t]}")  # fmt: skip
    for name, run in side_by_side(runs):
        job = jobs.get(name or "A")
        if job is None:
            continue
        found = CACHE.get_or_build(
            ("cone", run.cfg, run.key.source, *(tuple(i.tolist()) for i in job.ids), layer,
             position),
            lambda run=run, job=job: cone(run.cpu_model(), *job.ids, layer, position, tokens),
            lambda found: 8 * found.encoder.size + 1000,
            reserve=estimate_activation_bytes(run.cfg, 4, len(tokens)),
            what="The cone",
            tag=derived_tag(run),
        )  # fmt: skip
        st.info(literal(told_sentence(found.said)))
        rows = _token_rows(job.result)
        top = float(max(found.encoder.max(), found.causal.max()))  # one scale for both
        panes = pair(name)
        for pane, values, title in zip(
            panes,
            (found.encoder, found.causal),
            (_("The encoder: attention both ways"), _("A decoder: the causal mask")),
            strict=True,
        ):
            with pane:
                fig = grid_figure(values.T, rows, _layers(values.shape[0]), title=title,
                                  colour_title=_("change"), axes=(_("token"), _("layer")),
                                  signed=False, digits=1, top=top)  # fmt: skip
                show_for(fig, f"patch_cone_{'causal' if pane is panes[1] else 'encoder'}", name)
