// The view control (Streamlit's top navigation) is one keyboard stop, and Tab lands on the view
// that is open (WCAG 2.4.3), not on the first: the open view's link takes the focus, the
// arrow keys, Home and End move among the views (a roving tabindex), Enter opens one.
// DOM contract: the links are [data-testid=stTopNavLink]; the open one has aria-current="page";
// their nav element is named "Views".
function viewLinks() {
  return [...document.querySelectorAll("[data-testid=stTopNavLink]")];
}

function oneStopForTheViews() {
  const links = viewLinks();
  const open = links.find((link) => link.getAttribute("aria-current") === "page") || links[0];
  for (const link of links) link.tabIndex = link === open ? 0 : -1;
  const nav = open?.closest("nav");
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
  links[at].tabIndex = -1;
  links[to].tabIndex = 0;
  links[to].focus();
}

document.addEventListener("keydown", moveAmongViews);
whenStill(oneStopForTheViews, 100);
