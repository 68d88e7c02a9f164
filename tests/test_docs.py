"""README.md holds the two commands CI runs, and every relative link in it and in docs/ reaches a
file in the repo."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)[^)]*\)")  # [text](target) and ![alt](target)


def documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_the_readme_holds_the_start_command_and_the_test_command_ci_runs() -> None:
    readme = README.read_text(encoding="utf-8")
    ci_command = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci_command.startswith("pip install torch==") and ci_command in readme
    start = "pip install torch==2.13.0 && pip install -e . && streamlit run app/main.py"
    assert start in readme


def test_every_relative_link_reaches_a_file() -> None:
    for document in documents():
        for target in LINK.findall(document.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (document.parent / target).exists(), f"{document.name} links to {target}"
