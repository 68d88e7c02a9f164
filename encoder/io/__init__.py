"""Text and files in and out: tokenizing, checkpoint files read as if from a stranger, the
encoder families read from Hugging Face checkpoints (families/), our own checkpoints, and models
trained on a toy task."""
