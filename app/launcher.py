"""`encoder-explorer`: serve the page from wherever the package is installed.

`encoder-explorer [streamlit options]` is `streamlit run <this package>/main.py [options]`, so
every option of `streamlit run` passes through, e.g. `encoder-explorer --server.port 8601`. It
works from any directory: the page's own Streamlit settings (upload limit, theme, toolbar) live
in app/.streamlit/config.toml, which Streamlit (>= 1.46) reads because it sits beside the main
script; options given here, and STREAMLIT_* environment variables, override them. A view opened
at its own path (/attention) is served with the app's root named as the server's address
(app.streamlit_private.name_the_root_on_view_paths), so that the browser does not look for the
server at the view's path first.
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamlit.web import cli

MAIN = Path(__file__).resolve().parent / "main.py"


def streamlit_argv(options: list[str]) -> list[str]:
    """The `streamlit run` command line that serves the page with these options."""
    return ["streamlit", "run", str(MAIN), *options]


def main() -> None:
    from app.streamlit_private import name_the_root_on_view_paths

    name_the_root_on_view_paths()
    sys.argv = streamlit_argv(sys.argv[1:])
    sys.exit(cli.main())


if __name__ == "__main__":
    main()
