"""The build step of the browser-side ES modules: a module and everything it imports, joined into
one self-contained file, because no host can follow an `import` (anywidget imports `_esm` from a
Blob, an offline file and the page's script inline their code). No npm, nothing downloaded.

The modules are written as real ES modules (`import { el } from "./shared.js"`, `export
function mount`), so editors, linters and `node --check` follow them. `joined(entry)` walks the
imports depth-first and emits each file once, dependencies first, each in a scope of its own:

    // ---- shared.js
    const __shared_js = (() => {
    ...the file, its `export` keywords dropped...
    return { el, colourScale };
    })();

and an `import { el, colourScale as scale } from "./shared.js"` becomes
`const { el, colourScale: scale } = __shared_js;`. The entry itself stays at the top level with
its exports, so the joined file is an ES module with the entry's exports (or, with none, a
plain script's body). Two files may therefore use the same top-level name. What this does not
read is an error at build time that names the file and the line: an import cycle, a name
imported that its file does not export, a specifier that is not relative, `export let` (a
binding that could change under its importer), `export *`, and an import not at a line's start.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# `import { a, b as c } from "./x.js";`, `import x from "./x.js";`, `import * as x from "./x.js";`
# and `import "./x.js";`, each from the start of a line (the braces may span lines)
IMPORT = re.compile(
    r"^import\s+(?:(?P<names>\{[^}]*\})|\*\s+as\s+(?P<space>[\w$]+)|(?P<default>[\w$]+))\s+"
    r'from\s+"(?P<from>[^"]+)"\s*;?[ \t]*$|^import\s+"(?P<bare>[^"]+)"\s*;?[ \t]*$',
    re.MULTILINE,
)
# what a file exports: a declaration's name, a list, or its default
EXPORT = re.compile(
    r"^export\s+(?:(?P<default>default)\s+(?:(?:async\s+)?function\*?\s+(?P<named>[\w$]+))?"
    r"|(?:async\s+)?function\*?\s+(?P<function>[\w$]+)|(?:const|class)\s+(?P<const>[\w$]+)"
    r"|(?P<list>\{[^}]*\})\s*;?[ \t]*$|(?P<other>\S+))",
    re.MULTILINE,
)
NAME = re.compile(r"[A-Za-z_$][\w$]*")
STRAY = re.compile(r"^[ \t]+(?:import|export)\s+[\w{*\"]", re.MULTILINE)


class BundleError(ValueError):
    """A module graph this build step cannot join, and why (the file and the line)."""


@dataclass(frozen=True)
class Module:
    """One file read: its path, its text with imports taken out, and what it exports
    ({exported name: local name})."""

    path: Path
    body: str
    exports: dict[str, str]
    imports: list[tuple[Path, dict[str, str] | str | None]]  # (file, {local: exported} | ns)


def _where(path: Path, text: str, at: int) -> str:
    return f"{path}:{text.count(chr(10), 0, at) + 1}"


def _names(braces: str, path: Path, where: str) -> list[tuple[str, str]]:
    """`{ a, b as c }` as [(a, a), (b, c)]: (the name outside, the name inside)."""
    pairs = []
    for part in braces.strip("{} \n\t").split(","):
        words = part.split()
        if not words:
            continue
        if len(words) == 1 or (len(words) == 3 and words[1] == "as"):
            pairs.append((words[0], words[-1]))
        else:
            raise BundleError(f"{where}: cannot read {part.strip()!r} in {path.name}")
    return pairs


def read_module(path: Path, text: str | None = None) -> Module:
    """`path` (or `text`, as if it were that file's) read as an ES module: its imports resolved,
    its exports found."""
    text = path.read_text(encoding="utf-8") if text is None else text
    stray = STRAY.search(text)
    if stray:
        raise BundleError(f"{_where(path, text, stray.start())}: an indented import or export")
    imports: list[tuple[Path, dict[str, str] | str | None]] = []
    for found in IMPORT.finditer(text):
        specifier = found["from"] or found["bare"]
        if not specifier.startswith(("./", "../")):
            where = _where(path, text, found.start())
            raise BundleError(f"{where}: {specifier!r} is not a relative path to a .js file")
        target = Path(os.path.normpath(path.parent / specifier))  # no disk: fast
        if found["names"]:
            names = _names(found["names"], path, _where(path, text, found.start()))
            imports.append((target, {inside: outside for outside, inside in names}))
        elif found["default"]:
            imports.append((target, {found["default"]: "default"}))
        else:
            imports.append((target, found["space"]))  # a namespace, or None: for its effects
    exports: dict[str, str] = {}
    for found in EXPORT.finditer(text):
        name = found["function"] or found["const"]
        if found["default"]:
            exports["default"] = found["named"] or "__default"
        elif name:
            exports[name] = name
        elif found["list"]:
            where = _where(path, text, found.start())
            exports |= {outside: inside for inside, outside in _names(found["list"], path, where)}
        else:
            where = _where(path, text, found.start())
            raise BundleError(f"{where}: cannot join `export {found['other']}` (use const)")
    body = IMPORT.sub("", text)
    unread = re.search(r"^import\b", body, re.MULTILINE)
    if unread:
        raise BundleError(f"{_where(path, body, unread.start())}: cannot read this import")
    return Module(path, body, exports, imports)


@cache
def _read_file(path: Path, stamp: tuple[int, int]) -> Module:
    """`path` read as a module, once while its size and modification time (`stamp`) hold."""
    return read_module(path)


def _scope_name(path: Path, root: Path) -> str:
    relative = path.relative_to(root) if path.is_relative_to(root) else Path(path.name)
    return "__" + re.sub(r"[^\w$]", "_", relative.as_posix())


def _bindings(module: Module, read: dict[Path, Module], scopes: dict[Path, str]) -> str:
    """The lines that stand for `module`'s imports, from its dependencies' scopes."""
    lines = []
    for target, names in module.imports:
        if names is None:
            continue
        if isinstance(names, str):
            lines.append(f"const {names} = {scopes[target]};")
            continue
        missing = sorted(set(names.values()) - set(read[target].exports))
        if missing:
            raise BundleError(
                f"{module.path}: imports {', '.join(missing)} from {target.name}, "
                "which does not export it"
            )
        pairs = (out if out == inside else f"{out}: {inside}" for inside, out in names.items())
        lines.append(f"const {{ {', '.join(pairs)} }} = {scopes[target]};")
    return "\n".join(lines)


def joined(entry: Path, text: str | None = None, root: Path | None = None) -> str:
    """`entry` (or `text`, written as if it were that file) and every file it imports, as one
    file's text (see the module's docstring); scopes are named by their path under `root`
    (default: the entry's folder)."""
    entry = entry.resolve()
    root = (root or entry.parent).resolve()
    read: dict[Path, Module] = {}
    order: list[Path] = []

    def visit(path: Path, chain: tuple[Path, ...]) -> None:
        if path in chain:
            cycle = " -> ".join(p.name for p in (*chain[chain.index(path) :], path))
            raise BundleError(f"an import cycle: {cycle}")
        if path in read:
            return
        if path == entry and text is not None:
            read[path] = module = read_module(path, text)
        elif not path.is_file():
            raise BundleError(f"{chain[-1] if chain else path}: imports {path}, not a file")
        else:
            found = path.stat()
            read[path] = module = _read_file(path, (found.st_size, found.st_mtime_ns))
        for target, _ in module.imports:
            visit(target, (*chain, path))
        order.append(path)

    visit(entry, ())
    scopes: dict[Path, str] = {}
    for index, path in enumerate(order):
        scope = _scope_name(path, root)
        scopes[path] = scope if scope not in scopes.values() else f"{scope}{index}"
    parts = []
    for path in order:
        module = read[path]
        bindings = _bindings(module, read, scopes)
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        if path == entry:
            parts.append(f"// ---- {name}\n{bindings}\n{module.body}")
            continue
        body = EXPORT.sub(_unexported, module.body)
        given = ", ".join(
            out if out == inside else f"{out}: {inside}" for out, inside in module.exports.items()
        )
        parts.append(
            f"// ---- {name}\nconst {scopes[path]} = (() => {{\n{bindings}\n{body}\n"
            f"return {{{f' {given} ' if given else ''}}};\n}})();"
        )
    return "\n".join(parts)


def _unexported(found: re.Match) -> str:
    """An export statement of a file joined into another: its declaration alone."""
    if found["list"]:
        return ""
    if found["default"]:
        return found[0].split(None, 2)[2] if found["named"] else "const __default ="
    return found[0].removeprefix("export").lstrip()
