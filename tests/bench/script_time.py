"""How long each view's script runs on the server for a rerun after a text change, without a
browser: the Python side of a rerun, less noisy here than page_speed.py's whole-page times.

Run from the repo root: `python tests/bench/script_time.py [--views LayerNorm,Activations]
[--reruns 6] [--lang es] [--open attention_metrics,ln_gains]`. Opens each view on MiniLM in
Streamlit's AppTest (no server, no browser), in the page's language --lang, with the sections
keyed --open opened, warms it with 3 texts, then times --reruns reruns, each after a new text
(the forward pass of that text included), and prints the median and min-max of each view in
milliseconds.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

from tests.app.helpers import assert_no_exception, open_page  # noqa: E402

VIEWS = (
    "Lesson", "Tokens", "Attention", "Attention steps", "LayerNorm", "Activations", "Shapes",
    "Heads across a corpus", "Exercises", "Export",
)  # fmt: skip
WARM_UP = 3
TEXT = "{} the quick brown fox jumps over the lazy dog near the river."


def rerun_seconds(
    view: str, reruns: int, lang: str = "en", opened: tuple[str, ...] = ()
) -> list[float]:
    """The view's reruns after a text change, in `lang`, its sections keyed `opened` open (the
    others' keys are ignored), each in seconds."""
    page = open_page(source="pretrained", view=view, lang=lang)
    for key in opened:
        page.session_state[key] = True
    seconds = []
    for k in range(WARM_UP + reruns):
        page.session_state["text"] = TEXT.format(f"{view} {k}")
        start = time.perf_counter()
        page.run()
        if k >= WARM_UP:
            seconds.append(time.perf_counter() - start)
        assert_no_exception(page)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--views", default=",".join(VIEWS), help="comma-separated view titles")
    parser.add_argument("--reruns", type=int, default=6, help="timed reruns per view")
    parser.add_argument("--lang", default="en", help="the page's language (its URL's lang)")
    parser.add_argument("--open", default="", help="comma-separated keys of sections to open")
    args = parser.parse_args()
    opened = tuple(key for key in args.open.split(",") if key)
    logging.disable(logging.WARNING)  # AppTest's "missing ScriptRunContext" lines
    print(f"| view | rerun after a text change, ms: median (min-max) of {args.reruns} |")
    print("| --- | --- |")
    for view in args.views.split(","):
        ms = [1000 * s for s in rerun_seconds(view, args.reruns, args.lang, opened)]
        print(f"| {view} | {statistics.median(ms):.0f} ({min(ms):.0f}-{max(ms):.0f}) |")


if __name__ == "__main__":
    main()
