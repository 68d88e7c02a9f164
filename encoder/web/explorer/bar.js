/**
 * The explorer's bar and chips (explorer `x`, attention_explorer.js's mount): the modes, the
 * setups, the layer and the title; the heads overlaid in lines, each chip the legend of its
 * head's colour and dash.
 */
import { _, element } from "../shared.js";
import { svgNode } from "../figure_tools.js";
import { HEAD_COLOURS, HEAD_DASHES, MAX_OVERLAY } from "./draw.js";
import { READINGS } from "./matrix.js";

/** The bar's elements: the modes' group, the setups' group, the layer's select and the title. */
export function buildBar(x) {
  const bar = element("div", { class: "aex-bar" });
  const modeButtons = element("div", { class: "aex-group", role: "group", "aria-label": "View" });
  const setups = element("div", { class: "aex-group", role: "group", "aria-label": "Setup" });
  const layerPick = element("select", { "data-testid": "explorer-layer", "data-role": "layer",
    "aria-label": "Layer", class: "aex-layer" });
  layerPick.addEventListener("change", () => x.choose(Number(layerPick.value), x.state.head));
  const layerLabel = element("label", { class: "aex-layer-label" });
  const layerWord = document.createTextNode("Layer ");
  layerLabel.append(layerWord, layerPick);
  const title = element("div", { class: "aex-title" });
  bar.append(modeButtons, setups, layerLabel, title);
  return { bar, modeButtons, setups, layerPick, layerWord, title };
}

/** A button for each of the explorer's modes (x.modes), in their order. */
export function addModeButtons(x) {
  for (const [name, { label }] of Object.entries(x.modes)) {
    const button = element("button", { type: "button", "data-role": "mode", "data-mode": name },
      label());
    button.addEventListener("click", () => { x.state.mode = name; x.render(); x.settle(); });
    x.modeButtons.append(button);
  }
}

/** The bar as the look is: its buttons pressed or hidden, the layers, the setups, the title. */
export function drawBar(x) {
  const setup = x.shown();
  for (const button of x.modeButtons.children) {
    button.setAttribute("aria-pressed", String(button.dataset.mode === x.state.mode));
    button.hidden = !available(x, button.dataset.mode);
  }
  if (x.layerPick.options.length !== setup.layers
    || [...x.layerPick.options].some((o, i) => o.textContent !== String(setup.layerLabels[i]))) {
    x.layerPick.replaceChildren(...setup.layerLabels.map((label, i) => element("option",
      { value: String(i) }, String(label))));
  }
  x.layerPick.value = String(x.state.layer);
  const names = x.b() ? [x.a().name, x.b().name].concat(x.comparable() ? ["B-A"] : []) : [];
  if (names.join("\n") !== [...x.setups.children].map((n) => n.dataset.setup).join("\n")) {
    x.setups.replaceChildren();
    for (const name of names) {
      const button = element("button", { type: "button", "data-role": "setup",
        "data-setup": name, "aria-pressed": String(name === x.state.setup) },
      name === "B-A" ? "B − A" : name);
      button.addEventListener("click", () => { x.state.setup = name; x.render(); x.settle(); });
      x.setups.append(button);
    }
  }
  for (const button of x.setups.children) {
    button.setAttribute("aria-pressed", String(button.dataset.setup === x.state.setup));
  }
  x.title.textContent = x.signed() ? _("{name}: B − A", { name: shownName(x) }) : shownName(x);
}

/** What the stage shows, in words: "layer 2 head 1", "... moves", "rollout after layer 5". */
export function shownName(x) {
  return (x.mode().reading || READINGS.weights).named(x, x.state.layer, x.state.head);
}

/** Whether the payload holds what mode `name` draws (the readings are optional). */
export function available(x, name) {
  if (name === "moves") return x.data.setups.some((setup) => setup.norms.size > 0);
  if (name === "rollout") return x.data.setups.some((setup) => setup.rollout.size > 0);
  if (name === "neuron") return x.asks || x.data.setups.some((setup) => setup.qk.size > 0);
  return true;
}

export function overlaid(x) {
  const heads = [[x.state.layer, x.state.head]];
  for (const pair of x.state.overlay) {
    if (pair[0] !== x.state.layer || pair[1] !== x.state.head) heads.push(pair);
  }
  return heads.slice(0, MAX_OVERLAY);
}

export function drawChips(x) {
  x.chips.replaceChildren();
  if (!x.mode().overlays) return;
  const on = overlaid(x);
  const colourOf = (layer, head) => on.findIndex(([l, h]) => l === layer && h === head);
  x.chips.append(element("span", { class: "aex-note" },
    _("Layer {layer}:", { layer: x.shown().layerLabels[x.state.layer] })));
  for (let head = 0; head < x.shown().heads; head++) {
    const index = colourOf(x.state.layer, head);
    const chip = element("button", { type: "button", "data-role": "chip",
      "data-layer": String(x.state.layer), "data-head": String(head),
      "aria-pressed": String(index >= 0) }, _("head {head}", { head }));
    if (index >= 0) { // its line's colour, and a sample of its dash: the legend of the lines
      chip.style.setProperty("--chip", x.signed() ? "#1b1b1b" : HEAD_COLOURS[index]); // B − A:
      // the lines' colours are their signs
      const dash = HEAD_DASHES[index];
      chip.dataset.dash = dash.length ? dash.join(" ") : "none";
      const sample = svgNode("svg", { class: "aex-dash", width: 28, height: 10,
        "aria-hidden": "true" });
      sample.append(svgNode("line", { x1: 0, y1: 5, x2: 28, y2: 5, "stroke-width": 2.5,
        stroke: x.signed() ? "#1b1b1b" : HEAD_COLOURS[index], "stroke-dasharray": chip.dataset.dash }));
      chip.append(sample);
    }
    chip.addEventListener("click", () => toggleChip(x, x.state.layer, head));
    x.chips.append(chip);
  }
}

export function toggleChip(x, layer, head) {
  const isSelected = layer === x.state.layer && head === x.state.head;
  const at = x.state.overlay.findIndex(([l, h]) => l === layer && h === head);
  if (isSelected) {
    const rest = overlaid(x).slice(1);
    if (!rest.length) return; // one head always stays drawn
    x.state.overlay = rest.slice(1);
    [x.state.layer, x.state.head] = rest[0];
  } else if (at >= 0) {
    x.state.overlay.splice(at, 1);
  } else if (overlaid(x).length < MAX_OVERLAY) {
    x.state.overlay.push([layer, head]);
  } else {
    x.say(_("At most {count} heads at once: switch one off first.", { count: MAX_OVERLAY }));
    return;
  }
  x.render();
  x.settle();
}

