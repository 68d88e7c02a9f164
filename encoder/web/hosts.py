"""Every host's ES module, joined from the ES modules of this package (encoder.web.bundle).

A host (the page's Streamlit components, a notebook's anywidget, an offline HTML file) loads ONE
self-contained ES module: anywidget imports `_esm` from a Blob and an offline file inlines it, so
neither can follow an `import`. A host's module is its entry, joined with all it imports:

    import { mount } from "./<module>.js";     attention_explorer.js, head_scatter.js, ...
    import host from "./glue/<glue>.js";       the host's few lines, given the module's mount
    const hosted = host(mount);                its default export (or, offline, the mounts made)
    export default hosted;

Each module imports what it uses (shared.js: the DOM helper, the colour scales, the palette, the
words; figure_tools.js: a figure's "Show as a table" and "Save as…"). The join is made once a
process, at first use.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from encoder.web import asset
from encoder.web.bundle import joined as bundle

WEB = Path(__file__).parent

SHARED = "shared.js"
FIGURE_TOOLS = "figure_tools.js"
EXPLORER = "attention_explorer.js"
SCATTER = "head_scatter.js"
LINES = "token_lines.js"
HISTOGRAM = "value_histogram.js"
TOP_UNITS = "top_units.js"
DIAGRAM = "block_diagram.js"
FINGERPRINT = "head_fingerprint.js"
SIMILARITY = "similarity_matrix.js"
LENS = "lens_grid.js"
# the SVG figures' modules
FIGURE_MODULES = (LINES, HISTOGRAM, TOP_UNITS, DIAGRAM, FINGERPRINT, SIMILARITY, LENS)
OFFLINE_FIGURE = "offline_figure.js"  # their glue in an offline file
NOTEBOOK_FIGURES = (SIMILARITY, LENS)  # figure modules a notebook draws (anywidget_figure.js)

# host -> (module, glue): every module a host loads
HOSTS = {
    "streamlit_explorer": (EXPLORER, "streamlit_explorer.js"),  # reports its layer and head
    "streamlit_still_explorer": (EXPLORER, "streamlit.js"),  # the lesson's: reports nothing
    "streamlit_head_scatter": (SCATTER, "streamlit.js"),
    **{f"streamlit_{m.removesuffix('.js')}": (m, "streamlit.js") for m in FIGURE_MODULES},
    "anywidget_explorer": (EXPLORER, "anywidget.js"),
    **{f"anywidget_{m.removesuffix('.js')}": (m, "anywidget_figure.js") for m in NOTEBOOK_FIGURES},
    "offline_explorer": (EXPLORER, "offline.js"),
    # a figure module in an offline file (the lesson's handout, Export's downloads)
    **{f"offline_{m.removesuffix('.js')}": (m, OFFLINE_FIGURE) for m in FIGURE_MODULES},
}


def entry(module: str, glue: str) -> str:
    """The text of the entry that hosts `module` with `glue` (a file in glue/)."""
    return (
        f'import {{ mount }} from "./{module}";\nimport host from "./glue/{glue}";\n'
        "const hosted = host(mount);\nexport default hosted;\n"
    )


@cache
def joined(module: str, glue: str | None = None) -> str:
    """`module` and all it imports as one ES module's text (its exports: `mount`...); with
    `glue`, hosted by it (the host's entry: its default export is the glue's host)."""
    if glue is None:
        return bundle(WEB / module)
    return bundle(WEB / f"host_{glue}", entry(module, glue))


def host_module(host: str) -> str:
    """The one ES module `host` (a key of HOSTS) loads."""
    return joined(*HOSTS[host])


# A page's hosts (the streamlit_* ones) send their module once: the page holds it in a module
# script (page_library), which registers the glue's host function; the component's own code is
# glue/streamlit_page.js (page_stub), which hands each call to it. Streamlit sends an unchanged
# element again only as a reference, so a rerun carries the small stub and the data alone.
PAGE_STUB = "glue/streamlit_page.js"


def page_library(host: str) -> str:
    """`host`'s module (a streamlit_* key of HOSTS) as the text of the page's module script: the
    joined module, then its glue's host registered as window.encoderExplorerHosts[host]
    and the window's "encoder-explorer-hosts" event dispatched. The first copy to run stays
    registered: Streamlit runs the script again whenever its element is drawn anew (another
    place on the page), and a second copy of the module would not know the elements the first
    drew in (its glue's own map), and would draw a second figure into each."""
    name = json.dumps(host)
    return (
        f"{host_module(host)}\n// ---- registered for the page (hosts.page_library)\n"
        f"(window.encoderExplorerHosts ||= {{}})[{name}] ||= hosted;\n"
        'window.dispatchEvent(new Event("encoder-explorer-hosts"));\n'
    )


def page_stub(host: str) -> str:
    """The component's own code for `host` (a streamlit_* key of HOSTS): glue/streamlit_page.js,
    which waits for the page's copy of the module (page_library) and hands it each call."""
    return asset(PAGE_STUB).replace('"HOST_NAME"', json.dumps(host))


def explorer_style() -> str:
    """The explorer's stylesheet, with its neuron view's and its figure tools'."""
    return asset("attention_explorer.css") + asset("neuron_view.css") + asset("figure_tools.css")


def scatter_style() -> str:
    """The head scatter's stylesheet, with its figure tools'."""
    return asset("head_scatter.css") + asset("figure_tools.css")


def figure_style(module: str) -> str:
    """An SVG figure module's stylesheet (one of FIGURE_MODULES: the .css beside its .js),
    after its figure tools' and its frame's (figure_tools.css), which it refines."""
    return asset("figure_tools.css") + asset(module.removesuffix(".js") + ".css")
