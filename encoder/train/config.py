"""What one training run is: its task, the model it trains (an EncoderConfig) and its optimiser.

cfg = TrainConfig(task="sort", steps=300).with_model(num_layers=6)   # encoder.train.trainer
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from encoder.core.config import DROPOUT_PLACES, EncoderConfig
from encoder.core.model import available_devices
from encoder.core.options import ARCHITECTURE_FIELDS
from encoder.core.said import Said
from encoder.tasks.tasks import get_task

# The encoder TrainConfig trains by default: two small blocks (its vocabulary, length and seed are
# the task's and the TrainConfig's, set there); EncoderConfig's defaults for the rest.
TRAIN_MODEL = EncoderConfig(
    vocab_size=10,
    max_len=8,
    num_layers=2,
    d_model=64,
    num_heads=4,
    d_ff=128,
    activation="relu",
    positional="learned",
)


@dataclass(frozen=True)
class TrainConfig:
    """Task, model and optimiser of one training run; invalid values raise ValueError.

    `model` is the encoder trained: its vocabulary and length are the task's (`vocab`,
    `seq_len`; a word task's vocabulary is its own, whatever `vocab` says) and its seed is `seed`
    (which seeds the data too), all three set here; its dropout rates act only while training.
    """

    task: str = "reverse"
    model: EncoderConfig = TRAIN_MODEL
    seq_len: int = 8
    vocab: int = 10
    batch_size: int = 128
    steps: int = 600
    lr: float = 3e-3
    warmup_steps: int = 0  # linear warmup from 0 to lr over this many steps
    decay: bool = True  # after warmup: cosine decay to 0 at the last step (False = constant lr)
    weight_decay: float = 0.01
    grad_clip: float = 1.0  # max global gradient norm; 0 = no clipping
    held_out_examples: int = 1000
    seed: int = 0
    device: str = "cpu"
    # Gradient checkpointing: keep only each block's input for backward and recompute the block
    # (less memory, about one more forward pass of time); the losses are the same.
    checkpoint_blocks: bool = False

    def __post_init__(self) -> None:
        self.validate()
        vocab = get_task(self.task).vocab_size(self.vocab)
        own = replace(self.model, vocab_size=vocab, max_len=self.seq_len, seed=self.seed)
        object.__setattr__(self, "model", own)  # frozen: set once, as it is made

    def with_model(self, **changes) -> TrainConfig:
        """This config with these changes to its model (EncoderConfig's fields)."""
        return replace(self, model=replace(self.model, **changes))

    def validate(self) -> None:
        get_task(self.task)
        whole = {
            "seq_len": (self.seq_len, 2),
            "vocab": (self.vocab, 2),
            "batch_size": (self.batch_size, 1),
            "steps": (self.steps, 1),
            "warmup_steps": (self.warmup_steps, 0),
            "held_out_examples": (self.held_out_examples, 1),
            "seed": (self.seed, 0),
        }
        for name, (value, least) in whole.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(
                    Said("{name}={value!r} must be a whole number", name=name, value=value)
                )
            if value < least:
                raise ValueError(
                    Said(
                        "{name}={value} must be at least {least}",
                        name=name,
                        value=value,
                        least=least,
                    )
                )
        positive = {"lr": self.lr}
        non_negative = {"weight_decay": self.weight_decay, "grad_clip": self.grad_clip}
        for name, value in {**positive, **non_negative}.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(
                    Said("{name}={value!r} must be a finite number", name=name, value=value)
                )
            if value < 0 or (name in positive and value == 0):
                if name in positive:
                    raise ValueError(
                        Said("{name}={value} must be positive", name=name, value=value)
                    )
                raise ValueError(Said("{name}={value} must be >= 0", name=name, value=value))
        if not isinstance(self.checkpoint_blocks, bool):
            raise ValueError(
                Said(
                    "{name}={value!r} must be True or False",
                    name="checkpoint_blocks",
                    value=self.checkpoint_blocks,
                )
            )
        if self.device not in available_devices():
            raise ValueError(
                Said(
                    "device={device!r} is not one of {devices}",
                    device=self.device,
                    devices=available_devices(),
                )
            )

    @property
    def num_classes(self) -> int:
        return get_task(self.task).num_classes(self.seq_len, self.model.vocab_size)


def trainable(architecture: EncoderConfig) -> EncoderConfig:
    """The model to train for `architecture` (e.g. the sidebar's, a checkpoint's): its
    architecture options and dropout rates on EncoderConfig's defaults; what a checkpoint adds
    beside them (e.g. MiniLM's embedding norm) is left out, as TrainConfig sets the vocabulary,
    length and seed."""
    dropout = ("dropout", *(f"{place}_dropout" for place in DROPOUT_PLACES))
    return EncoderConfig(
        **{name: getattr(architecture, name) for name in (*ARCHITECTURE_FIELDS, *dropout)}
    )
