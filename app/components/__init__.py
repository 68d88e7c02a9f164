"""Streamlit hosts (Custom Components v2) of the library's browser-side modules (encoder/web)."""
