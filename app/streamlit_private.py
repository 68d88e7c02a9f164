"""Every use of Streamlit beyond its public API, in one place (pyproject pins the release CI
tests, 1.67): its runtime's internals, the frontend's settings, and the page's DOM that our CSS
selects (tests/test_layout.py finds none elsewhere in Python).

Each function names what it relies on; if a Streamlit release moves it, this module is the one
to mend, and each answers None / does nothing where the runtime is absent (AppTest) or differs.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import streamlit as st
from streamlit import runtime
from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.i18n import _
from app.i18n.browser import browser_words
from encoder.web import asset
from encoder.web.bundle import joined


def session_id() -> str | None:
    """The id of the browser session whose script runs in this thread; None outside one.
    Relies on streamlit.runtime.scriptrunner.get_script_run_ctx() and its `session_id`."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def live_sessions() -> set[str] | None:
    """The ids of the sessions the runtime still has: connected, or disconnected but still
    resumable; None where there is no runtime to ask (AppTest) or it cannot say. Relies on
    Runtime's private `_session_mgr` and its `list_sessions()` (no public list of the stored
    sessions)."""
    if not runtime.exists():
        return None
    try:
        manager = runtime.get_instance()._session_mgr
        return {info.session.id for info in manager.list_sessions()}
    except (AttributeError, KeyError, RuntimeError):  # another Streamlit, or a list in flux
        return None


def forget_session_files(sid: str) -> None:
    """What AppSession.shutdown removes, and expiry does not: the session's uploaded files and
    its downloadable and media files. Relies on Runtime's `uploaded_file_mgr` and
    `media_file_mgr` and their remove_session_files / clear_session_refs /
    remove_orphaned_files."""
    if not runtime.exists():
        return
    instance = runtime.get_instance()
    instance.uploaded_file_mgr.remove_session_files(sid)
    instance.media_file_mgr.clear_session_refs(sid)
    instance.media_file_mgr.remove_orphaned_files()


def remove_uploaded(uploaded: list) -> None:
    """Remove uploaded files from Streamlit's store, which would keep their bytes until the
    session is shut down. Relies on the script run context's `uploaded_file_mgr` being a
    MemoryUploadedFileManager with remove_file(session_id=, file_id=)."""
    ctx = get_script_run_ctx()
    if ctx is not None and isinstance(ctx.uploaded_file_mgr, MemoryUploadedFileManager):
        for file in uploaded:
            ctx.uploaded_file_mgr.remove_file(session_id=ctx.session_id, file_id=file.file_id)


# Every page's look beyond the theme: captions dark enough to read (Streamlit draws them dark
# grey at 60 % opacity, 3.9:1 on white; text needs 4.5:1), the page's title small and close
# under the navigation, so that a 720 px projector shows the view's figure (Streamlit's title,
# 44 px under 96 px of padding, took a third of that screen), and on a phone (Streamlit's
# breakpoint, 640 px) the content first: the page's title hidden (the browser's tab names the
# app), the unlabelled "»" that opens the sidebar (which holds the views there) labelled.
# Streamlit's DOM: a caption is [data-testid=stCaptionContainer], the sidebar's opener
# [data-testid=stExpandSidebarButton].
# A collapsed sidebar is [data-testid=stSidebar][data-collapsed=true], moved off the page to the
# left: right to left it would sit over the page, so it is hidden there.
# A disabled control's label (RoPE's base without rotary positions) stays readable: Streamlit
# draws a disabled widget's label, label[disabled], at 40 % of the text colour, 2.3:1 on the
# sidebar. A formula (KaTeX's .katex-display scrolls sideways) neither scrolls for a 2 px
# overhang of its glyphs, which keyboards could not reach (axe: scrollable-region-focusable), nor
# past a phone's edge: it breaks its line at a relation or an operator, as inline math does.
# An equation reads left to right on an Arabic page too, as in Arabic textbooks (its words in
# their own direction); without this, KaTeX's boxes follow the page's right to left order and
# "q·k / √64" comes out reversed. The page's script (page_script) takes no room. A row of numbers
# (st.metric in st.columns: Shapes' costs) stays two to a row on a phone, where Streamlit gives
# each column the whole width ([data-testid=stColumn]'s min-width), so that the view's figure is
# still on the first screen.
# Code (st.code, [data-testid=stCode] pre) in its syntax colours darkened to 4.5:1 or more on its
# #f7f7f6 background (Streamlit's are 2.3:1 to 3.6:1), each in its own hue.
CODE_COLOURS = {  # a token's class (Prism's): its colour, its contrast on #f7f7f6
    "keyword": "#1565c0",  # 5.4:1
    "function": "#1565c0",
    "operator": "#a64b00",  # 5.4:1
    "number": "#0b7262",  # 5.5:1
    "boolean": "#0f7a34",  # 5.1:1
    "string": "#0f7a34",
    "punctuation": "#5c5f6b",  # 5.9:1
    "comment": "#5c5f6b",
}
CODE_CSS = "\n".join(
    f'[data-testid="stCode"] pre .token.{token} {{ color: {colour}; }}'
    for token, colour in CODE_COLOURS.items()
)
# Streamlit pads each view's link 8 px a side: at 1280 px with the sidebar open, Spanish's twelve
# titles (1,004 px) overflow the navigation's 980 px and the last two hide behind Streamlit's own
# "2 more", in English; 4 px a side fits them (908 px; at 5 px, 932 px, one still hid).
NAV_LINK_PADDING = "4px"
# A view's link with the keyboard's focus: Streamlit marks it with a 1.09:1 tint alone; an outline
# of the figures' focus blue (#0072B2, encoder/web: 5.2:1 on white, 4.7:1 on the tint), 2 px wide
# (WCAG 2.4.7 and 2.4.11: 3:1 against what surrounds it).
FOCUS_RING = "#0072B2"
TEXT_GREY = "#595959"  # 7.0:1 on white (WCAG AA for text is 4.5:1)
LOCKED_GREY = "#6b6b6b"  # 5.0:1 on the sidebar's #f8f8f7, lighter than the text beside it
FIGURE_TOOLS_CSS = asset("figure_tools.css")  # each figure's table and "Save as…"
# (#js-plotly-tester: the hidden SVG on the body where Plotly measures its texts before placing
# them; on a right-to-left page it measured them right to left, as Plotly never draws them, and
# gave the labels of an axis less room than they take: ltr, as in its charts.)
# A chart's element box holding its tools (app/assets/page/figure_text.js puts them after the
# chart in it) grows to hold them: Streamlit gives it the chart's height, fixed, and scrolls what
# is more (the tools, then the table, out of sight). The chart keeps its own height: its frame's
# and box's 100 % of a growing box would grow it too, so they take their content's (the chart's
# box: contain-intrinsic-height, the chart's); a frame shown full screen is fixed to the window.
FIGURE_BOX = '[data-testid="stElementContainer"]:has(> [data-testid="figure-text"])'
FIGURE_FRAME = f'{FIGURE_BOX} > [data-testid="stFullScreenFrame"]'
FIGURE_BOX_CSS = f"""{FIGURE_BOX} {{ height: auto; flex: 0 0 auto; overflow: visible; }}
{FIGURE_FRAME}, {FIGURE_FRAME} > [data-testid="stPlotlyChart"] {{ height: auto; }}"""
PAGE_CSS = f"""<style>
[data-testid="stCaptionContainer"] {{ color: {TEXT_GREY}; opacity: 1; }}
[data-testid="stWidgetLabel"][disabled] {{ color: {LOCKED_GREY}; }}
.katex-display {{ padding: 0 2px; }}
.katex-display > .katex {{ white-space: normal; }}
.katex {{ direction: ltr; unicode-bidi: isolate; }}
.katex .text {{ unicode-bidi: isolate; }}
[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] > script),
[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] > [data-announce]),
[data-testid="stElementContainer"]:has(> [data-testid="stHtml"] > [data-page-language]) {{
  display: none; }}
html[dir="rtl"] [data-testid="stSidebar"][data-collapsed="true"] {{ display: none; }}
#js-plotly-tester {{ direction: ltr; }}
.visually-hidden {{ position: absolute; width: 1px; height: 1px; overflow: hidden;
  clip-path: inset(50%); white-space: nowrap; }}
@media (prefers-reduced-motion: reduce) {{
  *, *::before, *::after {{ animation-duration: 0.01ms !important;
    animation-iteration-count: 1 !important; transition-duration: 0.01ms !important;
    scroll-behavior: auto !important; }}
}}
@media (prefers-contrast: more) {{
  [data-testid="stCaptionContainer"], [data-testid="stWidgetLabel"][disabled] {{ color: #222; }}
  .figure-text button {{ border-color: #222; }}
  :focus-visible {{ outline: 3px solid #000 !important; outline-offset: 2px; }}
}}
{FIGURE_TOOLS_CSS}
{FIGURE_BOX_CSS}
{CODE_CSS}
[data-testid="stMainBlockContainer"] {{ padding-top: 4.5rem; }}
[data-testid="stTopNavLink"] {{ padding: 0 {NAV_LINK_PADDING}; }}
a[data-testid="stTopNavLink"]:focus-visible {{ outline: 2px solid {FOCUS_RING};
  outline-offset: 1px; }}
[data-testid="stMainBlockContainer"] h1 {{ font-size: 2rem; padding: 0 0 0.5rem; }}
[data-testid="stMainBlockContainer"] h2 {{ font-size: 1.75rem; }}
@media (max-width: 640px) {{
  [data-testid="stMainBlockContainer"] h1 {{ display: none; }}
  [data-testid="stMainBlockContainer"] {{ padding-top: 3.5rem; }}
  [data-testid="stExpandSidebarButton"] {{ width: auto; gap: 0.3rem; padding: 0 0.5rem; }}
  [data-testid="stExpandSidebarButton"]::after {{ font-size: 1rem; color: {TEXT_GREY}; }}
  [data-testid="stHorizontalBlock"]:has(> [data-testid="stColumn"] [data-testid="stMetric"])
    > [data-testid="stColumn"] {{ min-width: calc(50% - 1rem); }}
  [data-testid="stMetricValue"] {{ font-size: 1.6rem; }}
}}
</style>"""

# Presenter mode: large type, little chrome, for a 1280 x 720 projector. Our own static CSS, on
# Streamlit's DOM: the main area is [data-testid=stMainBlockContainer], markdown text
# [data-testid=stMarkdown] p, a header [data-testid=stHeading]; st.title draws an h1,
# st.header an h2, st.subheader an h3, and a button's label is a p. The page's header
# [data-testid=stHeader] holds the navigation between views [data-testid=stTopNav], Streamlit's
# toolbar [data-testid=stToolbar], in which the sidebar's opener [data-testid=stExpandSidebarButton]
# and the main menu [data-testid=stMainMenu]: on every view in presenter mode the views and the
# menu are hidden and the header is see-through, but the opener stays (the sidebar's Presenter
# switch is the way out, on every view).
# The lesson's step label is the progress bar's text, the answer box an
# [data-testid=stAlert], a table in presenter mode an st.table ([data-testid=stTable]); a widget's
# label [data-testid=stWidgetLabel], a radio's options inside [data-testid=stRadio], an
# expander's title its summary.
PROSE = "1.3rem"  # 20.8 px: presenter mode's prose, and everything read with it
PRESENTER_CSS = f"""<style>
[data-testid="stHeader"], [data-testid="stHeader"] * {{ background: transparent;
  pointer-events: none; }}
[data-testid="stHeader"] [data-testid="stTopNav"], [data-testid="stMainMenu"] {{ display: none; }}
[data-testid="stHeader"] [data-testid="stExpandSidebarButton"] {{ pointer-events: auto; }}
[data-testid="stMainBlockContainer"] {{ padding-top: 1.2rem; padding-bottom: 1rem; }}
[data-testid="stMainBlockContainer"] h1 {{ display: none; }}
[data-testid="stMarkdown"] p, [data-testid="stCaptionContainer"], [data-testid="stAlert"] p,
[data-testid="stProgress"] p, [data-testid="stTable"] td, [data-testid="stTable"] th {{
  font-size: {PROSE}; line-height: 1.45;
}}
[data-testid="stMainBlockContainer"] [data-testid="stWidgetLabel"] p,
[data-testid="stMainBlockContainer"] [data-testid="stRadio"] p,
[data-testid="stMainBlockContainer"] [data-testid="stExpander"] summary p {{ font-size: {PROSE}; }}
[data-testid="stMainBlockContainer"] button p,
[data-testid="stMainBlockContainer"] .figure-text {{ font-size: 1.05rem; }}
[data-testid="stMainBlockContainer"] h2 {{ font-size: 1.9rem; padding-top: 0.2rem; }}
</style>"""
PRESENTER_QUESTION_CSS = """<style>
[data-testid="stMainBlockContainer"] [data-testid="stHeading"] h3 { font-size: 2.2rem; }
</style>"""


def page_style(present: bool = False) -> None:
    """Every page's look for this run: readable greys, and the content first on a phone; in
    presenter mode (`present`, on every view) large type and little chrome."""
    # style only: no space on the page; the sidebar's opener on a phone named in the page's words
    # (there the sidebar holds the views too: Streamlit moves its navigation into it)
    said = json.dumps(_("Views, text and model"), ensure_ascii=False)  # a CSS string
    opener = (
        "@media (max-width: 640px) "
        f'{{ [data-testid="stExpandSidebarButton"]::after {{ content: {said}; }} }}'
    )
    st.html(f"{PAGE_CSS}<style>{opener}</style>{PRESENTER_CSS if present else ''}")


# The page's own script: what CSS cannot do, such as letting a keyboard reach a region that
# scrolls, or giving each chart its text. It is app/assets/page/*.js, ES modules that import the
# library's shared names (encoder/web/shared.js: the palette, `element`, the words' `_()` in the
# page's language) and figures' tools (encoder/web/figure_tools.js), joined into one block
# (encoder.web.bundle), once per browser page: Streamlit runs an st.html element's script each
# time it is drawn.
PAGE_SCRIPTS = Path(__file__).parent / "assets" / "page"
PAGE_SCRIPT_FILES = sorted(PAGE_SCRIPTS.glob("*.js"))
PAGE_SCRIPT = "\n".join(
    [
        "if (!window.encoderExplorerPage) {",
        "window.encoderExplorerPage = true;",
        joined(
            PAGE_SCRIPTS / "index.js", "".join(f'import "./{p.name}";\n' for p in PAGE_SCRIPT_FILES)
        ),
        "}",
    ]
)


def page_script() -> None:
    """Every page's own script, run once in the browser (it keeps watching the page)."""
    st.html(f"<script>{PAGE_SCRIPT}</script>", unsafe_allow_javascript=True)


def page_language(language: str, direction: str) -> None:
    """Tell the page's script (app/assets/page/language.js) the page's language and direction,
    for the document's `lang` and `dir`, and the browser's words in it (app.i18n.browser, as
    JSON text that the script parses: never markup); nothing shows."""
    said = html.escape(json.dumps(browser_words(language), ensure_ascii=False), quote=False)
    st.html(
        f'<p data-page-language="{language}" data-page-direction="{direction}" hidden></p>'
        f"<p data-page-words hidden>{said}</p>"
    )


def announce(news: str) -> None:
    """Have a screen reader say `news` politely, once (app/assets/page/announce.js reads each
    new [data-announce] aloud through the page's one live region); nothing shows."""
    # in an attribute, not as text: nothing on the page reads as if shown twice (a search for
    # the page's text, a test's or a browser's find, meets the shown sentence alone)
    st.html(f'<p data-announce="{html.escape(news, quote=True)}" hidden></p>')


def presenter_question_style() -> None:
    """A lesson question's header, large in presenter mode."""
    st.html(PRESENTER_QUESTION_CSS)


# A view opened at its own path (/attention) has Streamlit's frontend look for its server there
# first, then one level up: /attention/_stcore/health and /attention/_stcore/host-config answer
# 404, two errors in the browser's console on every such visit (streamlit/streamlit#7074). The
# frontend asks only where `window.__streamlit.BACKEND_BASE_URL` says, when the page sets it
# before the frontend's module runs: that setting, which the frontend reads once as it loads, is
# the private part (no public option names the server's address). Streamlit serves one
# index.html for every path; the page served at a view's path (a single segment under the app's
# root) gets a script that names the app's root, the address one level up (behind a proxy's
# prefix too), added by an ASGI middleware that st.App (app/main.py) runs before its own: public
# API, under `streamlit run app/main.py` and `encoder-explorer` alike.
SERVER_AT_THE_ROOT = (
    b"<script>window.__streamlit = Object.assign({}, window.__streamlit, "
    b'{BACKEND_BASE_URL: new URL(".", window.location.href).href});</script>'
)
UNASKED = {b"accept-encoding", b"if-none-match", b"if-modified-since"}  # the page whole, fresh


class NameTheRootOnViewPaths:
    """ASGI middleware: the page served at a view's path names the app's root as the server's
    address (see above); every other request and answer passes untouched."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        root = [part for part in st.get_option("server.baseUrlPath").split("/") if part]
        path = [part for part in scope.get("path", "").split("/") if part]
        view = path and path[:-1] == root and "." not in path[-1]  # not a file (favicon.png)
        if scope["type"] != "http" or scope["method"] != "GET" or not view:
            await self.app(scope, receive, send)
            return
        started, body = {}, []

        async def named(message) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page, headers = b"".join(body), started["headers"]
            if dict(headers).get(b"content-type", b"").startswith(b"text/html"):
                page = page.replace(b"<head>", b"<head>" + SERVER_AT_THE_ROOT, 1)
            length = (b"content-length", str(len(page)).encode())
            headers = [*(h for h in headers if h[0] != b"content-length"), length]
            await send({**started, "headers": headers})
            await send({"type": "http.response.body", "body": page})

        headers = [h for h in scope["headers"] if h[0] not in UNASKED]
        await self.app({**scope, "headers": headers}, receive, named)
