"""Build it yourself: check a student's pieces of the encoder against the live model's tensors.

    from encoder import EncoderConfig, exercises
    lab = exercises.setup(EncoderConfig(d_model=64, num_heads=4), ["The cat sat.", "Dogs bark."])
    exercises.check_softmax(my_softmax, lab)      # prints passed, or where it first differs

`setup` takes the bundled MiniLM (default), random weights of any EncoderConfig, a checkpoint
directory or a model; the student's functions get NumPy arrays (backend="torch": tensors). Each
checker's docstring gives the shapes its function takes and returns. Student code runs here, in
the student's own Python, never on the app's server: a failure names the student's own line, a
result in a coarser dtype than the model's (float16, integers) says so, and a function still
running after `lab.time_limit` seconds (default 30) is stopped with a message.
"""

from encoder.exercises.checkers import (
    check_block,
    check_feed_forward,
    check_head_attention,
    check_layer_norm,
    check_multi_head_attention,
    check_padding_mask,
    check_positions,
    check_rms_norm,
    check_scores,
    check_softmax,
)
from encoder.exercises.lab import Lab, setup
from encoder.exercises.result import CheckResult

__all__ = [
    "CheckResult",
    "Lab",
    "check_block",
    "check_feed_forward",
    "check_head_attention",
    "check_layer_norm",
    "check_multi_head_attention",
    "check_padding_mask",
    "check_positions",
    "check_rms_norm",
    "check_scores",
    "check_softmax",
    "setup",
]
