"""What it is for, in three rooms: view.py (the sentence embeddings' matrix and token shares; its
`draw` and `KEYS` are the view's), search.py (a corpus searched by meaning) and masked.py (the
masked word and its lens)."""

from app.views.meaning.view import KEYS, draw

__all__ = ["KEYS", "draw"]
