"""Drive the page in Debian's Chromium: start `streamlit run`, open pages, read the drawn figures;
read the numbers the hosting files in deploy/ share.

Shared by the browser tests (tests/e2e), the deploy tests (tests/app/test_deploy.py) and the
scripts in tests/bench. The app script defaults to
app/main.py; set ENCODER_APP_SCRIPT to serve another one (e.g. tests/bench/naive_page.py).
"""

from __future__ import annotations

import functools
import html
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest
import yaml

from app.registry import BY_TITLE

REPO = Path(__file__).resolve().parents[2]
APP_SCRIPT = os.environ.get("ENCODER_APP_SCRIPT", "app/main.py")
# The page's Streamlit settings; Streamlit reads them for app/main.py, the file sitting beside it
APP_CONFIG = REPO / "app" / ".streamlit" / "config.toml"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
# the configuration of the speed goals: 6 layers x 8 heads, d_model 512
BENCH_SETUP = {"d_model": 512, "num_heads": 8, "num_layers": 6, "d_ff": 2048}

# One plotly figure, by the key of its st.plotly_chart, as the browser holds it.
FIGURE_JS = """key => {
  const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  if (!plot || !plot._fullData) return null;
  const z = (plot._fullData[0] || {}).z || [];
  const axis = name => (plot.layout[name] || {}).ticktext || null;
  return {
    rows: z.length, cols: z.length ? z[0].length : 0, traces: plot._fullData.length,
    title: (plot.layout.title || {}).text || "",
    x: axis("xaxis"), x2: axis("xaxis2"), y2: axis("yaxis2"),
    drawn_x2: [...plot.querySelectorAll("g.x2tick text")].map(t => t.textContent),
  };
}"""


# True once the run for `expected` is drawn: the script is idle, nothing is stale, the overview's
# title counts the new tokens, and the head detail names exactly those tokens.
# The attention explorer's root under `within` (the document, or a page element): in the page, or
# inside a component's shadow root (at any depth).
def js_number(value: float) -> str:
    """A number as the browser's figures write it in English and in a CSV (figure_tools.js's
    figureRounded, as String spells it): three significant digits, in JavaScript's own spelling
    ("0.427", "12", "1.45e-9")."""
    text = repr(float(f"{value:.3g}")).removesuffix(".0")
    return re.sub(r"e([+-])0*(\d+)", r"e\1\2", text)


# Every element that `selector` finds in `within` and in the shadow roots below it (a Custom
# Components v2 element's), in document order per root; DEEP_FIND_JS: the first, or null
DEEP_ALL_JS = """(function all(within, selector, found = []) {
  found.push(...within.querySelectorAll(selector));
  for (const node of within.querySelectorAll("*")) {
    if (node.shadowRoot) all(node.shadowRoot, selector, found);
  }
  return found;
})"""
DEEP_FIND_JS = f"""((within, selector) => {DEEP_ALL_JS}(within, selector)[0] || null)"""
EXPLORER_IN_JS = f"""(within => {DEEP_FIND_JS}(within, "[data-testid=attention-explorer]"))"""
# The chart keyed `key` drawn: a Plotly chart with its data, or an ES module's figure (in its
# component's shadow root: drawn once it says how long its last draw took)
FIGURE_DRAWN_JS = f"""(key => {{
  const box = document.querySelector(`.st-key-${{key}}`);
  const plot = box && box.querySelector(".js-plotly-plot");
  if (plot) return !!(plot._fullLayout && plot._fullData);  // a diagram may have no trace
  return !!box && !!{DEEP_FIND_JS}(box, "[data-draw-ms]");
}})"""
# True once the Attention view shows a text: the script is idle, nothing is stale, and the
# explorer's query tokens are the text's first sentence's tokens.
DRAWN_JS = """expected => {
  const app = document.querySelector("[data-testid=stApp]");
  if (!app || app.getAttribute("data-test-script-state") !== "notRunning") return false;
  if (document.querySelector("[data-stale=true]")) return false;
  const root = FIND_EXPLORER(document);
  if (!root) return false;
  const tokens = [...root.querySelectorAll("[data-side=query]")].map(t => t.textContent);
  return JSON.stringify(tokens) === JSON.stringify(expected);
}""".replace("FIND_EXPLORER", EXPLORER_IN_JS)

# The script's own time in ms, from "page N ms" in the status caption (the app's status line;
# the benchmark's floor page writes one alike), or null where there is none.
SCRIPT_MS_JS = """() => {
  for (const caption of document.querySelectorAll("[data-testid=stCaptionContainer]")) {
    const found = caption.textContent.match(/(\\d+) ms\\s*$/);  // "… · page N ms", any language
    if (found) return Number(found[1]);
  }
  return null;
}"""

SETTLED_JS = """() => {
  const app = document.querySelector("[data-testid=stApp]");
  return app && app.getAttribute("data-test-script-state") === "notRunning"
    && !document.querySelector("[data-stale=true]")
    && !!document.querySelector("[data-testid=stMainBlockContainer] h1");
}"""


# Lazily loaded elements (widgets, charts) show a skeleton until their code has arrived, and a
# visible table has its grid (a closed expander's stays empty).
LOADED_JS = """() => !document.querySelector("[data-testid=stSkeleton]")
  && [...document.querySelectorAll("[data-testid=stDataFrame]")]
    .every(table => !table.checkVisibility() || table.querySelector("table[aria-rowcount]"))"""


# Ready for a first click: settled, every lazily loaded element loaded, and both still so for
# READY_STILL_MS on end (a new page loads its widgets' code lazily, skeletons first, and moves as
# they arrive: a click in that moment can miss what it aimed at).
READY_STILL_MS = 300
READY_JS = f"""() => {{
  if (!(({SETTLED_JS})() && ({LOADED_JS})())) {{
    window.readySince = undefined;
    return false;
  }}
  window.readySince ??= performance.now();
  return performance.now() - window.readySince >= {READY_STILL_MS};
}}"""


def wait_settled(page, timeout_ms: float = 30_000) -> None:
    """Until the script is idle, nothing on the page is stale and the title is drawn."""
    page.wait_for_function(SETTLED_JS, timeout=timeout_ms)


def wait_ready(page, timeout_ms: float = 30_000) -> None:
    """Until the page can take a click: settled (`wait_settled`), nothing still loading, and so
    for READY_STILL_MS on end. Every browser test's first click on a page comes after it."""
    page.evaluate("() => { window.readySince = undefined; }")
    page.wait_for_function(READY_JS, timeout=timeout_ms)


def figure(page, key: str) -> dict | None:
    """The figure drawn by `st.plotly_chart(..., key=key)`: sizes, tick labels, title."""
    return page.evaluate(FIGURE_JS, key)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright):
    """Headless Debian Chromium through Playwright (sync or async API alike)."""
    return playwright.chromium.launch(
        executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
    )


def missing(what: str) -> None:
    """A program the test needs is not installed: skip locally, fail in CI."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is not installed, and CI=true needs the tests that use it to run")
    pytest.skip(f"{what} is not installed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StreamlitServer:
    """`streamlit run script` on a free loopback port; stop() ends exactly this process.

    `launcher` replaces that command (e.g. an installed `encoder-explorer`),
    run in `cwd` with `env`; the loopback options are added either way, and `options` (more
    Streamlit options, e.g. ["--server.disconnectedSessionTTL", "5"]).
    """

    def __init__(
        self,
        script: str = APP_SCRIPT,
        timeout: float = 60.0,
        launcher: list[str] | None = None,
        cwd: Path = REPO,
        env: dict[str, str] | None = None,
        options: tuple[str, ...] = (),
    ) -> None:
        self.script = script
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"streamlit-{self.port}.log"
        if launcher is None:
            launcher = [sys.executable, "-m", "streamlit", "run", script, *settings_for(script)]
        command = [
            *launcher,
            "--server.headless", "true",
            "--server.fileWatcherType", "none",
            "--server.port", str(self.port),
            "--server.address", "127.0.0.1",
            *options,
        ]  # fmt: skip
        self.started = time.perf_counter()
        with self.log_path.open("w") as log:
            self.process = subprocess.Popen(
                command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        wait_serving(self.process, f"{self.url}/_stcore/health", timeout, "streamlit", self.log)
        self.up_s = time.perf_counter() - self.started

    def page_url(self, **params: object) -> str:
        return f"{self.url}/?{urlencode(params)}" if params else f"{self.url}/"

    def rss_mb(self) -> float:
        """Resident memory of the server process and its child processes, from /proc."""
        return sum(_rss_kb(pid) for pid in _process_tree(self.process.pid)) / 1024

    def cpu_s(self) -> float:
        """CPU seconds (user and system) used so far by the server and its child processes."""
        return sum(process_cpu_s(pid) for pid in _process_tree(self.process.pid))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_process(self.process)


def wait_serving(
    process: subprocess.Popen, url: str, timeout: float, name: str, log: Callable[[], str]
) -> None:
    """Until `url` answers 200. If `process` exits first, RuntimeError; past `timeout`, the
    process is stopped and TimeoutError raised; both quote `log()`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited early:\n{log()}")
        try:
            with urllib.request.urlopen(url, timeout=1) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    stop_process(process)
    raise TimeoutError(f"{name} not serving {url} after {timeout} s:\n{log()}")


def stop_process(process: subprocess.Popen) -> None:
    """End exactly this process: terminate it, and kill it if it is still there after 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def app_settings() -> dict[str, dict]:
    """app/.streamlit/config.toml: {section: {option: value}}."""
    try:
        import tomllib  # Python 3.11 on
    except ModuleNotFoundError:  # Python 3.10: the same parser, from PyPI (the test extra)
        import tomli as tomllib

    return tomllib.loads(APP_CONFIG.read_text(encoding="utf-8"))


def settings_for(script: str) -> list[str]:
    """The app's Streamlit settings as `--section.option=value` flags for a page that has no
    .streamlit/config.toml beside it (the bench's floor and naive pages), so that it is served
    as the app is; [] for one that has (the app)."""
    if (REPO / script).parent.joinpath(".streamlit", "config.toml").exists():
        return []
    return [
        f"--{section}.{name}={str(value).lower() if isinstance(value, bool) else value}"
        for section, options in app_settings().items()
        for name, value in options.items()
    ]


def minilm_archive(path: Path) -> Path:
    """The bundled MiniLM checkpoint (91 MB of weights) as an upload, a zip of its three files,
    written to `path` (Playwright uploads a buffer of at most 50 MB)."""
    from encoder.io.checkpoint_files import checkpoint_archive, read_checkpoint_dir
    from encoder.io.tokenize import bundled_model_dir

    path.write_bytes(checkpoint_archive(read_checkpoint_dir(bundled_model_dir())))
    return path


UPLOAD_INPUT = "[data-testid=stFileUploader] input[type=file]"  # the sidebar's uploader
# The sidebar's line on what this session and all sessions keep
# (app.controls.model_files.memory_text)
KEPT_MEMORY = ".st-key-kept_memory"


def _process_tree(pid: int) -> list[int]:
    """A process and all its descendants (from /proc/PID/task/*/children); [] once it is gone."""
    try:
        children = [
            int(child)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()
        ]
    except FileNotFoundError:
        return []
    return [pid] + [p for child in children for p in _process_tree(child)]


def _rss_kb(pid: int) -> int:
    """Resident memory in kB; 0 for a process that has just exited (or a zombie)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except FileNotFoundError:
        return 0
    return next((int(line.split()[1]) for line in lines if line.startswith("VmRSS:")), 0)


def process_cpu_s(pid: int) -> float:
    """User and system CPU seconds of a process (/proc/PID/stat); 0 once it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


@functools.cache
def _tokenizer():
    from encoder.io.tokenize import load_tokenizer

    return load_tokenizer()


def expected_tokens(text: str) -> list[list[str]]:
    """Each line's tokens as the app's tokenizer makes them (at most max_len 512)."""
    from encoder.io.tokenize import tokenize

    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return tokenize(lines, _tokenizer(), 512).tokens


def drawn_target(tokens: list[str]) -> dict:
    """What Plotly figures of one sentence of `tokens` hold: the title's token count and the
    labels (escaped, as plotly holds them)."""
    return {
        "title": f", {len(tokens)} tokens",
        "labels": [html.escape(t, quote=False) for t in tokens],
    }


def sentence_of(n_words: int, tag: str) -> str:
    """A sentence of plain words (one token each) carrying a tag, so each text is new."""
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "near", "river"]
    return " ".join([tag] + [words[i % len(words)] for i in range(n_words - 1)]) + "."


# --- pages in a browser ---------------------------------------------------------------------

LOAD_TIMEOUT_MS = 60_000  # the first page of a session imports torch and builds a model
PROJECTOR = {"width": 1280, "height": 720}  # a classroom projector's viewport
PHONE = {"width": 390, "height": 844}  # a student's phone
# a phone's browser says so in its User-Agent (the page wraps figure titles for it)
PHONE_AGENT = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0 Mobile Safari/537.36"
)
# a new browser context's options for a phone: its viewport, user agent and touch
PHONE_BROWSING = dict(viewport=PHONE, user_agent=PHONE_AGENT, is_mobile=True, has_touch=True)


class PageProblems:
    """Console errors, uncaught exceptions and dialogs (alert, confirm, ...) seen by a page, and
    the websockets it opened (Streamlit's page opens one; another is a reconnection)."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.sockets = 0
        page.on("websocket", self._socket)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))
        page.on("dialog", self._dialog)

    def _console(self, message) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text} at {message.location}")

    def _socket(self, _socket) -> None:
        self.sockets += 1

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


def wait_for(page, key: str, condition: Callable[[dict], bool], timeout_s: float = 30) -> dict:
    """The figure under `key` once `condition` holds for it and the page has settled."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = figure(page, key)
        if last is not None and condition(last):
            wait_settled(page)
            last = figure(page, key)
            if last is not None and condition(last):
                return last
        page.wait_for_timeout(50)
    raise AssertionError(f"figure {key!r} never met the condition; last seen: {last}")


# True once a step's expander is open with its step drawn inside: a closed step is not computed,
# so its content comes only with the rerun its opening asked for.
STEP_DRAWN_JS = """key => {
  const box = document.querySelector(`.st-key-${key} details[open]`);
  return !!box && box.querySelectorAll("[data-testid=stElementContainer]").length > 0;
}"""


def open_step(page, key: str, timeout_ms: float = 60_000) -> None:
    """Click the Attention steps view's step (its expander's key, "step_open_2") open, if it is
    closed, and wait until the rerun its opening asked for has drawn it (a click during a rerun
    can be lost, so a next click waits too)."""
    box = page.locator(f".st-key-{key} details")
    box.wait_for(timeout=timeout_ms)
    wait_ready(page, timeout_ms)
    if box.get_attribute("open") is None:
        box.locator("summary").click()
        page.wait_for_function(STEP_DRAWN_JS, arg=key, timeout=timeout_ms)
        wait_settled(page, timeout_ms)


KEYS_STEP = "step_open_2"  # the Attention steps view's keys and values (step_keys, step_values)


def type_text(page, text: str) -> None:
    box = page.locator(".st-key-text textarea")
    box.fill(text)
    box.press("Control+Enter")


def click_view(page, view: str) -> None:
    """Click a view's link in the page's navigation ("Attention", not "Attention steps"); a view
    the bar has no room for is an item of its "N more" menu."""
    nav = page.get_by_test_id("stTopNav")
    nav.get_by_role("link").first.wait_for()
    link = nav.get_by_role("link", name=view, exact=True)
    if link.count() and link.is_visible():
        link.click()
        return
    nav.get_by_text(re.compile(r"^\d+ more$")).click()
    page.get_by_role("menuitem", name=view, exact=True).click()


def open_view(page, view: str, timeout_ms: float = 30_000) -> None:
    """Click a view in the navigation and wait for the run that draws it (its path first)."""
    path = "/" + BY_TITLE[view].path
    click_view(page, view)
    page.wait_for_url(lambda url: urlparse(url).path.endswith(path), timeout=timeout_ms)
    wait_settled(page, timeout_ms)


def drawn_with(page, text: str) -> None:
    """Until the page shows `text` in its box and its first line's tokens in the explorer."""
    page.wait_for_function(DRAWN_JS, arg=expected_tokens(text)[0], timeout=60_000)
    assert page.locator(".st-key-text textarea").input_value() == text


# --- deploy/: the hosting files' numbers ---------------------------------------------------

DEPLOY = REPO / "deploy"
QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)([kMGT]i?|Ki)?$")
QUANTITY_UNITS = {None: 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
QUANTITY_UNITS |= {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity_bytes(text: str) -> int:
    """A Kubernetes memory quantity ("2500M", "2Gi", "512000000") in bytes."""
    number, unit = QUANTITY.fullmatch(text).groups()
    return int(float(number) * QUANTITY_UNITS[unit])


def kubernetes_manifests(redis: bool = False) -> dict[str, dict]:
    """The documents in deploy/kubernetes, by kind (one of each): the app's, or with `redis`
    Redis's (redis.yaml)."""
    documents = [
        doc
        for path in sorted((DEPLOY / "kubernetes").glob("*.yaml"))
        if (path.name == "redis.yaml") == redis
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc is not None
    ]
    by_kind = {doc["kind"]: doc for doc in documents}
    assert len(by_kind) == len(documents)
    return by_kind


def idle_allowance(manifests) -> int:
    """Bytes the Deployment allows for a replica's idle size (tests/bench/idle_memory.py)."""
    pod = manifests["Deployment"]["spec"]["template"]
    return quantity_bytes(pod["metadata"]["annotations"]["encoder-explorer/idle-memory"])


EXPLORER = "[data-testid=attention-explorer]"  # the attention explorer's root (its DOM contract)


def explorer_state(page) -> dict:
    """The explorer's data-* attributes: layer, head, query, pinned, setup, mode."""
    return page.locator(EXPLORER).evaluate("node => ({...node.dataset})")


def explorer_tokens(page) -> list[str]:
    """The query tokens the explorer draws (lines view), as text."""
    return page.locator(f"{EXPLORER} [data-side=query]").all_text_contents()


def wait_for_explorer(page, tokens: list[str], timeout_ms: float = 60_000) -> None:
    """Until the explorer draws exactly these query tokens (its root may sit in a shadow root:
    Playwright's locators look inside)."""
    from playwright.sync_api import expect

    queries = page.locator(f"{EXPLORER} [data-side=query]")
    try:
        expect(queries).to_have_text(tokens, timeout=timeout_ms, use_inner_text=False)
    except AssertionError as error:
        raise AssertionError(f"{error}\n{page_summary(page)}") from None


def page_summary(page) -> str:
    """What a page shows when a wait fails: its URL, whether it runs, its messages, tracebacks
    and the explorers it has (a CI log is all a failure leaves)."""
    messages = page.locator("[data-testid=stAlert], [data-testid=stException]")
    lines = [
        f"url: {page.url}",
        f"running: {page.locator('[data-testid=stStatusWidget]').count() > 0}",
        f"explorers: {page.locator(EXPLORER).count()}",
        f"view: {page.locator('[data-testid=stTopNavLink][aria-current=page]').all_inner_texts()}",
        f"status line: {page.get_by_text('forward pass').all_inner_texts()}",
        *(f"message: {text[:300]}" for text in messages.all_inner_texts()),
    ]
    return "\n".join(lines)


def explorer_heads(page) -> tuple[int, int]:
    """(layers, heads) of the explorer's every-head grid (switches it to that mode)."""
    page.locator(f"{EXPLORER} [data-role=mode][data-mode=heads]").click()
    tiles = page.locator(f"{EXPLORER} [data-role=tile]")
    layers = {t for t in tiles.evaluate_all("ts => ts.map(t => t.dataset.layer)")}
    return len(layers), tiles.count() // len(layers)


SCATTER_HOVER_JS = """async (canvas) => {
    const box = canvas.getBoundingClientRect();
    const times = [];
    for (let k = 0; k < 20; k++) {
      const t0 = performance.now();
      canvas.dispatchEvent(new MouseEvent("mousemove", {
        clientX: box.left + 10 + k * 20, clientY: box.top + 10 + k * 20}));
      await new Promise(requestAnimationFrame);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return times[10];
}"""


def scatter_hover_ms(page) -> float:
    """The head scatter's hover: from a mouse move to the next frame, with the readout updated
    (median of 20 moves across the plane; the locator reaches into a component's shadow root)."""
    return page.locator("[data-role=plane]").evaluate(SCATTER_HOVER_JS)
