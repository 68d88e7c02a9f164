"""The sidebar's model source: random weights (the architecture controls describe the model),
the bundled MiniLM, an encoder found on this machine (app.sources' found models:
ENCODER_EXPLORER_MODELS and the local Hugging Face cache), or a model trained or uploaded in this
browser session (app.controls.session_models). Choosing a source other than random weights puts
its architecture into the controls' keys (trained weights fit no other); a model trained on a toy
task reads its task's sequences from the text box."""

from __future__ import annotations

import streamlit as st

from app.controls import model_files, session_models, setup_keys, state, url
from app.i18n import _, told
from app.settings import ARCHITECTURE_KEYS, LABELS, architecture_values, shown
from app.sources import (
    found_checkpoint,
    found_label,
    found_models,
    is_found_source,
    pretrained_config,
)
from app.user_text import literal
from encoder import EncoderConfig
from encoder.io.task_model import TaskModel


def source_config(source: str) -> EncoderConfig:
    """The architecture of a source other than random weights (a found model: loaded, for every
    session; ValueError saying why it cannot be)."""
    if source == "pretrained":
        return pretrained_config()
    if is_found_source(source):
        return found_checkpoint(source).encoder.cfg
    return session_models.find(source).cfg


def offered_sources(*extra: str) -> tuple[str, ...]:
    """The sources the Weights control offers: random, MiniLM, the models found on this
    machine that the loaders read (those too large here are offered and refused with a
    sentence), this session's models."""
    found = [source for source, model in found_models().items() if not model.problem]
    return (*setup_keys.SOURCES, *found, *session_models.session_models(), *extra)


def source_names() -> dict[str, str]:
    """How the Weights controls name every source they may offer, in this run's language (a
    dict made as the control is drawn: its format_func is also called after the run)."""
    return {source: shown(label) for source, label in source_labels().items()}


def source_labels() -> dict[str, str]:
    """How the Weights controls name every source they may offer (in English)."""
    models = session_models.session_models()
    return {
        **LABELS,
        **{source: found_label(model) for source, model in found_models().items()},
        **{model_id: model.label for model_id, model in models.items()},
    }


def session_task_model(source: str) -> TaskModel | None:
    model = session_models.session_models().get(source)
    return model.task_model if model is not None else None


def _reads(model: TaskModel, text: str) -> bool:
    """True when every line of `text` is a sequence `model` takes (and there is one)."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        for line in lines:
            model.check_text(line)
    except ValueError:
        return False
    return bool(lines)


def select_source(source: str) -> None:
    """Switch the model source (from a callback, or before the sidebar is drawn).

    Any source but random weights puts its architecture into the controls' keys (the link
    carries it; the sidebar says it in a sentence), and the user's own architecture comes back
    with random weights. A model trained on a toy task gets an example of its task in the text
    box (unless the text already suits it), and the user's own text comes back when they leave
    such models. A found model is loaded here; when it cannot be, the page says why and the
    weights are random again.
    """
    if is_found_source(source):
        try:
            source_config(source)
        except ValueError as error:
            _refuse_found(error)
            return
    state.put("source", source)
    if source == "random":
        state.update(state.pop("_saved_architecture") or {})
    else:
        if state.get("_saved_architecture") is None:
            state.put("_saved_architecture", {key: state.get(key) for key in ARCHITECTURE_KEYS})
        state.update(architecture_values(source_config(source)))
    task_model = session_task_model(source)
    if task_model is not None:
        if state.get("_saved_text") is None:
            state.put("_saved_text", state.get("text"))
        if not _reads(task_model, state.get("text")):
            state.put("text", task_model.example)
    elif state.get("_saved_text") is not None:
        state.put("text", state.pop("_saved_text"))


def _refuse_found(error: ValueError) -> None:
    """A found model could not be loaded: the page says why, and the weights are random."""
    state.put(
        "_source_error",
        _("{error}. The weights are random again.", error=literal(told(error).rstrip("."))),
    )
    select_source("random")


def use_architecture(values: dict[str, object]) -> None:
    """Put architecture widget values into the sidebar, with random weights (a callback, e.g.
    the Training view's suggestion or a training preset)."""
    if state.get("source") != "random":
        select_source("random")
    state.update(values)


def source_control(notices: list[str]) -> str:
    """The model source: random, MiniLM, a model found on this machine, or one of this
    session's models; then what else was found, and the files."""
    models = session_models.session_models()
    chosen = state.get("source")
    if is_found_source(chosen):
        try:
            source_config(chosen)  # loaded, or loaded again after another page's evicted it
        except ValueError as error:  # gone from the disk, unusable, no room now
            _refuse_found(error)
    elif chosen not in offered_sources():
        notices.append(
            _(
                "The model that was chosen is not in this browser session any more (a session "
                "keeps the last {count} models trained or uploaded in it, {limit}); back to "
                "random weights.",
                count=session_models.MAX_SESSION_MODELS,
                limit=session_models.kept_limit_text(),
            )
        )
        select_source("random")
    source = st.radio(
        _("Weights"),
        offered_sources(),
        key="source",
        persist_state="session",
        format_func=source_names().get,
        on_change=lambda: select_source(state.get("source")),
        help=_(
            "Models found on this machine: the checkpoint directories named in "
            "ENCODER_EXPLORER_MODELS and the local Hugging Face cache, with their family, size "
            "and whether they fit in this server's memory."
        ),
    )
    error = state.pop("_source_error")
    if error is not None:
        st.error(error)
    _found_list()
    if models:
        st.caption(
            _(
                "Models trained or uploaded here stay in this browser session only (the last "
                "{count}, {limit}); download one to keep it.",
                count=session_models.MAX_SESSION_MODELS,
                limit=session_models.kept_limit_text(),
            )
        )
    if source in models:
        model_files.download_button(models[source])
    model_files.upload_control(select_source)
    return source


def _found_list() -> None:
    """The models found on this machine that are not offered, each with why."""
    refused = [model for model in found_models().values() if model.problem]
    if not refused:
        return
    with st.expander(_("Found on this machine, not offered ({count})", count=len(refused))):
        st.caption(
            "\n".join(
                f"- {literal(model.name)} ({literal(model.family)}): {literal(told(model.problem))}"
                for model in refused
            )
        )


def b_source_control(notices: list[str]) -> str:
    """Setup B's Weights control: A's choices (A's own source too, even a refused found model);
    a B model that cannot be used now is said in `notices`, and B follows A's."""
    sources = offered_sources(state.get("source"))
    problem = _b_source_problem(sources)
    if problem:
        notices.append(problem)
        url.b_overrides().pop("source", None)
        url.show_setup_b()
    return st.radio(
        _("Weights (B)"),
        tuple(dict.fromkeys(sources)),
        key="b_source",
        persist_state="session",
        format_func=source_names().get,
        on_change=url.on_b_change,
        args=("source",),
    )


def _b_source_problem(sources: tuple[str, ...]) -> str:
    """Why setup B's model cannot be used now ("" when it can)."""
    b_source = state.get("b_source")
    if is_found_source(b_source):
        try:
            source_config(b_source)
        except ValueError as error:
            return _(
                "Setup B's model: {error}. B uses A's.", error=literal(told(error).rstrip("."))
            )
        return ""
    if b_source not in sources:
        return _("Setup B's model is not in this session any more; B uses A's.")
    return ""
