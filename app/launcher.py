"""`encoder-explorer`: serve the page from wherever the package is installed.

`encoder-explorer [streamlit options]` is `streamlit run <this package>/main.py [options]`, so
every option of `streamlit run` passes through, e.g. `encoder-explorer --server.port 8601`. It
works from any directory: the page's own Streamlit settings (upload limit, theme, toolbar) live
in app/.streamlit/config.toml, which Streamlit (>= 1.46) reads because it sits beside the main
script; options given here, and STREAMLIT_* environment variables, override them.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

MAIN = Path(__file__).resolve().parent / "main.py"


def main() -> None:
    sys.argv = ["streamlit", "run", str(MAIN), *sys.argv[1:]]
    runpy.run_module("streamlit", run_name="__main__")  # `python -m streamlit`


if __name__ == "__main__":
    main()
