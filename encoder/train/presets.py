"""Named training setups for the Training view and the command line: the fields that differ from
TrainConfig's defaults. (The sidebar's architecture presets are app/assets/presets.json.)"""

from __future__ import annotations

TRAINING_PRESETS: dict[str, dict] = {
    "default": {},
    # Measured here (seeds 0, 1; 200 steps): pre-norm reaches 97-98% held-out accuracy, post-norm
    # stays at chance (loss ln 10 = 2.30); with 50 warmup steps post-norm learns, but slower
    # (66-82%); with 100 warmup steps it started learning, then fell back to chance at full lr.
    "pre vs post: deep, high lr": dict(
        task="sort", num_layers=12, d_ff=256, lr=1e-2, decay=False, steps=200
    ),
    "pre vs post: 6 layers, lr 1e-3": dict(task="sort", num_layers=6, d_ff=256, lr=1e-3, steps=300),
}
