// The view control (Streamlit's top navigation) is one keyboard stop, and Tab lands on the view
// that is open (WCAG 2.4.3), not on the first: the open view's link takes the focus, the
// arrow keys, Home and End move among the views (a roving tabindex), Enter opens one.
// DOM contract: the links are streamlit_private.js's VIEW_LINKS; the open one has
// aria-current="page"; their nav element is named "Views".

import { _ } from "../../../encoder/web/shared.js";
import { VIEW_LINKS } from "./streamlit_private.js";
import { whenStill } from "./when_still.js";

function viewLinks() {
  return [...document.querySelectorAll(VIEW_LINKS)];
}

// The one stop: the link the keys last moved to while the focus is among the views (a page
// that changes then must not make the open view a second stop), else the open view.
function theStop(links) {
  const focused = links.find((link) => link === document.activeElement);
  return focused || links.find((link) => link.getAttribute("aria-current") === "page") || links[0];
}

function stopAt(links, stop) {
  for (const link of links) link.tabIndex = link === stop ? 0 : -1;
}

function oneStopForTheViews() {
  const links = viewLinks();
  const stop = theStop(links);
  stopAt(links, stop);
  const nav = stop?.closest("nav");
  if (nav && (!nav.hasAttribute("aria-label") || nav.hasAttribute("data-named-views"))) {
    nav.setAttribute("data-named-views", ""); // named here: renamed in the page's language
    if (nav.getAttribute("aria-label") !== _("Views")) nav.setAttribute("aria-label", _("Views"));
  }
}

const VIEW_KEYS = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };

function moveAmongViews(event) {
  const links = viewLinks();
  const at = links.indexOf(event.target);
  if (at < 0 || event.altKey || event.ctrlKey || event.metaKey) return;
  let to;
  if (event.key in VIEW_KEYS) to = (at + VIEW_KEYS[event.key] + links.length) % links.length;
  else if (event.key === "Home") to = 0;
  else if (event.key === "End") to = links.length - 1;
  else return;
  event.preventDefault();
  stopAt(links, links[to]);
  links[to].focus();
}

document.addEventListener("keydown", moveAmongViews);
whenStill(oneStopForTheViews, 100);
