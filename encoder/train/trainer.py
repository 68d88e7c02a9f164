"""Train a small TransformerEncoder on a toy task, step by step, with metrics a class can watch.

    result = train(TrainConfig(task="reverse"))       # TrainConfig: encoder.train.config; or:
    trainer = Trainer(cfg); trainer.run(max_seconds=0.5); trainer.history; trainer.result()

Training batches come from one random stream (seeded by `seed`), the held-out set from another.
Every training sequence is checked against the held-out set as it is drawn; a held-out sequence the
model has trained on is left out of the held-out accuracy, so that number is always measured on
sequences never trained on. (The masked-word task holds out whole sentences of its corpus; its
accuracies count only the hidden words: targets elsewhere are IGNORE.)
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import nn

from encoder.core.capture import Trace
from encoder.core.options import placement_of
from encoder.io.task_model import TaskModel
from encoder.tasks.classifier import TokenClassifier, word_head_config
from encoder.tasks.masked import IGNORE
from encoder.tasks.tasks import Task, get_task
from encoder.train.config import TrainConfig

logger = logging.getLogger(__name__)

HELD_OUT_SEED_OFFSET = 1_000_003  # the held-out stream's seed is seed + this


@dataclass(frozen=True)
class StepMetrics:
    """What one optimiser step measured (loss and accuracy on that step's training batch)."""

    step: int  # 1-based
    loss: float
    accuracy: float  # fraction of tokens predicted right (masked task: of the hidden words)
    lr: float  # the learning rate this step used
    grad_norm: float  # global gradient norm before clipping
    layer_grad_norms: tuple[float, ...]  # gradient norm of each encoder block, before clipping

    def to_row(self) -> dict[str, float]:
        row = {k: v for k, v in asdict(self).items() if k != "layer_grad_norms"}
        row.update({f"grad_norm_layer_{i}": g for i, g in enumerate(self.layer_grad_norms)})
        return row


@dataclass
class TrainResult:
    config: TrainConfig
    model: TokenClassifier
    history: list[dict[str, float]]  # one StepMetrics.to_row() per step
    held_out_accuracy: float  # per token, on held-out sequences never trained on
    held_out_sequence_accuracy: float  # whole sequences entirely right (masked: every hidden word)
    held_out_examples: int  # how many held-out sequences were counted
    seconds: float  # time spent in training steps
    stopped: bool  # True if stopped before cfg.steps
    elapsed: list[float] = field(default_factory=list)  # after each step: the seconds so far

    @property
    def final_loss(self) -> float:
        return self.history[-1]["loss"] if self.history else math.nan

    def task_model(self) -> TaskModel:
        """The trained model with its tokenizer, task and record: what `save` writes and a page
        runs."""
        cfg = self.config
        accuracies = (self.held_out_accuracy, self.held_out_sequence_accuracy)
        token_accuracy, sequence_accuracy = (None if math.isnan(a) else a for a in accuracies)
        return TaskModel(
            classifier=self.model.eval(),
            tokenizer=get_task(cfg.task).tokenizer(cfg.model.vocab_size),
            task=cfg.task,
            seq_len=cfg.seq_len,
            training={
                "steps": len(self.history),
                "lr": cfg.lr,
                "warmup_steps": cfg.warmup_steps,
                "batch_size": cfg.batch_size,
                "seed": cfg.seed,
                "held_out_accuracy": token_accuracy,
                "held_out_sequence_accuracy": sequence_accuracy,
                "stopped": self.stopped,
            },
        )

    def summary(self) -> dict:
        return {
            "task": self.config.task,
            "norm": placement_of(self.config.model.norm_first),
            "layers": self.config.model.num_layers,
            "seq_len": self.config.seq_len,
            "vocab": self.config.model.vocab_size,
            "warmup": self.config.warmup_steps,
            "checkpoint_blocks": self.config.checkpoint_blocks,
            "dropout": self.config.model.dropout_rates(),
            "accuracy": round(self.held_out_accuracy, 4),
            "sequence_accuracy": round(self.held_out_sequence_accuracy, 4),
            "held_out_examples": self.held_out_examples,
            "final_loss": round(self.final_loss, 4),
            "steps": len(self.history),
            "seconds": round(self.seconds, 2),
            "stopped": self.stopped,
        }


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """The learning rate of 0-based `step`: linear warmup, then constant or cosine decay to 0."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    if not cfg.decay:
        return cfg.lr
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * progress))


def sequence_keys(inputs: torch.Tensor, vocab: int) -> torch.Tensor:
    """One int64 per sequence: its tokens read as a base-`vocab` number ([B, T] -> [B]).

    Past 2^63 the value wraps around, so two sequences may share a key; that can only make the
    held-out check drop a few extra held-out sequences, never count a trained-on one.
    """
    powers = vocab ** torch.arange(inputs.shape[-1], dtype=torch.int64)  # wraps like the sum
    return (inputs.to(torch.int64).cpu() * powers).sum(dim=-1)


def layer_grad_norms(model: TokenClassifier) -> list[float]:
    """The gradient norm of each encoder block's parameters together."""
    return [
        torch.linalg.vector_norm(
            torch.stack([p.grad.norm() for p in block.parameters() if p.grad is not None])
        ).item()
        for block in model.encoder.layers
    ]


def model_for(cfg: TrainConfig) -> TokenClassifier:
    """The untrained model of `cfg`: a masked-LM head for a word task, else a Linear."""
    words = get_task(cfg.task).reads_words
    return TokenClassifier(
        cfg.model, cfg.num_classes, word_head_config(cfg.model) if words else None
    )


def _loss_and_accuracy(
    model: TokenClassifier,
    task: Task,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    checkpoint_blocks: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cross-entropy and the accuracy over the counted targets (not IGNORE; the head reads
    only those positions: the masked task's 15%)."""
    mask = task.attention_mask(inputs)
    states = model.encoder(inputs, mask, checkpoint_blocks=checkpoint_blocks)  # [B, T, d]
    counted = targets != IGNORE  # [B, T]
    logits = model.head(states[counted])  # [counted, classes]
    loss = F.cross_entropy(logits, targets[counted])
    return loss, (logits.argmax(-1) == targets[counted]).float().mean()


class Trainer:
    """One training run that can be advanced a little at a time (the app trains in chunks)."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.task: Task = get_task(cfg.task)
        self.model = model_for(cfg).to(cfg.device)
        vocab = cfg.model.vocab_size
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
        )
        self.train_stream = torch.Generator().manual_seed(cfg.seed)
        held_out = torch.Generator().manual_seed(cfg.seed + HELD_OUT_SEED_OFFSET)
        self.held_out_inputs, self.held_out_targets = self.task.held_out(
            cfg.held_out_examples, cfg.seq_len, vocab, held_out
        )  # [N, T] each
        self.held_out_keys = sequence_keys(self.held_out_inputs, vocab)  # [N]
        self.held_out_seen = torch.zeros(cfg.held_out_examples, dtype=torch.bool)  # [N]
        self.history: list[dict[str, float]] = []
        self.seconds = 0.0
        self.elapsed: list[float] = []  # after each step: the training time so far (seconds)
        self.stop_requested = False

    @property
    def step(self) -> int:
        return len(self.history)

    @property
    def done(self) -> bool:
        return self.step >= self.cfg.steps or self.stop_requested

    def train_step(self) -> StepMetrics:
        """Draw a fresh batch, take one AdamW step, return what it measured."""
        started = time.perf_counter()
        cfg = self.cfg
        vocab = cfg.model.vocab_size
        inputs, targets = self.task.sample(cfg.batch_size, cfg.seq_len, vocab, self.train_stream)
        self.held_out_seen |= torch.isin(self.held_out_keys, sequence_keys(inputs, vocab))
        lr = learning_rate(cfg, self.step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.model.train()
        loss, accuracy = _loss_and_accuracy(
            self.model,
            self.task,
            inputs.to(cfg.device),
            targets.to(cfg.device),
            cfg.checkpoint_blocks,
        )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        layers = layer_grad_norms(self.model)
        clip = cfg.grad_clip if cfg.grad_clip > 0 else math.inf
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), clip).item()
        self.optimizer.step()
        metrics = StepMetrics(
            self.step + 1, loss.item(), accuracy.item(), lr, grad_norm, tuple(layers)
        )
        self.history.append(metrics.to_row())
        self.seconds += time.perf_counter() - started
        self.elapsed.append(self.seconds)
        return metrics

    def run(
        self,
        on_step: Callable[[StepMetrics], bool | None] | None = None,
        max_seconds: float | None = None,
    ) -> None:
        """Train until done, until on_step returns True (a stop), or for about max_seconds."""
        started = time.perf_counter()
        while not self.done:
            metrics = self.train_step()
            if on_step is not None and on_step(metrics):
                self.stop_requested = True
            if max_seconds is not None and time.perf_counter() - started >= max_seconds:
                return

    @torch.no_grad()
    def held_out_accuracy(self) -> tuple[float, float, int]:
        """(token accuracy, sequence accuracy, sequences counted) on never-trained-on sequences."""
        unseen = ~self.held_out_seen
        inputs = self.held_out_inputs[unseen].to(self.cfg.device)
        targets = self.held_out_targets[unseen].to(self.cfg.device)
        if len(inputs) == 0:
            return math.nan, math.nan, 0
        self.model.eval()
        logits = self.model(inputs, self.task.attention_mask(inputs))  # [N, T, classes]
        counted = targets != IGNORE  # [N, T]
        right = logits.argmax(-1) == targets  # [N, T]
        whole = (right | ~counted).all(-1).float().mean().item()
        return right[counted].float().mean().item(), whole, len(inputs)

    def result(self) -> TrainResult:
        token_accuracy, sequence_accuracy, counted = self.held_out_accuracy()
        self.model.eval()
        return TrainResult(
            config=self.cfg,
            model=self.model,
            history=list(self.history),
            held_out_accuracy=token_accuracy,
            held_out_sequence_accuracy=sequence_accuracy,
            held_out_examples=counted,
            seconds=self.seconds,
            stopped=self.step < self.cfg.steps,
            elapsed=list(self.elapsed),
        )


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run the block with `count` torch CPU threads (None: as they are), then restore them.

    Measured here on 2 cores with these tiny models: 2 threads take ~14 ms a step and 1 thread
    ~19 ms when the machine is idle, but when other programs (a browser drawing the live charts)
    busy the cores, 2 threads wait on each other and a step can take 20 times longer.
    """
    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train(
    cfg: TrainConfig, on_step: Callable[[StepMetrics], bool | None] | None = None
) -> TrainResult:
    """Train from scratch; on_step sees every step's metrics and may return True to stop."""
    logger.info("training started: %s task, %d steps, on %s", cfg.task, cfg.steps, cfg.device)
    trainer = Trainer(cfg)
    trainer.run(on_step)
    result = trainer.result()
    logger.info(
        "training %s after %d steps in %.1f s: %.3f held-out accuracy",
        "stopped" if result.stopped else "finished", len(result.history), result.seconds,
        result.held_out_accuracy,
    )  # fmt: skip
    return result


def gradient_norms_at_init(cfg: TrainConfig) -> list[float]:
    """Per-block gradient norms of the untrained model on the first training batch."""
    trainer = Trainer(replace(cfg, held_out_examples=1))
    inputs, targets = trainer.task.sample(
        cfg.batch_size, cfg.seq_len, cfg.model.vocab_size, trainer.train_stream
    )
    loss, _ = _loss_and_accuracy(
        trainer.model, trainer.task, inputs.to(cfg.device), targets.to(cfg.device)
    )
    loss.backward()
    return layer_grad_norms(trainer.model)


@dataclass
class SampleRun:
    """The trained model on one fresh sequence: tokens, answers and everything it computed."""

    inputs: list[int]
    targets: list[int]
    predictions: list[int]
    trace: Trace  # trace.attention: [layers, 1, heads, T, T]
    class_names: list[str] = field(default_factory=list)  # names of the targets, in order
    token_labels: list[str] = field(default_factory=list)  # names of the inputs, in order


def sample_trace(model: TokenClassifier, cfg: TrainConfig, seed: int = 0) -> SampleRun:
    """Run `model.encoder.trace` on one fresh sequence of cfg's task (drawn with `seed`; a
    sentence of the masked task without its padding)."""
    task, vocab = get_task(cfg.task), cfg.model.vocab_size
    inputs, targets = task.sample(1, cfg.seq_len, vocab, torch.Generator().manual_seed(seed))
    mask = task.attention_mask(inputs)
    if mask is not None:
        inputs, targets = inputs[:, : int(mask.sum())], targets[:, : int(mask.sum())]
    model.eval()
    trace = model.encoder.trace(inputs.to(cfg.device))
    with torch.no_grad():  # the head on the model's device, then the trace to the CPU for drawing
        predictions = model.head(trace.output).argmax(-1).cpu()  # [1, T]
    trace = trace.to("cpu")
    return SampleRun(
        inputs=inputs[0].tolist(),
        targets=targets[0].tolist(),
        predictions=predictions[0].tolist(),
        trace=trace,
        class_names=[task.class_name(c, vocab) if c != IGNORE else "" for c in targets[0].tolist()],
        token_labels=[task.input_name(t, vocab) for t in inputs[0].tolist()],
    )
