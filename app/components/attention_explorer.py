"""The attention explorer on the page: a Custom Components v2 host of encoder/web's ES module.

The component is registered once, with the library's module and stylesheet as its code; user text
only ever travels in the payload (raw bytes, no base64, no JSON of numbers). Every look (hover,
query, pin, mode, setup, another head) is handled in the browser and sends nothing; the explorer
writes its layer and head into the page's URL at once (history.replaceState, no message), and
reports them to Python as the component's `selection` state only once they settle (REPORT_AFTER_MS
without another head), so the session's `layer` and `head` follow with one cheap rerun.
Streamlit sends an unchanged payload again as a reference to the one the browser holds.

A still explorer (`report=False`: the lesson's steps, whose head is the step's, not the
Attention view's) opens where its payload's header says, and neither writes the URL nor reports
to the session. CCv2 data is bytes or JSON, not both, so the flag is a second registration of
the same module with its own few lines of glue.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from encoder.web import asset

NAME = "encoder_explorer.attention_explorer"
STILL_NAME = "encoder_explorer.attention_explorer_still"
REPORT_AFTER_MS = 1000  # quiet time after the last head change before Python hears of it

# Appended to the module's text: the component's default export (CCv2 calls it again with each
# new payload for the same element, and calls the last function it returned when it unmounts).
HOST_JS = """
const HOSTED = new WeakMap();

function writeUrl(layer, head) {
  const url = new URL(window.location.href);
  url.searchParams.set("layer", String(layer));
  url.searchParams.set("head", String(head));
  window.history.replaceState(window.history.state, "", url);
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  let hosted = HOSTED.get(parentElement);
  if (hosted) {
    hosted.explorer.update(data);
  } else if (!REPORTS) {
    hosted = { timer: null, explorer: mount(parentElement, data) };
    HOSTED.set(parentElement, hosted);
  } else {
    const url = new URLSearchParams(window.location.search);
    hosted = { sent: null, timer: null };
    const report = (chosen) => {
      writeUrl(chosen.layer, chosen.head);
      const key = `${chosen.layer},${chosen.head}`;
      clearTimeout(hosted.timer);
      if (key === hosted.sent) return;
      hosted.timer = setTimeout(() => {
        hosted.sent = key;
        setStateValue("selection", { layer: chosen.layer, head: chosen.head });
      }, chosen.full ? REPORT_AFTER_MS : 0);
    };
    hosted.sent = `${Number(url.get("layer")) || 0},${Number(url.get("head")) || 0}`;
    hosted.explorer = mount(parentElement, data, {
      selection: { layer: url.get("layer"), head: url.get("head") },
      onSelect: report,
    });
    HOSTED.set(parentElement, hosted);
  }
  return () => {
    clearTimeout(hosted.timer);
    hosted.explorer.destroy();
    HOSTED.delete(parentElement);
  };
}
"""


def _host(reports: bool) -> str:
    flags = f"\nconst REPORT_AFTER_MS = {REPORT_AFTER_MS};\nconst REPORTS = {str(reports).lower()};"
    return asset("attention_explorer.js") + flags + HOST_JS


_CSS = asset("attention_explorer.css")
_explorer = st.components.v2.component(NAME, js=_host(True), css=_CSS)
_still_explorer = st.components.v2.component(STILL_NAME, js=_host(False), css=_CSS)


def attention_explorer(
    payload: bytes, *, key: str, on_select: Callable[[], None] | None = None, report: bool = True
) -> dict | None:
    """Draw the explorer for `payload` (encoder.web.payload's bytes); returns the settled
    selection {"layer", "head"} once the browser has reported one, else None. `on_select` runs
    (as a widget callback) when it changes. `report=False`: a still explorer, opened where the
    payload's header says; it reports nothing and leaves the URL alone (returns None)."""
    if not report:
        _still_explorer(key=key, data=payload)
        return None
    result = _explorer(
        key=key,
        data=payload,
        default={"selection": None},
        on_selection_change=on_select or (lambda: None),
    )
    return result.selection
