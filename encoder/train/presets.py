"""Named training setups for the Training view and the command line: the fields that differ from
TrainConfig's defaults. (The sidebar's architecture presets are app/assets/presets.json.)"""

from __future__ import annotations

TRAINING_PRESETS: dict[str, dict] = {
    "default": {},
    # The lesson's race: within the Training view's time limit (about 1.5 min by the estimate,
    # 45 s measured here for its four runs). Measured here (seeds 0, 1; 160 steps): pre-norm
    # reaches 97% held-out accuracy, post-norm stays at chance (10%: loss ln 10 = 2.30); with 40
    # warmup steps post-norm learns (84-91%). (With 12 layers and 200 steps of 128 sequences, the
    # same story took 5 min by the estimate: over the limit.)
    "pre vs post: deep, high lr": dict(
        task="sort", num_layers=6, d_ff=256, lr=1e-2, decay=False, steps=160, batch_size=64
    ),
    "pre vs post: 6 layers, lr 1e-3": dict(task="sort", num_layers=6, d_ff=256, lr=1e-3, steps=300),
    # BERT vs ModernBERT (the button of that name): the race's size, on sequences of 16 so that
    # the local window of 8 masks half the query-key pairs of its local layers.
    "BERT vs ModernBERT: 6 layers, sequences of 16": dict(
        task="sort", num_layers=6, d_ff=256, seq_len=16, lr=3e-3, steps=160, batch_size=64
    ),
}
