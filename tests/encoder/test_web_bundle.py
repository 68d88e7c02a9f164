"""The build step that joins a browser module and what it imports into one file
(encoder.web.bundle), on small module graphs written here: what runs, in which order, how often,
with which values, and what it refuses. Runs the joined files in node: skipped without it,
except under CI=true."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from encoder.web.bundle import BundleError, joined
from tests.e2e.harness import missing


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node") or shutil.which("nodejs")
    if found is None:
        missing("node (Debian's nodejs)")
    return found


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")


def run(node: str, folder: Path, text: str) -> list:
    """The joined `text` run in node as an ES module: what it logged, as JSON."""
    path = folder / "out" / "joined.mjs"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text + "\nconsole.log(JSON.stringify(globalThis.seen));\n", encoding="utf-8")
    done = subprocess.run([node, str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


GRAPH = {
    # main imports b, c (three ways) and side; b imports c: c runs first and once
    "c.js": 'globalThis.seen = ["c"];\nconst twice = 2;\nexport const size = 3 * twice;\n'
    "export function named(x) {\n  return `c:${x}`;\n}\nexport default (x) => x + 1;\n",
    "lib/b.js": 'import { size } from "../c.js";\nglobalThis.seen.push("b");\n'
    "const twice = 20; // the same top-level name as c's: each file keeps its own\n"
    "const hidden = size + twice;\nexport { hidden as total, size };\n",
    "main.js": 'import { total, size } from "./lib/b.js";\nimport * as c from "./c.js";\n'
    'import {\n  named,\n} from "./c.js";\nimport "./side.js";\n'
    'globalThis.seen.push("main", total, size, named("x"), c.default(1), c.size);\n'
    "export const done = true;\n",
    "side.js": 'globalThis.seen.push("side");\n',
}


def test_a_graph_is_joined_dependencies_first_each_file_once_each_in_its_own_scope(
    node, tmp_path
) -> None:
    write(tmp_path, GRAPH)
    text = joined(tmp_path / "main.js")
    for name in ("c.js", "lib/b.js", "side.js", "main.js"):
        assert text.count(f"// ---- {name}\n") == 1
    seen = run(node, tmp_path, text + "\nglobalThis.seen.push(done);")
    assert seen == ["c", "b", "side", "main", 26, 6, "c:x", 2, 6, True]


def test_an_entry_given_as_text_resolves_from_its_place(node, tmp_path) -> None:
    write(tmp_path, GRAPH)
    entry = 'import { total } from "./lib/b.js";\nglobalThis.seen.push(total);\n'
    assert run(node, tmp_path, joined(tmp_path / "virtual.js", entry)) == ["c", "b", 26]


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (
            {
                "main.js": 'import "./a.js";\n',
                "a.js": 'import "./b.js";\n',
                "b.js": 'import "./a.js";\n',
            },
            "an import cycle: a.js -> b.js -> a.js",
        ),
        (
            {"main.js": 'import { nope } from "./a.js";\n', "a.js": "export const yes = 1;\n"},
            "imports nope from a.js, which does not export it",
        ),
        ({"main.js": 'import "./missing.js";\n'}, "missing.js, not a file"),
        ({"main.js": 'import { x } from "lodash";\n'}, "'lodash' is not a relative path"),
        ({"main.js": 'import "./a.js";\n', "a.js": "export let x = 1;\n"}, "a.js:1: cannot join"),
        ({"main.js": 'import "./a.js";\n', "a.js": 'export * from "./b.js";\n'}, "cannot join"),
        ({"main.js": "if (x) {\n  import('./a.js');\n  export const y = 1;\n}\n"}, "main.js:3"),
    ],
)
def test_what_cannot_be_joined_is_refused_naming_the_file(tmp_path, files, said) -> None:
    write(tmp_path, files)
    with pytest.raises(BundleError, match=said.replace(".", r"\.").replace("(", r"\(")):
        joined(tmp_path / "main.js")
