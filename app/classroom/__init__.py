"""A class that follows its teacher: the shared store (SQLite by default, Redis when configured)
and the student link's QR code. No Streamlit here: the page builds on it."""
