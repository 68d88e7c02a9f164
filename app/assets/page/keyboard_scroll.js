// A region that scrolls (a formula wider than a phone, a table or code wider than its place)
// is one that a keyboard must reach (WCAG 2.1.1; axe: scrollable-region-focusable): while it
// scrolls it takes the focus (tabindex 0) and has a name, and gives both back once it fits.
// DOM contract: such a region carries data-keyboard-scroll.

import { _ } from "../../../encoder/web/shared.js";
import { CODE_SCROLLER, TABLE_SCROLLER } from "./streamlit_private.js";
import { whenStill } from "./when_still.js";

const SCROLLERS = [ // a region's selector, its name (in the page's language: shared.js's `_`)
  [".katex-display", () => _("Formula, scrollable")],
  [TABLE_SCROLLER, () => _("Table, scrollable")],
  [CODE_SCROLLER, () => _("Code, scrollable")],
  ["[data-testid=figure-table]", () => _("A chart's table, scrollable")],
];

function scrolls(element) {
  const style = getComputedStyle(element);
  const can = (overflow) => overflow === "auto" || overflow === "scroll";
  return (
    (can(style.overflowX) && element.scrollWidth > element.clientWidth) ||
    (can(style.overflowY) && element.scrollHeight > element.clientHeight)
  );
}

function markScrollers() {
  for (const [selector, name] of SCROLLERS) {
    for (const element of document.querySelectorAll(selector)) {
      const marked = element.hasAttribute("data-keyboard-scroll");
      const scrolling = scrolls(element);
      if (scrolling && !marked) {
        element.setAttribute("data-keyboard-scroll", "");
        element.setAttribute("tabindex", "0");
        element.setAttribute("role", "region");
        element.setAttribute("aria-label", name());
      } else if (!scrolling && marked) {
        for (const attribute of ["data-keyboard-scroll", "tabindex", "role", "aria-label"]) {
          element.removeAttribute(attribute);
        }
      }
    }
  }
}

// Not on every frame of a page being drawn, which would measure its layout again and again.
whenStill(markScrollers, 150, { resize: true });
