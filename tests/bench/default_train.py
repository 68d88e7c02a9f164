"""What the Training view's Train trains with every control at its default, trained to the end in
one thread (as the view trains): held-out accuracy, whole sequences, final loss, seconds, and
the stall sentence if the run said one.

    python tests/bench/default_train.py pretrained 0     # SOURCE (random | pretrained) SEED
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import torch

from app.controls.setup_keys import DEFAULTS
from app.controls.sidebar import random_config
from app.sources import pretrained_config
from app.views.training.plan import plan
from encoder.train.config import TrainConfig, trainable
from encoder.train.stall import stalled
from encoder.train.trainer import Trainer


def main(source: str, seed: int) -> dict:
    torch.set_num_threads(1)
    architecture = pretrained_config() if source == "pretrained" else random_config(DEFAULTS)
    planned = plan(TrainConfig(model=trainable(architecture)), architecture, 1, 1.0)
    cfg = replace(planned.cfg, seed=seed)
    trainer, said_at = Trainer(cfg), None
    while not trainer.done:
        trainer.train_step()
        if said_at is None and stalled(cfg, trainer.history):
            said_at = trainer.step
    result = trainer.result()
    return {
        "source": source,
        "seed": seed,
        "steps": cfg.steps,
        "estimate_s": round(planned.seconds),
        "held_out": round(result.held_out_accuracy, 4),
        "whole_sequences": round(result.held_out_sequence_accuracy, 4),
        "final_loss": round(result.final_loss, 4),
        "seconds": round(result.seconds, 1),
        "stall_said_at_step": said_at,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], int(sys.argv[2]))))
