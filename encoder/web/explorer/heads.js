/** The explorer's every-head mode (its modes: explorer/lines.js). */
import { element, _, n_ } from "../shared.js";
import { svgNode } from "../figure_tools.js";
import { paint, legendOf, crisp, svgLegend } from "./draw.js";

/** Every head: one tile per head, the chosen one outlined; a click opens it in the matrix. The
 * functions below share `m`: {explorer, built}, built = {key, setup, tiles: [canvases], outline,
 * chosen, scale}. */
export function headsMode(explorer) {
  const m = { explorer, built: null };
  return { label: () => _("Every head"), overlays: false, oneHead: false, pointed: () => null,
    build: () => build(m), draw: () => draw(m), svg: () => svg(m), forget() { m.built = null; } };
}

/** The grid of tiles on the stage, one colour scale for all, with its note and legend. */
function build(m) {
  const { explorer } = m;
  const { tile } = explorer;
  const setup = explorer.shown();
  const grid = element("div", { class: "aex-heads",
    style: `grid-template-columns: auto repeat(${setup.heads}, 1fr)` });
  grid.append(element("div"));
  for (let h = 0; h < setup.heads; h++) {
    grid.append(element("div", { class: "aex-note" }, _("H{head}", { head: h })));
  }
  const drawn = [];
  for (let l = 0; l < setup.layers; l++) {
    for (let h = 0; h < setup.heads; h++) if (tile(l, h)) drawn.push(tile(l, h));
  }
  const scale = drawn.length ? explorer.colourScale(drawn) : 1;
  const tiles = tilesInto(grid, explorer, setup, scale);
  const outline = element("div", { class: "aex-outline", "aria-hidden": "true" });
  grid.append(outline);
  const note = setup.tiles
    ? n_("Each tile is one head, drawn in blocks of {count} token; click a tile to open it.",
      "Each tile is one head, drawn in blocks of {count} tokens; click a tile to open it.",
      Math.ceil(setup.n / setup.tiles.size))
    : _("Each tile is one head's query × key weights; click a tile to open it.");
  explorer.stage.replaceChildren(element("div", { class: "aex-note" }, note), grid,
    legendOf(explorer.signed(), scale, _("weight")));
  m.built = { key: explorer.state.setup, setup, tiles, outline, chosen: null, scale };
}

/** A row a layer, its label then a tile a head, painted at `scale`, into `grid`: the tiles. */
function tilesInto(grid, explorer, setup, scale) {
  const { state, tile, headName } = explorer;
  const tiles = [];
  for (let l = 0; l < setup.layers; l++) {
    grid.append(element("div", { class: "aex-note" }, _("L{layer}", { layer: setup.layerLabels[l] })));
    for (let h = 0; h < setup.heads; h++) {
      const canvas = element("canvas", { "data-role": "tile", "data-layer": String(l),
        "data-head": String(h), title: headName(l, h), class: "aex-tile" });
      const weights = tile(l, h);
      if (weights) paint(canvas, weights, explorer.signed(), scale);
      canvas.addEventListener("mouseenter",
        () => explorer.say(_("{head}: click to open it", { head: headName(l, h) })));
      canvas.addEventListener("click", () => { state.mode = "matrix"; explorer.choose(l, h); });
      grid.append(canvas);
      tiles.push(canvas);
    }
  }
  return tiles;
}

/** The chosen head's tile outlined (a head switch touches two tiles' attributes and the
 * outline). */
function draw(m) {
  const { state } = m.explorer;
  const setup = m.explorer.shown();
  if (!m.built || m.built.key !== state.setup || m.built.setup !== setup) build(m);
  const { built } = m;
  const chosen = built.tiles[state.layer * setup.heads + state.head];
  if (chosen !== built.chosen) {
    if (built.chosen) built.chosen.removeAttribute("aria-current");
    chosen.setAttribute("aria-current", "true");
    const [row, column] = [state.layer + 2, state.head + 2]; // after the labels' row, column
    built.outline.style.gridArea = `${row} / ${column} / ${row + 1} / ${column + 1}`;
    built.chosen = chosen;
  }
}

/** Every head as a saved figure's drawing: its tiles as images, the layers' and heads'
 * labels, the chosen head outlined, the legend. */
function svg({ explorer, built }) {
  if (!built) return null;
  const { setup, tiles, scale } = built;
  const { state } = explorer;
  const size = Math.max(12, Math.min(72, Math.floor(900 / setup.heads)));
  const [left, top, gap] = [44, 20, 3];
  const group = svgNode("g", { "font-size": 12, fill: "#1b1b1b" });
  for (let h = 0; h < setup.heads; h++) {
    group.append(svgNode("text", { x: left + h * (size + gap) + size / 2, y: 14,
      "text-anchor": "middle" }, _("H{head}", { head: h })));
  }
  for (let l = 0; l < setup.layers; l++) {
    const y = top + l * (size + gap);
    group.append(svgNode("text", { x: left - 6, y: y + size / 2, "text-anchor": "end",
      "dominant-baseline": "central" }, _("L{layer}", { layer: setup.layerLabels[l] })));
    for (let h = 0; h < setup.heads; h++) {
      const canvas = tiles[l * setup.heads + h];
      if (!canvas.width || !explorer.tile(l, h)) continue;
      group.append(svgNode("image", { x: left + h * (size + gap), y, width: size, height: size,
        href: crisp(canvas, Math.max(1, Math.ceil(size / canvas.width))),
        "data-layer": l, "data-head": h }));
    }
  }
  group.append(svgNode("rect", { x: left + state.head * (size + gap) - 1.5,
    y: top + state.layer * (size + gap) - 1.5, width: size + 3, height: size + 3, fill: "none",
    stroke: "#D55E00", "stroke-width": 3, "data-role": "chosen" }));
  const bottom = top + setup.layers * (size + gap) + 10;
  const [legend, legendWidth] = svgLegend(explorer.signed(), scale, _("weight"), 0, bottom);
  group.append(legend);
  return { group, width: Math.max(left + setup.heads * (size + gap), legendWidth),
    height: bottom + 18 };
}
