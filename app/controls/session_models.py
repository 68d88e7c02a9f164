"""Models trained or uploaded in this browser session: model sources beside random and MiniLM.

They live in the session's ModelShelf, kept in its state (app.controls.state), so each browser
session sees only its own. Each has a unique id (a random UUID, never a hash of its tensors) that
names it as a model source: in the source control, in the URL, and in the keys of the shared run
cache (app.run_cache), where no other session can ever ask for the same id.

They count in the server's memory budget (app.memory.CACHE) as what their session keeps: their
real bytes (parameters and buffers of the encoder and of a task model's classifier, and the
tokenizer), never evicted by other sessions. A session keeps at most MAX_SESSION_MODELS models
and SESSION_BUDGET bytes (ENCODER_EXPLORER_SESSION_BUDGET, a training in progress included): to
make room for a new one its oldest models go first, never those in use (setup A's source and
setup B's). What cannot fit is refused before it is loaded or trained, with a message that says
what it needs and what the limit is. The models leave the budget and memory when their session
ends (app.session_end), or when the shelf itself is freed (a finalizer).
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from tokenizers import Tokenizer

from app import session_end
from app.controls import state
from app.i18n import _
from app.memory import (
    CACHE,
    DEFAULT_SESSION_BUDGET,
    SESSION_BUDGET_ENV,
    ByteBudgetCache,
    MemoryRefused,
    budget_from_env,
    size_text,
    tensor_bytes,
)
from app.sources import (
    ModelSource,
    built_in,
    checkpoint_bytes,
    found_source,
    is_found_source,
)
from encoder.core import block
from encoder.core.config import EncoderConfig
from encoder.core.lm_head import MaskedLMHead
from encoder.core.model import TransformerEncoder
from encoder.core.options import placement_of
from encoder.core.said import Said
from encoder.inspect.limits import BYTES_PER_VALUE, estimate_activation_bytes
from encoder.io.checkpoint_files import (
    checkpoint_archive,
)
from encoder.io.checkpoints import Checkpoint
from encoder.io.task_model import TaskModel
from encoder.train.config import TrainConfig
from encoder.train.trainer import TrainResult

log = logging.getLogger(__name__)
MAX_SESSION_MODELS = 8
# Bytes a session may keep (read at call time, so tests can lower it; see app.memory)
SESSION_BUDGET = budget_from_env(SESSION_BUDGET_ENV, DEFAULT_SESSION_BUDGET)
PREFIXES = ("trained-", "uploaded-")
# Training holds each model's weights, gradients and AdamW's two moments; and autograd keeps about
# every intermediate of a batch (what a trace captures) twice over, for the backward pass.
TRAINING_COPIES = 4
TRAINING_ACTIVATION_COPIES = 2


@dataclass(frozen=True, eq=False)
class SessionModel:
    """One model source of this session: the encoder every view reads, its tokenizer, and for a
    model trained on a toy task, the whole TaskModel (task, length, classifier head)."""

    id: str
    label: str
    encoder: TransformerEncoder  # eval mode, on the CPU, never changed
    tokenizer: Tokenizer
    task_model: TaskModel | None  # None for an uploaded BERT-style checkpoint
    file_name: str  # the download's name, without ".zip"
    nbytes: int = 0  # what it holds in memory (checkpoint_bytes), counted in the budget
    mlm_head: MaskedLMHead | None = None  # its masked-LM head, counted in nbytes
    no_head: Said | None = None  # why it has none (the checkpoint's loader says)

    @property
    def cfg(self) -> EncoderConfig:
        return self.encoder.cfg

    @property
    def source(self) -> ModelSource:
        """This model as a source of runs: its own tokenizer, encoder and task."""
        check = self.task_model.check_text if self.task_model is not None else None
        return ModelSource(
            self.id, self.tokenizer, check, self.encoder, self.task_model,
            mlm_head=self.mlm_head, no_head=self.no_head,
        )  # fmt: skip

    def archive(self) -> bytes | None:
        """The checkpoint as a zip (config.json, model.safetensors, tokenizer.json); None for an
        uploaded BERT-style checkpoint, whose files the user already has."""
        if self.task_model is None:
            return None
        return checkpoint_archive(self.task_model.files())


def trained_model_bytes(cfg: TrainConfig) -> int:
    """The estimate of a model trained with `cfg`, from the config: the encoder's parameters
    (encoder.core.block) and the classifier head (d_model x classes, and a bias per class)."""
    head = (cfg.model.d_model + 1) * cfg.num_classes
    return BYTES_PER_VALUE * (block.parameters(cfg.model) + head)


def training_bytes(cfg: TrainConfig, runs: int) -> int:
    """The estimate of what training `runs` runs of `cfg` at once holds while it trains."""
    activations = estimate_activation_bytes(cfg.model, cfg.batch_size, cfg.seq_len)
    per_run = TRAINING_COPIES * trained_model_bytes(cfg) + TRAINING_ACTIVATION_COPIES * activations
    return runs * per_run


def is_session_source(source: str) -> bool:
    """True for a source id of this module's kind (whether or not this session has it)."""
    return source.startswith(PREFIXES)


class ModelShelf(Mapping[str, SessionModel]):
    """This session's models by id, oldest first, counted in the memory budget as what this
    session keeps. Dropping a model, or all of them (`release`, when the session ends), takes
    its bytes out of the budget; so does the shelf's finalizer, when Streamlit frees it."""

    def __init__(self, cache: ByteBudgetCache = CACHE) -> None:
        self._models: dict[str, SessionModel] = {}
        self._cache = cache
        self.owner = f"session-{uuid.uuid4().hex}"  # what this session keeps, in the cache
        weakref.finalize(self, cache.release, self.owner)
        session_end.on_end(self.release)

    def __getitem__(self, model_id: str) -> SessionModel:
        return self._models[model_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._models)

    def __len__(self) -> int:
        return len(self._models)

    @property
    def nbytes(self) -> int:
        """What this session keeps in the budget: its models and a training in progress."""
        return self._cache.kept(self.owner)

    def drop(self, model_id: str) -> None:
        del self._models[model_id]
        self._cache.release(tags=[model_id])

    def release(self) -> None:
        """Let every model and a training go (the session has ended)."""
        if self._models:
            log.info("session ended: its %d model(s) released", len(self._models))
        self._models.clear()
        self._cache.release(self.owner)

    def plan_room(
        self, what: str, kept: int, peak: int, in_use: Iterable[str], protect: Iterable[str] = ()
    ) -> list[SessionModel]:
        """This session's models to drop, oldest first, but none in use or protected, for room
        for `kept` more bytes this session keeps (within SESSION_BUDGET and the server's share
        for what sessions keep) and `peak` bytes while they are built (within the server's
        budget, once shared entries are evicted); MemoryRefused saying why when even dropping
        every one of them is not enough. Changes nothing."""
        cap = SESSION_BUDGET
        if kept > cap:
            log.info("refused: %s needs %s, over %s", what, size_text(kept), SESSION_BUDGET_ENV)
            raise MemoryRefused(
                _(
                    "{what} needs about {size} of memory; a browser session may keep at most "
                    "{limit} of models on this server.",
                    what=what,
                    size=size_text(kept),
                    limit=size_text(cap),
                )
            )
        fixed = set(in_use) | set(protect)
        droppable = [model for model_id, model in self._models.items() if model_id not in fixed]
        can_free = sum(model.nbytes for model in droppable)
        own = self.nbytes
        over_cap = own + kept - cap
        if over_cap > can_free:
            log.info("refused: %s needs %s, over %s", what, size_text(kept), SESSION_BUDGET_ENV)
            raise MemoryRefused(
                _(
                    "{what} needs about {size} of memory; this session keeps {own} of models "
                    "({fixed} of them in use or being trained) and may keep at most {limit} on "
                    "this server. Choose other weights for setups A and B to let their models "
                    "go.",
                    what=what,
                    size=size_text(kept),
                    own=size_text(own),
                    fixed=size_text(own - can_free),
                    limit=size_text(cap),
                )
            )
        over_server, why = self._cache.make_room(
            peak, what, kept=kept, kept_by=self.owner, check_only=True
        )
        if over_server > can_free:
            raise MemoryRefused(why)
        needed, dropped = max(over_cap, over_server), []
        for model in droppable:
            if needed <= 0:
                break
            dropped.append(model)
            needed -= model.nbytes
        return dropped

    def make_room(
        self, what: str, kept: int, peak: int, in_use: Iterable[str], protect: Iterable[str] = ()
    ) -> None:
        """Drop what plan_room says and evict shared entries of the cache for the room (call it
        under `self._cache.building()`)."""
        for model in self.plan_room(what, kept, peak, in_use, protect):
            self.drop(model.id)
        self._cache.make_room(peak, what, kept=kept, kept_by=self.owner)

    def add(
        self,
        kind: str,
        label: Callable[[Checkpoint], str],
        load: Callable[[], Checkpoint],
        file_name: str,
        kept: int,
        peak: int,
        in_use: Iterable[str],
        protect: Iterable[str] = (),
    ) -> str:
        """Load a model (kind "trained" or "uploaded") and keep it, within the budgets, named
        `label(checkpoint)`; its new id. `kept`: the estimate of its bytes; `peak`: of the memory
        loading takes. Past MAX_SESSION_MODELS the oldest models go, never those `in_use` nor
        `protect`ed."""
        what = _("This upload") if kind == "uploaded" else _("This model")
        in_use, protect = tuple(in_use), tuple(protect)
        with self._cache.building():
            self.make_room(what, kept, peak, in_use, protect)
            checkpoint = load()
            nbytes = checkpoint_bytes(checkpoint)
            if nbytes > kept:  # the estimate was short: check again with the real size
                self.make_room(what, nbytes, nbytes, in_use, protect)
            model_id = f"{kind}-{uuid.uuid4().hex}"
            self._models[model_id] = SessionModel(
                id=model_id,
                label=self._unique(label(checkpoint)),
                encoder=checkpoint.encoder,
                tokenizer=checkpoint.tokenizer,
                task_model=checkpoint.task_model,
                file_name=file_name,
                nbytes=nbytes,
                mlm_head=checkpoint.mlm_head,
                no_head=checkpoint.no_head,
            )
            self._cache.keep(("session model", model_id), nbytes, self.owner, tag=model_id)
        fixed = {*in_use, *protect, model_id}
        for old in [key for key in self._models if key not in fixed]:
            if len(self._models) <= MAX_SESSION_MODELS:
                break
            self.drop(old)
        return model_id

    def start_training(self, what: str, nbytes: int, in_use: Iterable[str]) -> None:
        """Count a training that holds `nbytes` until finish_training (MemoryRefused when it
        cannot fit: before anything is built)."""
        with self._cache.building():
            self.make_room(what, nbytes, nbytes, in_use)
            self._cache.keep(("training", self.owner), nbytes, self.owner, tag=self._training)

    def keep_trained(
        self, results: dict[str, TrainResult], in_use: Iterable[str]
    ) -> tuple[dict[str, str], str]:
        """Each finished run's model kept as a model source, as far as it fits: ({run name: its
        id}, why the others were not kept, or ""). The training's count becomes its models' at
        once (no other session in between); a model that is not kept stays counted with the
        training, since the job still holds it, until the next training starts or the session
        ends."""
        kept: dict[str, str] = {}
        refusals, left = [], 0
        with self._cache.building():
            self._cache.release(tags=[self._training])
            for name, result in results.items():
                try:
                    kept[name] = self._add_trained(result, in_use, protect=kept.values())
                except MemoryRefused as refusal:
                    refusals.append(
                        _(
                            "The {name} run's model was not kept: {refusal}",
                            name=name,
                            refusal=refusal,
                        )
                    )
                    left += tensor_bytes([result.model])
            if left:
                self._cache.keep(("training", self.owner), left, self.owner, tag=self._training)
        return kept, " ".join(refusals)

    def _add_trained(
        self, result: TrainResult, in_use: Iterable[str], protect: Iterable[str]
    ) -> str:
        model = result.task_model()
        cfg = model.cfg
        placement = placement_of(cfg.norm_first)
        file_name = f"{model.task}-{placement}-norm-{cfg.num_layers}x{cfg.num_heads}"
        checkpoint = Checkpoint(model.encoder, model.tokenizer, model, mlm_head=model.mlm_head)
        nbytes = checkpoint_bytes(checkpoint)  # it exists already: loading it takes nothing more
        return self.add(
            "trained",
            lambda _checkpoint: trained_label(model),
            lambda: checkpoint,
            file_name,
            kept=nbytes,
            peak=nbytes,
            in_use=in_use,
            protect=protect,
        )

    @property
    def _training(self) -> str:
        return f"training-{self.owner}"

    def _unique(self, label: str) -> str:
        taken = {model.label for model in self._models.values()}
        if label not in taken:
            return label
        count = 2
        while f"{label} ({count})" in taken:
            count += 1
        return f"{label} ({count})"


def session_models() -> ModelShelf:
    """This session's models by id, oldest first."""
    return state.keep("_session_models", ModelShelf)


def find(source: str) -> SessionModel | None:
    """The session model `source` names; None for "random" and "pretrained".

    ValueError when it names a model this session does not have (dropped, or another session's).
    """
    if not is_session_source(source):
        return None
    model = session_models().get(source)
    if model is None:
        raise ValueError(
            _(
                "That model is not in this browser session any more: a session keeps the last "
                "{count} models trained or uploaded in it, {limit}.",
                count=MAX_SESSION_MODELS,
                limit=kept_limit_text(),
            )
        )
    return model


def resolve(source: str, cfg: EncoderConfig) -> ModelSource:
    """The ModelSource `source` names with `cfg`: this session's model, a model found on disk,
    or random weights or MiniLM (ValueError when it names a model this session does not have,
    or a found model that cannot be loaded now)."""
    if is_found_source(source):
        return found_source(source)
    model = find(source)
    return built_in(source, cfg) if model is None else model.source


def kept_limit_text() -> str:
    return _("at most {size} on this server", size=size_text(SESSION_BUDGET))


def trained_label(model: TaskModel) -> str:
    """TaskModel.label(), plus the warmup when there was one (the comparison's variants)."""
    warmup = model.training.get("warmup_steps")
    return model.label() + (f", warmup {warmup}" if warmup else "")
