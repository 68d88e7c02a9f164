/**
 * The explorer on the page (explorer `x`, attention_explorer.js's mount): its elements, its
 * words, and what a look, a choice and a settled look redraw.
 */
import { _, element, n_, rightToLeft, speakWith, spoken } from "../shared.js";
import { figureControls } from "../figure_tools.js";
import { available, buildBar, drawBar, drawChips, shownName } from "./bar.js";
import { SETTLE_MS } from "./draw.js";
import { onKey } from "./keyboard.js";
import { decodePayload } from "./payload.js";
import { describe, figureSentence, figureSvg, figureTable, figureTitle } from "./readout.js";
import { openAt } from "./state.js";

/** The explorer's elements, put in `host`: the root, the bar, the chips, the message, the stage
 * (the figure), the readout and the figure's table and "Save as…" (figure_tools.js). */
export function buildElements(x, host) {
  const root = element("div", { "data-testid": "attention-explorer", class: "aex", tabindex: "0",
    role: "application", "aria-label": "Attention explorer" });
  const bar = buildBar(x);
  const chips = element("div", { class: "aex-chips", role: "group", "aria-label": "Heads drawn" });
  const message = element("div", { class: "aex-message", "data-role": "message", role: "alert" });
  const stage = element("div", { class: "aex-stage", "data-role": "figure", role: "figure",
    "aria-label": "Attention explorer" });
  const readout = element("div", { class: "aex-readout", "data-role": "readout",
    "aria-live": "polite" });
  // the look's table and "Save as…", read only when used
  const controls = figureControls({ title: () => figureTitle(x), table: () => figureTable(x),
    svg: () => figureSvg(x) });
  root.append(bar.bar, chips, message, stage, readout, controls);
  root.addEventListener("keydown", (event) => onKey(x, event));
  host.append(root);
  return { ...bar, root, chips, message, stage, readout, controls };
}

function setAttributes(x) {
  const { root, state } = x;
  root.dataset.layer = String(state.layer);
  root.dataset.head = String(state.head);
  root.dataset.query = x.query() === null ? "" : String(x.query());
  root.dataset.pinned = String(state.pinned !== null);
  root.dataset.setup = state.setup;
  root.dataset.mode = state.mode;
  root.dataset.large = String(x.large());
}

/** The bar's and the regions' words, and the direction, in the payload's language (none
 * given: the page's, shared.js's speakWith). */
export function speak(x) {
  speakWith(x.data.words, x.data.lang, x.data.direction);
  x.root.setAttribute("dir", rightToLeft() ? "rtl" : "ltr");
  x.root.setAttribute("lang", spoken());
  x.root.setAttribute("aria-label", _("Attention explorer"));
  x.stage.setAttribute("aria-label", _("Attention explorer"));
  x.modeButtons.setAttribute("aria-label", _("View"));
  x.setups.setAttribute("aria-label", _("Setup"));
  x.layerPick.setAttribute("aria-label", _("Layer"));
  x.layerWord.textContent = _("Layer") + " ";
  x.chips.setAttribute("aria-label", _("Heads drawn"));
  for (const button of x.modeButtons.children) {
    button.textContent = x.modes[button.dataset.mode].label();
  }
  x.controls.relabel();
}

/** Name the stage by the look's sentence, and redraw an open table: when the look settles. */
export function nameFigure(x) {
  if (!x.data) return;
  x.stage.setAttribute("aria-label", figureSentence(x));
  x.controls.refresh();
}

/** Once the look has not changed for SETTLE_MS: the figure named, the host told. */
export function settle(x) {
  const { state } = x;
  clearTimeout(x.settleTimer);
  x.settleTimer = setTimeout(() => {
    nameFigure(x);
    x.onSelect({ layer: state.layer, head: state.head, query: state.pinned, setup: state.setup,
      mode: state.mode, full: x.full(state.layer, state.head) !== null });
  }, SETTLE_MS);
}

export function choose(x, layer, head) {
  const setup = x.shown();
  x.state.layer = Math.min(Math.max(layer, 0), setup.layers - 1);
  x.state.head = Math.min(Math.max(head, 0), setup.heads - 1);
  render(x);
  settle(x);
}

export function hover(x, q) {
  x.state.hovered = q;
  look(x);
}

export function pin(x, q) {
  x.state.pinned = x.state.pinned === q ? null : q;
  look(x);
  settle(x);
}

/** Redraw what a look changes (cheap): the mode's drawing, attributes, readout. */
export function look(x) {
  const { state } = x;
  setAttributes(x);
  x.mode().draw();
  const q = x.query();
  const cell = x.mode().pointed();
  if (x.mode().sentence) { // the neuron view: its cell's sentence
    x.say(x.mode().sentence());
  } else if (cell && state.hovered !== null) {
    x.say(describe(x, state.layer, state.head, cell[0], cell[1]));
  } else if (q !== null) {
    const said = describe(x, state.layer, state.head, q, null);
    x.say(state.pinned !== null ? _("{readout} (pinned)", { readout: said }) : said);
  } else {
    x.say(_("{name}: point at a token, or use ↑/↓ and Enter", { name: shownName(x) }));
  }
}

/** Redraw everything for the state as it is (a new payload, head, mode or setup). */
export function render(x) {
  const { state, message } = x;
  message.textContent = "";
  if (!x.data) return;
  if (state.setup === "B-A" && !x.comparable()) state.setup = x.a().name;
  if (!x.data.setups.some((s) => s.name === state.setup) && state.setup !== "B-A") {
    state.setup = x.a().name;
  }
  if (!available(x, state.mode)) state.mode = "lines";
  x.root.classList.toggle("aex-large", x.large());
  const setup = x.shown();
  state.layer = Math.min(state.layer, setup.layers - 1);
  state.head = Math.min(state.head, setup.heads - 1);
  if (x.query() !== null && x.query() >= setup.n) { state.pinned = null; state.hovered = null; }
  if (x.b() && !x.comparable()) {
    message.textContent = _("B − A needs the same layers, heads and tokens in both setups.");
  }
  drawBar(x);
  if (x.mode().overlays || x.chips.firstChild) drawChips(x);
  for (const other of Object.values(x.modes)) if (other !== x.mode()) other.forget();
  if (state.mode === "rollout" && x.rolledLayer(state.layer) !== state.layer) {
    message.textContent = n_("Only the rollout after the last layer was sent for {count} "
      + "token: it is drawn whichever layer is chosen.", "Only the rollout after the last layer "
      + "was sent for {count} tokens: it is drawn whichever layer is chosen.", setup.n);
  } else if (x.mode().oneHead && !x.full(state.layer, state.head)) {
    message.textContent = _("{head} is drawn in blocks until its full resolution arrives.",
      { head: x.headName(state.layer, state.head) });
  }
  look(x);
}

/** A new payload (a rerun's): drawn with the selection kept, or where its header's start says
 * when that start is new (`modes`: the modes' names). */
export function receive(x, next, modes) {
  try {
    x.data = decodePayload(next);
  } catch (error) {
    x.data = null;
    x.stage.replaceChildren();
    x.message.textContent = _("Nothing to draw: {error}", { error: error.message });
    return;
  }
  const at = x.data.start && JSON.stringify(x.data.start);
  if (at && at !== x.opened) openAt(x.state, x.data.start, modes);
  x.opened = at || x.opened; // the payload start last opened at, so a rerun keeps the selection
  speak(x);
  for (const each of Object.values(x.modes)) each.forget();
  render(x);
  nameFigure(x);
}

/** Everything said again in the language spoken now (the page's changed), the data as it is:
 * nothing decoded or computed again. */
export function relabel(x) {
  if (!x.data) return;
  speak(x);
  render(x);
  nameFigure(x);
}
