"""The layout keeps its promises: imports run one way, one module owns the session's state, every
widget key is registered, and loading a checkpoint never imports the trainer."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from app import registry  # noqa: F401  (declares every session key with the state module)
from app.controls import state
from tests.app.helpers import assert_no_exception, open_page

ROOT = Path(__file__).resolve().parent.parent
# Each subpackage of the library and the others it may import: the layers, bottom up. The core
# is the encoder; the task models' pieces sit below io, so that loading never imports the
# trainer; live measurement reads the inspect tables; the command line is the top.
LIBRARY_LAYERS = {
    "core": (),
    "tasks": ("core",),
    "io": ("core", "tasks"),
    "inspect": ("core",),
    "measure": ("core", "inspect"),
    "web": ("core", "inspect"),
    "train": ("core", "tasks", "io", "inspect", "measure"),
    "cli": ("core", "tasks", "io", "inspect", "measure", "train"),
    "notebook": ("core", "tasks", "io", "inspect", "web"),
    "exercises": ("core", "tasks", "io", "inspect"),
}
VALUE_WIDGETS = (
    "selectbox",
    "slider",
    "select_slider",
    "radio",
    "text_area",
    "text_input",
    "toggle",
    "number_input",
    "segmented_control",
)


def imports_of(path: Path) -> set[str]:
    """Every module a file imports (absolute names), at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def files(folder: str) -> list[Path]:
    found = sorted((ROOT / folder).rglob("*.py"))
    assert found, folder
    return found


def test_the_library_never_imports_the_app() -> None:
    for path in files("encoder"):
        assert not any(name.split(".")[0] == "app" for name in imports_of(path)), path


def test_each_library_subpackage_imports_only_the_layers_below_it() -> None:
    subpackages = {p.name for p in (ROOT / "encoder").iterdir() if (p / "__init__.py").is_file()}
    assert subpackages == set(LIBRARY_LAYERS)
    for subpackage, below in LIBRARY_LAYERS.items():
        for path in files(f"encoder/{subpackage}"):
            for name in imports_of(path):
                parts = name.split(".")
                if parts[0] == "encoder":
                    where = f"encoder/{subpackage}/{path.name} imports {name}"
                    assert len(parts) > 1 and parts[1] in (subpackage, *below), where


def test_only_python_m_encoder_imports_the_command_line() -> None:
    for path in [*files("encoder"), *files("app")]:
        if path.parent.name != "cli" and path != ROOT / "encoder" / "__main__.py":
            cli = [name for name in imports_of(path) if name.startswith("encoder.cli")]
            assert not cli, f"{path} imports {cli}"


def test_charts_import_no_streamlit() -> None:
    for path in files("app/charts"):
        assert not any(name.split(".")[0] == "streamlit" for name in imports_of(path)), path


def test_no_test_module_imports_another_test_module() -> None:
    """Tests share helpers through helper modules (tests/shared.py, tests/encoder/helpers.py,
    tests/app/helpers.py, tests/e2e/harness.py, ...) and conftest fixtures, never by importing a
    test module."""
    for path in files("tests"):
        for name in imports_of(path):
            parts = name.split(".")
            if parts[0] == "tests":
                borrowed = [p for p in parts[1:] if p.startswith("test_") or p == "conftest"]
                assert not borrowed, f"{path.relative_to(ROOT)} imports {name}"


def test_only_the_state_module_touches_the_session_state() -> None:
    for path in [*files("app"), ROOT / "tests" / "bench" / "floor_page.py"]:
        touches = "session_state" in path.read_text(encoding="utf-8")
        assert touches == (path == ROOT / "app" / "controls" / "state.py"), path


# a view's parts beside it (step_*: Attention steps' steps and tables); a view that is a package
# (app/views/training/) holds its parts inside
VIEW_PARTS = ("step_inputs", "step_tables", "step_outputs")
SESSION_MODULES = ("controls", "session_end", "streamlit_private")  # what reads a session


def app_imports(path: Path) -> set[str]:
    return {name for name in imports_of(path) if name.split(".")[0] == "app"}


def test_views_import_neither_the_controls_nor_another_view() -> None:
    """A view imports the page's shared vocabulary (app.page), never another view: what two views
    or a view and the lesson both use lives in app.page."""
    for path in files("app/views"):
        package = path.parent.name if path.parent.name != "views" else None
        own = path.stem.split("_")[0]  # a view and its parts: steps.py and step_tables.py
        for name in app_imports(path):
            assert not name.startswith(("app.controls", "app.registry", "app.lesson")), (
                f"{path.name} imports {name}"
            )
            if name.startswith("app.views."):
                other = name.split(".")[2]
                assert other == package or (
                    other.startswith(own[:4]) and (other in VIEW_PARTS or path.stem in VIEW_PARTS)
                ), f"{path.name} imports another view, {name}"


def test_nothing_outside_the_views_but_the_registry_imports_a_view() -> None:
    """The page reaches the views through the registry; what a view and the page's session side
    both need (the Training view's lab: app.page.training) lives below the views."""
    for path in files("app"):
        if "views" in path.parts or path.name == "registry.py":
            continue
        views = [name for name in app_imports(path) if name.startswith("app.views")]
        assert not views, f"{path.relative_to(ROOT)} imports {views}"


def test_the_page_s_shared_vocabulary_sits_below_the_views_and_the_lesson() -> None:
    for path in files("app/page"):
        for name in app_imports(path):
            assert not name.startswith(
                ("app.views", "app.lesson", "app.controls", "app.registry")
            ), f"app/page/{path.name} imports {name}"


def test_nothing_below_the_controls_imports_them() -> None:
    above = {"main.py", "registry.py", "training_session.py"}
    for path in files("app"):
        if path.name in above or "controls" in path.parts:
            continue
        assert not any(n.startswith("app.controls") for n in app_imports(path)), path


def test_the_keys_are_plain_values_every_layer_may_import() -> None:
    """app.keys (Key, Selection) is where views declare their keys: no Streamlit, no page."""
    for name in imports_of(ROOT / "app" / "keys.py"):
        assert name.split(".")[0] not in ("streamlit", "app"), name


def test_the_shared_runs_and_the_model_cache_import_no_session_module() -> None:
    for module in ("runs.py", "memory.py", "sources.py"):
        path = ROOT / "app" / module
        for name in app_imports(path):
            assert not name.startswith(tuple(f"app.{m}" for m in SESSION_MODULES)), (
                f"{module} imports {name}"
            )
        assert "session_state" not in path.read_text(encoding="utf-8"), module


def test_the_class_store_imports_no_streamlit_and_nothing_of_the_page() -> None:
    """app/classroom sits at the memory budget's level: the page builds on it, never the
    reverse (the session's side of a class is app.controls.classroom)."""
    for path in files("app/classroom"):
        for name in imports_of(path):
            assert name.split(".")[0] != "streamlit", f"{path.name} imports {name}"
            if name.split(".")[0] == "app":
                assert name.startswith("app.classroom"), f"{path.name} imports {name}"


def test_the_class_store_s_back_ends_import_the_base_and_the_base_neither() -> None:
    """The back-ends build on the base (app.classroom.store); the factory that picks one from the
    environment (app.classroom.backend) imports them, the base never does: no import circle."""
    back_ends = ("app.classroom.sqlite_store", "app.classroom.redis_store")
    for name in back_ends:
        path = ROOT / Path(*name.split(".")).with_suffix(".py")
        assert "app.classroom.store" in app_imports(path), name
    base = app_imports(ROOT / "app" / "classroom" / "store.py")
    assert not base & {*back_ends, "app.classroom.backend"}, base


# Streamlit's public API in Python: `streamlit` (st.*, st.App among them) and these documented
# modules; any other module of it (runtime, web, logger, elements, proto, ...) is its inside.
PUBLIC_STREAMLIT = (
    "streamlit",
    "streamlit.column_config",
    "streamlit.components.v1",
    "streamlit.components.v2",
    "streamlit.testing.v1",
)


def is_private_streamlit(name: str) -> bool:
    """A dotted name (an import, or st.x.y read off one) that reaches past Streamlit's public API:
    a `_` name, or a module of it that PUBLIC_STREAMLIT neither lists nor leads to (st.navigation
    is public, the function; streamlit.navigation, the package behind it, is not)."""
    parts = name.split(".")
    if parts[0] != "streamlit":
        return False
    thing = importlib.import_module("streamlit")
    for depth, part in enumerate(parts[1:], start=2):
        if part.startswith("_"):
            return True
        if not isinstance(thing, ModuleType):
            continue  # a name on a public module (st.App, st.session_state): its own attributes
        try:
            module = ".".join(parts[:depth])
            thing = (
                getattr(thing, part) if hasattr(thing, part) else importlib.import_module(module)
            )
        except ImportError:
            return False  # no such name
        public = (
            p == thing.__name__ or p.startswith(f"{thing.__name__}.") for p in PUBLIC_STREAMLIT
        )
        if isinstance(thing, ModuleType) and not any(public):
            return True
    return False


def private_streamlit_names(path: Path, ours: set[str]) -> set[str]:
    """What a file names of Streamlit beyond its public API: modules it imports, attributes it
    reads off them (st.runtime...), and, in a file that uses Streamlit, `_` attributes that no
    code of ours defines (those of Streamlit's objects: runtime.get_instance()._session_mgr)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {name for name in imports_of(path) if is_private_streamlit(name)}
    aliases = {}  # a local name: the Streamlit name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                aliases[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module:
            aliases |= {(a.asname or a.name): f"{node.module}.{a.name}" for a in node.names}
    aliases = {local: name for local, name in aliases.items() if name.split(".")[0] == "streamlit"}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        dotted = ast.unparse(node).split(".")
        if dotted[0] in aliases and all(part.isidentifier() for part in dotted):
            name = ".".join([aliases[dotted[0]], *dotted[1:]])
            found |= {name} if is_private_streamlit(name) else set()
        elif (
            aliases
            and node.attr.startswith("_")
            and node.attr[-2:] != "__"
            and node.attr not in ours
        ):
            found.add(f".{node.attr}")
    return found


def names_defined(paths: list[Path]) -> set[str]:
    """Every name our own code defines: functions, classes, variables, attributes, arguments."""
    defined = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store):
                defined.add(getattr(node, "id", None) or node.attr)
            elif isinstance(node, ast.arg):
                defined.add(node.arg)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                defined.add(node.value)  # object.__setattr__(self, "_values", ...)
    return defined


def test_only_one_module_reaches_past_streamlit_s_public_api() -> None:
    """Its runtime's and server's internals, its private names, and its DOM (CSS on Streamlit's
    own data-testid names) in Python: app/streamlit_private.py alone."""
    paths = [*files("app"), *files("encoder")]
    ours = names_defined(paths)
    for path in paths:
        private = private_streamlit_names(path, ours)
        dom = re.findall(r"""data-testid=["']?st[A-Z]\w*""", path.read_text(encoding="utf-8"))
        if path.name == "streamlit_private.py":
            assert private and dom, "the one home of Streamlit's insides names none"
        else:
            assert not private and not dom, (str(path.relative_to(ROOT)), private, dom)


def test_the_rule_finds_what_reaches_past_streamlit_s_public_api(tmp_path) -> None:
    """What the rule above calls private, and what it leaves as public."""
    straggler = tmp_path / "straggler.py"
    straggler.write_text(
        "import streamlit as st\n"
        "import streamlit.components.v1 as components\n"
        "from streamlit.logger import setup_formatter\n"
        "from streamlit import runtime\n"
        "from streamlit.testing.v1 import AppTest\n"
        "st.App('main.py'), st.components.v2.component, st.session_state, st.runtime.exists()\n"
        "st._main, st.context.headers, runtime.get_instance()._session_mgr\n",
        encoding="utf-8",
    )
    assert private_streamlit_names(straggler, set()) == {
        "streamlit.logger",
        "streamlit.logger.setup_formatter",
        "streamlit.runtime",
        "streamlit.runtime.exists",
        "streamlit.runtime.get_instance",
        "streamlit._main",
        "._session_mgr",
    }


def test_a_link_reaches_every_lesson_step_and_no_further() -> None:
    from app.lesson.steps import STEPS

    assert state.REGISTRY["lesson"].parse(str(len(STEPS))) == len(STEPS)
    with pytest.raises(ValueError, match="outside"):
        state.REGISTRY["lesson"].parse(str(len(STEPS) + 1))


def test_the_lesson_s_chapters_import_the_text_model_but_not_each_other() -> None:
    """A chapter of the lesson (app/lesson/steps/*.py) builds its steps on the text model
    (app.lesson.text) and its questions on app.lesson.asked alone: no other chapter, nothing of
    the page, no session (app.controls); the package lists the chapters' steps. The text model
    imports nothing else of the lesson, and the questions' text only the text model and no
    Streamlit."""
    chapters = [path for path in files("app/lesson/steps") if path.name != "__init__.py"]
    assert len(chapters) > 1
    allowed = ("app.lesson.text", "app.lesson.asked")
    for path in chapters:
        lesson = {name for name in app_imports(path) if name.startswith("app.lesson")}
        assert "app.lesson.text" in lesson, f"{path.name} does not import the text model"
        assert all(name.startswith(allowed) for name in lesson), (path.name, lesson)
        assert not any(name.startswith("app.controls") for name in app_imports(path)), path.name
    text = app_imports(ROOT / "app" / "lesson" / "text.py")
    assert not any(name.startswith("app.lesson") for name in text), text
    asked = ROOT / "app" / "lesson" / "asked.py"
    of_the_lesson = [name for name in app_imports(asked) if name.startswith("app.lesson")]
    assert all(name.startswith("app.lesson.text") for name in of_the_lesson), of_the_lesson
    assert not any(name.split(".")[0] == "streamlit" for name in imports_of(asked))


def test_loading_a_checkpoint_does_not_import_the_trainer(tmp_path: Path) -> None:
    from encoder.train.config import TrainConfig
    from encoder.train.trainer import train

    train(TrainConfig(steps=1).with_model(d_model=16, num_layers=1)).task_model().save(tmp_path)
    script = (
        "import sys\n"
        "from encoder import load_pretrained\n"
        "from encoder.io.checkpoints import load_checkpoint\n"
        "load_pretrained()\n"
        f"assert load_checkpoint({str(tmp_path)!r}).task_model is not None\n"
        "print(sorted(m for m in sys.modules if m.startswith('encoder.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    loaded = done.stdout.strip()
    assert "encoder.train" not in loaded  # neither the package nor any of its modules
    assert "encoder.tasks.classifier" in loaded  # the task model's own code


@pytest.mark.parametrize(
    "view", ["Lesson", "Attention", "Attention steps", "LayerNorm", "Activations", "Exercises"]
)
def test_every_widget_key_is_registered_in_the_state_module(view: str) -> None:
    at = open_page(view=view, text="One sentence.\nAnd a second, longer one.")
    assert_no_exception(at)
    keys = {w.key for kind in VALUE_WIDGETS for w in at.get(kind) if w.key}
    assert keys, view
    unregistered = {key for key in keys if key not in state.REGISTRY}
    assert not unregistered, unregistered


def test_training_widget_keys_are_registered() -> None:
    at = open_page(view="Training")
    assert_no_exception(at)
    keys = {w.key for kind in VALUE_WIDGETS for w in at.get(kind) if w.key}
    assert {"train_task", "train_steps", "train_lr"} <= keys
    assert keys <= set(state.REGISTRY)


def test_a_key_outside_the_registry_is_refused() -> None:
    with pytest.raises(KeyError, match="not a session key registered"):
        state.get("no_such_key")


# A Streamlit test id in a script: [data-testid=stMain], '[data-testid="stCode"] pre', "stMain"
STREAMLIT_TEST_ID = re.compile(r"""data-testid=["']?st[A-Z]\w*|["'`]st[A-Z][A-Za-z]*["'`]""")
STREAMLIT_DOM = ROOT / "app" / "assets" / "page" / "streamlit_private.js"


def test_only_one_browser_script_names_streamlit_s_dom() -> None:
    """The page's scripts and the library's modules read Streamlit's private DOM (its data-testid
    names) through app/assets/page/streamlit_private.js alone."""
    scripts = sorted([*(ROOT / "app").rglob("*.js"), *(ROOT / "encoder").rglob("*.js")])
    assert STREAMLIT_DOM in scripts
    for path in scripts:
        named = STREAMLIT_TEST_ID.findall(path.read_text(encoding="utf-8"))
        assert bool(named) == (path == STREAMLIT_DOM), (str(path.relative_to(ROOT)), named)
