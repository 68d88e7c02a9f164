// A view opened (from the navigation, or by a button that opens one, such as the Training view's
// "Open the trained model") starts at its top. Streamlit's page keeps its scroll container where
// it was across a switch of pages, and holds a container scrolled to its bottom at the bottom
// while new content grows (its stick-to-the-bottom, made for chats): a view opened from the end
// of a long one was drawn scrolled to its own end, past the explorer. A wheel event is how that
// container learns that its reader scrolled away (it then lets go of the bottom); then the top.
// DOM contract: the page scrolls in an ancestor of streamlit_private.js's MAIN, or in MAIN itself.

import { MAIN } from "./streamlit_private.js";
import { whenChanged } from "./when_still.js";

let viewPath = location.pathname;

function pageScroller() {
  const main = document.querySelector(MAIN);
  for (let element = main; element; element = element.parentElement) {
    const overflow = getComputedStyle(element).overflowY;
    if (overflow === "auto" || overflow === "scroll") return element;
  }
  return main;
}

function topOfAnOpenedView() {
  if (location.pathname === viewPath) return;
  viewPath = location.pathname;
  const scroller = pageScroller();
  if (!scroller) return;
  for (let twice = 0; twice < 2; twice++) { // once to stop its scrolling, once to let go
    scroller.dispatchEvent(new WheelEvent("wheel", { deltaY: -1, bubbles: true }));
  }
  scroller.scrollTop = 0;
}

whenChanged(topOfAnOpenedView);
