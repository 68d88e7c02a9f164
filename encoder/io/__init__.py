"""Text and files in and out: tokenizing, checkpoint files read as if from a stranger, BERT-style
and our own checkpoints, and models trained on a toy task."""
