// Status changes that a screen reader should hear without moving the focus (WCAG 4.1.3): a run
// finished, the class moved on, an answer counted. The page says them in the data-announce
// attributes of hidden elements (app/streamlit_private.py: announce); this script reads each
// new one aloud, politely, through one live region that outlives every rerun (a live region
// drawn anew with its text already in it is not read by every screen reader).
// DOM contract: the live region is [data-testid=page-announcer] (role="status"); its text is the
// latest announcements, in page order.

import { whenStill } from "./when_still.js";

let announced = "";

function announcer() {
  let region = document.querySelector("[data-testid=page-announcer]");
  if (!region) {
    region = document.createElement("div");
    region.setAttribute("data-testid", "page-announcer");
    region.setAttribute("role", "status");
    region.setAttribute("aria-live", "polite");
    region.className = "visually-hidden";
    document.body.appendChild(region);
  }
  return region;
}

function announceNews() {
  const said = [...document.querySelectorAll("[data-announce]")]
    .map((element) => element.dataset.announce.trim()).filter(Boolean).join(" ");
  if (said === announced) return;
  announced = said;
  announcer().textContent = said;
}

whenStill(announceNews, 200);
