"""The Training view: train a tiny encoder on a toy task live, then look at its attention.

Training runs in chunks inside a fragment that reruns itself every REFRESH_SECONDS: each rerun
trains for about CHUNK_SECONDS and redraws the progress bar and curves. Between chunks the browser
is free, so the Stop button (a full rerun, which Streamlit lets interrupt a running fragment)
takes effect within one chunk. The job (encoder.training_jobs.TrainingJob) lives in
st.session_state, so nothing is lost on a rerun, and the finished model stays there
(`train_result`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from app.charts import training as training_charts
from app.charts.attention import attention_head, attention_overview
from encoder.config import NORM_PLACEMENTS, norm_first_of, placement_of
from encoder.tasks import TASKS
from encoder.training import PRESETS, TrainConfig, TrainResult, sample_trace, torch_threads
from encoder.training_jobs import TrainingJob, comparison_job, single_job

CHUNK_SECONDS = 0.5  # training time between two redraws
REFRESH_SECONDS = 0.2  # how soon the fragment asks for the next chunk
TRAINING_THREADS = 1  # the browser drawing the live charts shares the cores (see torch_threads)
MAX_STEPS = 5000
MAX_LAYERS = 24
D_MODELS = (16, 32, 64, 128)
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
JOB_KEY = "train_job"  # the TrainingJob of this browser session
RESULT_KEY = "train_result"  # the last finished single run's TrainResult (model included)

# widget key -> TrainConfig field it sets ("train_norm" holds "pre" / "post")
WIDGET_FIELDS = {
    "train_task": "task",
    "train_norm": "norm_first",
    "train_layers": "num_layers",
    "train_d_model": "d_model",
    "train_heads": "num_heads",
    "train_lr": "lr",
    "train_warmup": "warmup_steps",
    "train_steps": "steps",
    "train_seed": "seed",
}

# Widgets whose values should survive a visit to another view.
PERSISTENT_KEYS = ("train_preset", *WIDGET_FIELDS)


def _widget_values(cfg: TrainConfig) -> dict:
    values = {key: getattr(cfg, name) for key, name in WIDGET_FIELDS.items()}
    values["train_norm"] = placement_of(cfg.norm_first)
    return values


def _apply_preset() -> None:
    preset = PRESETS[st.session_state["train_preset"]]
    st.session_state.update(_widget_values(TrainConfig(**preset)))


def _config_from_widgets() -> TrainConfig:
    """The TrainConfig the controls describe; ValueError naming a bad value."""
    chosen = {name: st.session_state[key] for key, name in WIDGET_FIELDS.items()}
    chosen["norm_first"] = norm_first_of(chosen["norm_first"])
    return TrainConfig(**{**PRESETS[st.session_state["train_preset"]], **chosen})


def _controls() -> None:
    if "train_task" not in st.session_state:
        st.session_state["train_preset"] = "default"
        st.session_state.update(_widget_values(TrainConfig()))
    st.selectbox(
        "Preset",
        list(PRESETS),
        key="train_preset",
        on_change=_apply_preset,
        help="Fills in the controls below (and hidden settings such as d_ff).",
    )
    left, middle, right = st.columns(3)
    with left:
        st.selectbox(
            "Task",
            list(TASKS),
            key="train_task",
            help="\n".join(f"- **{t.name}**: {t.description}" for t in TASKS.values()),
        )
        st.radio("Norm", NORM_PLACEMENTS, key="train_norm", horizontal=True)
        st.number_input("Layers", min_value=1, max_value=MAX_LAYERS, key="train_layers")
    with middle:
        st.selectbox("d_model", D_MODELS, key="train_d_model")
        heads = [h for h in (1, 2, 4, 8, 16) if st.session_state["train_d_model"] % h == 0]
        if st.session_state.get("train_heads") not in heads:
            st.session_state["train_heads"] = max(h for h in heads if h <= 4)
        st.selectbox("Heads", heads, key="train_heads", help="Only divisors of d_model.")
        st.select_slider(
            "Learning rate", LEARNING_RATES, key="train_lr", format_func=lambda v: f"{v:g}"
        )
    with right:
        st.number_input("Warmup steps", min_value=0, max_value=MAX_STEPS, key="train_warmup")
        st.number_input("Steps", min_value=1, max_value=MAX_STEPS, key="train_steps")
        st.number_input("Seed", min_value=0, max_value=2**31 - 1, key="train_seed")


def _on_start(make_job: Callable[[TrainConfig], TrainingJob]) -> None:
    try:
        cfg = _config_from_widgets()
    except ValueError as error:
        st.session_state["train_error"] = str(error)
        return
    st.session_state.pop("train_error", None)
    st.session_state[JOB_KEY] = make_job(cfg)


def _on_stop() -> None:
    job = st.session_state.get(JOB_KEY)
    if job is not None and job.running:
        job.stop()


def _draw_progress(job: TrainingJob) -> None:
    first = next(iter(job.trainers.values()))
    total = job.total_steps * len(job.trainers)
    st.progress(
        min(1.0, job.steps_done / total),
        text=f"step {first.step} / {first.cfg.steps} · {job.seconds:.1f} s of training",
    )
    st.plotly_chart(
        training_charts.training_curves(
            {name: t.history for name, t in job.trainers.items()},
            job.total_steps,
            chance_loss=math.log(first.cfg.num_classes),
            dashed=job.dashed,
        ),
        key="train_curves",
    )


def _live_training() -> None:
    """Train one chunk and redraw; when the job ends, rerun the page to show the results."""
    job: TrainingJob | None = st.session_state.get(JOB_KEY)
    if job is None:
        return
    was_running = job.running
    with torch_threads(TRAINING_THREADS):
        job.advance(CHUNK_SECONDS)
    _draw_progress(job)
    if was_running and not job.running:
        st.rerun(scope="app")


def _results_table(job: TrainingJob) -> None:
    rows = [
        {
            "run": name,
            "held-out accuracy": round(r.held_out_accuracy, 4),
            "whole sequences right": round(r.held_out_sequence_accuracy, 4),
            "final loss": round(r.final_loss, 4),
            "steps": len(r.history),
            "seconds": round(r.seconds, 1),
            "stopped": r.stopped,
        }
        for name, r in job.results.items()
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
    counted = next(iter(job.results.values())).held_out_examples
    st.caption(f"Held-out accuracy: per token, on {counted} fresh sequences never trained on.")


def _sharpest_head(attention: np.ndarray) -> tuple[int, int]:
    """(layer, head) whose rows put the most weight on a single key, on average."""
    sharpness = attention.max(axis=-1).mean(axis=-1)  # [layer, head]
    layer, head = np.unravel_index(int(sharpness.argmax()), sharpness.shape)
    return int(layer), int(head)


def _attention_of(result: TrainResult) -> None:
    cfg = result.config
    st.subheader("What the trained model attends to")
    sample_seed = st.number_input(
        "Example sequence (seed)", min_value=0, max_value=2**31 - 1, value=0, key="train_sample"
    )
    sample = sample_trace(result.model, cfg, seed=int(sample_seed))
    names = TASKS[cfg.task].class_name
    st.dataframe(
        pd.DataFrame(
            {
                "input": sample.token_labels,
                "target": sample.class_names,
                "prediction": [names(p, cfg.vocab) for p in sample.predictions],
            }
        ).T,
    )
    attention = sample.trace.attention[:, 0].numpy()  # [layer, head, query, key]
    n_tokens = attention.shape[-1]
    st.plotly_chart(attention_overview(attention, n_tokens), key="train_overview")
    best_layer, best_head = _sharpest_head(attention)
    left, right = st.columns(2)
    layer = left.selectbox("Layer", range(cfg.num_layers), index=best_layer, key="train_layer")
    head = right.selectbox("Head", range(cfg.num_heads), index=best_head, key="train_head")
    st.plotly_chart(
        attention_head(
            attention[layer, head],
            sample.token_labels,
            n_tokens,
            title=f"Layer {layer}, head {head} on a {cfg.task} example",
        ),
        key="train_head_chart",
    )


def _comparison_results(job: TrainingJob) -> None:
    st.plotly_chart(
        training_charts.layer_grad_norms_chart(
            job.init_grad_norms, title="Gradient norm of each block at initialisation"
        ),
        key="train_init_grads",
    )
    st.caption(
        "Same batch, same seed, untrained weights: how much each block's gradient asks it to "
        "change at step 1."
    )


def render_training_view() -> None:
    """The whole Training view (all widget keys start with `train_`)."""
    st.header("Training lab")
    st.caption(
        "Train a tiny encoder on a toy task and watch its heads turn from noise into a pattern. "
        "**Pre vs post** trains pre-norm and post-norm (each with and without warmup) on the "
        "same data side by side."
    )
    _controls()
    job: TrainingJob | None = st.session_state.get(JOB_KEY)
    running = job is not None and job.running
    left, middle, right = st.columns(3)
    left.button(
        "Train",
        key="train_start",
        type="primary",
        disabled=running,
        on_click=_on_start,
        args=(single_job,),
    )
    middle.button(
        "Pre vs post",
        key="train_compare",
        disabled=running,
        on_click=_on_start,
        args=(comparison_job,),
    )
    right.button("Stop", key="train_stop", disabled=not running, on_click=_on_stop)
    if "train_error" in st.session_state:
        st.error(f"These settings cannot be trained: {st.session_state['train_error']}")
        return
    if job is None:
        st.info("Choose a task and an architecture, then press **Train**.")
        return
    st.fragment(_live_training, run_every=REFRESH_SECONDS if running else None)()
    if job.running:
        return
    _results_table(job)
    if job.init_grad_norms:
        _comparison_results(job)
        return
    result = next(iter(job.results.values()))
    st.session_state[RESULT_KEY] = result
    st.plotly_chart(training_charts.grad_norm_heatmap(result.history), key="train_grads")
    _attention_of(result)
