"""The Training view, in three rooms: lab.py (the controls, the buttons and the live run; its
`draw` and `KEYS` are the view's), plan.py (how long each job would take here, and what each
button trains where that is over the time limit) and results.py (a finished job's results)."""

from app.views.training.lab import KEYS, draw

__all__ = ["KEYS", "draw"]
