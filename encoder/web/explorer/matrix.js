import { diverging, element, _, n_ } from "../shared.js";
import { svgNode } from "../figure_tools.js";
import {
  SIGN_MIN, SVG_SIDE, MINUS, MATRIX_PX, MATRIX_MIN_PX, LABEL_PX, peak, paint, fixed, legendOf,
  textWidth, shortToken, crisp, svgLegend,
} from "./draw.js";

/* The readings a matrix draws: the weights, what a head moves, the rollout. Each: its button's
 * label, `read(explorer)` -> (layer, head) -> reader | null, `stretched` (colours always end at
 * the largest value: norms are not shares), `named(explorer, layer, head)` for titles and the
 * readout, its readout's verb for a whole row, what its legend says it measures, and the words
 * of the figure's sentence (`gives` 0.7 `to` a key; 3 of 9 tokens `drives` `towards` a key). */
export const READINGS = {
  weights: { label: () => _("Matrix"), read: (explorer) => (layer, head) => explorer.full(layer, head)
    || explorer.tile(layer, head), stretched: false, measure: () => _("weight"),
  named: (explorer, layer, head) => explorer.headName(layer, head),
  best: (values) => _("{name}: {query} attends most to {key} {value}", values),
  sentence: (values, count, n) => (n === 1
    ? _("{head}: {query} gives {value} to {key}; 1 of 1 token puts most weight on {most}.", values)
    : n_("{head}: {query} gives {value} to {key}; {count} of {total} tokens puts most weight "
      + "on {most}.", "{head}: {query} gives {value} to {key}; {count} of {total} tokens put "
      + "most weight on {most}.", count, values)) },
  moves: { label: () => _("What it moves"), read: (explorer) => explorer.moved, stretched: true,
    measure: () => _("weight × value norm"),
    named: (explorer, layer, head) => _("layer {layer}, head {head} moves",
      { layer: explorer.shown().layerLabels[layer], head }),
    best: (values) => _("{name}: {query} moves most from {key} {value}", values),
    sentence: (values, count, n) => (n === 1
      ? _("{head}: {query} moves {value} from {key}; 1 of 1 token moves most from {most}.", values)
      : n_("{head}: {query} moves {value} from {key}; {count} of {total} tokens moves most "
        + "from {most}.", "{head}: {query} moves {value} from {key}; {count} of {total} tokens "
        + "move most from {most}.", count, values)) },
  rollout: { label: () => _("Rollout"), read: (explorer) => (layer) => explorer.rolled(layer),
    stretched: true, measure: () => _("rollout share"),
    named: (explorer, layer) => _("rollout after layer {layer}",
      { layer: explorer.shown().layerLabels[explorer.rolledLayer(layer)] }),
    best: (values) => _("{name}: {query} draws most on {key} {value}", values),
    sentence: (values, count, n) => (n === 1
      ? _("{head}: {query} draws {value} on {key}; 1 of 1 token draws most on {most}.", values)
      : n_("{head}: {query} draws {value} on {key}; {count} of {total} tokens draws most on "
        + "{most}.", "{head}: {query} draws {value} on {key}; {count} of {total} tokens draw "
        + "most on {most}.", count, values)) },
};

/** A matrix of one reading: query rows × key columns as square cells filling the stage, token
 * labels beside them while a cell is tall enough for text, and a note of the colours' range.
 * The functions below share `m`: {explorer, name, reading, read, built}, built = {canvas,
 * signs, setup, key, wrap, legend, scaleNote, large, scale, side, labelled, greyNote}. */
export function matrixMode(explorer, name) {
  const reading = READINGS[name];
  const m = { explorer, name, reading, read: reading.read(explorer), built: null };
  return { label: reading.label, overlays: false, oneHead: name !== "rollout", reading,
    read: m.read, pointed: () => explorer.state.cell, build: () => build(m), draw: () => draw(m),
    svg: () => svg(m), forget() { m.built = null; } };
}

/** The matrix's elements on the stage, sized to it: labelled while a cell is tall enough. */
function build(m) {
  const { explorer, name } = m;
  const setup = explorer.shown();
  const { tokens, n } = setup;
  const large = explorer.large();
  // the query labels' column and the key labels' band: as wide as the longest token needs
  const longest = Math.max(...tokens.map((token) => token.length));
  const labelsPx = Math.min(large ? 160 : 120, 16 + (large ? 11 : 8) * Math.max(6, longest));
  const wide = Math.min(MATRIX_PX, explorer.stage.clientWidth || MATRIX_PX);
  const tall = Math.max(MATRIX_MIN_PX, window.innerHeight - 160); // the bar and readout beside
  const labelled = (Math.min(wide, tall) - labelsPx) / n >= LABEL_PX[large ? "large" : "normal"];
  const side = labelled ? Math.min(wide, tall) - labelsPx : Math.min(wide, tall);
  const wrap = element("div", { class: labelled ? "aex-matrix" : "aex-matrix aex-bare",
    style: labelled ? `grid-template-columns:${labelsPx}px ${side}px;`
      + `grid-template-rows:${labelsPx}px ${side}px` : "" });
  const canvas = element("canvas", { "data-role": "matrix", "data-reading": name,
    class: "aex-grid", style: `width:${side}px;height:${side}px` });
  // B − A's signs as glyphs over cells tall enough for text (colour is not the only carrier)
  const signs = labelled ? element("canvas", { "data-role": "signs", class: "aex-signs",
    "aria-hidden": "true", style: `width:${side}px;height:${side}px` }) : null;
  if (labelled) {
    wrap.append(element("div", { class: "aex-corner" }, _("query ↓ key →")),
      ...tokenLabels(explorer, tokens, side / n), canvas, signs);
  } else { // too many tokens for labels: no empty label bands, a note above the cells
    wrap.append(element("div", { class: "aex-note" }, n_("{count} token (query ↓ key →): point "
      + "at a cell, or use ↑/↓, to read its tokens and value.", "{count} tokens (query ↓ key →): "
      + "point at a cell, or use ↑/↓, to read its tokens and value.", n)), canvas);
  }
  pointing(explorer, canvas, n, name);
  const scaleNote = element("div", { class: "aex-note", "data-role": "scale" });
  const legend = element("div");
  explorer.stage.replaceChildren(wrap, legend, scaleNote);
  m.built = { canvas, signs, setup, key: null, wrap, legend, scaleNote, large, scale: 1, side,
    labelled };
}

/** The key labels' band above the cells and the query labels' column beside them. */
function tokenLabels(explorer, tokens, cell) {
  const top = element("div", { class: "aex-top" });
  const left = element("div", { class: "aex-left" });
  tokens.forEach((token, i) => {
    top.append(element("div", { class: "aex-label", "data-side": "key",
      "data-index": String(i), style: `width:${cell}px`, dir: "auto" }, token));
    const row = element("div", { class: "aex-label", "data-side": "query",
      "data-index": String(i), style: `height:${cell}px;line-height:${cell}px`, dir: "auto" },
    token);
    row.addEventListener("mouseenter", () => explorer.hover(i));
    row.addEventListener("click", () => explorer.pin(i));
    left.append(row);
  });
  return [top, left];
}

/** The mouse on the cells: the cell pointed at read; a click opens the weights' cell in the
 * neuron view (neuron_view.js), or pins its query. */
function pointing(explorer, canvas, n, name) {
  const { state } = explorer;
  canvas.addEventListener("mousemove", (event) => {
    const box = canvas.getBoundingClientRect();
    const q = Math.floor(((event.clientY - box.top) / box.height) * n);
    const k = Math.floor(((event.clientX - box.left) / box.width) * n);
    if (q < 0 || k < 0 || q >= n || k >= n) return;
    state.cell = [q, k];
    explorer.hover(q);
  });
  canvas.addEventListener("mouseleave", () => { state.cell = null; explorer.hover(null); });
  canvas.addEventListener("click", () => {
    if (state.cell && name === "weights" && explorer.canShow("neuron")) {
      explorer.openNeuron(...state.cell); // how this cell's weight is made
    } else if (state.cell) explorer.pin(state.cell[0]);
  });
}

/** B − A's signs: visit(q, k, glyph, ink) for each cell whose |difference| is SIGN_MIN of the
 * scale or more, its ink black or white as the cell is light or dark. */
function eachSign(weights, scale, visit) {
  const n = weights.n;
  for (let q = 0; q < n; q++) {
    for (let k = 0; k < n; k++) {
      const v = weights.at(q, k);
      if (Math.abs(v) < SIGN_MIN * scale) continue;
      const [r, g, b] = diverging(v / scale);
      visit(q, k, v > 0 ? "+" : MINUS, 0.299 * r + 0.587 * g + 0.114 * b < 150 ? "#ffffff" : "#1b1b1b");
    }
  }
}

/** B − A's + and − over their cells; data-signs says how many. */
function drawSigns({ signs, side }, weights, scale) {
  const ratio = window.devicePixelRatio || 1;
  signs.width = Math.round(side * ratio);
  signs.height = Math.round(side * ratio);
  const context = signs.getContext("2d");
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  const cell = side / weights.n;
  context.font = `700 ${Math.max(12, Math.min(18, Math.round(cell * 0.8)))}px system-ui, sans-serif`;
  context.textAlign = "center";
  context.textBaseline = "middle";
  let count = 0;
  eachSign(weights, scale, (q, k, glyph, ink) => {
    context.fillStyle = ink;
    context.fillText(glyph, (k + 0.5) * cell, (q + 0.5) * cell);
    count += 1;
  });
  signs.dataset.signs = String(count);
}

/** What a look changes: the cells of the chosen head (painted once per head), and the chosen
 * query's label. */
function draw(m) {
  const { explorer, reading } = m;
  if (!m.built || m.built.setup !== explorer.shown() || m.built.large !== explorer.large()) build(m);
  const { state } = explorer;
  const key = `${state.setup}:${state.layer},${state.head}`;
  const weights = m.read(state.layer, state.head);
  if (!weights) {
    explorer.message.textContent = explorer.signed()
      ? _("B − A needs both setups at the same resolution.")
      : _("{name}: not in this payload.",
        { name: reading.named(explorer, state.layer, state.head) });
  } else if (m.built.key !== key) {
    paintHead(m, weights);
    m.built.key = key;
  }
  const q0 = explorer.query();
  for (const node of m.built.wrap.querySelectorAll(".aex-label[data-side=query]")) {
    node.classList.toggle("aex-active", Number(node.dataset.index) === q0);
  }
}

/** The chosen head's `weights` painted, with B − A's signs, the legend and the colours' note. */
function paintHead(m, weights) {
  const { explorer, reading, name, built } = m;
  const { state } = explorer;
  const scale = reading.stretched ? peak(weights) : explorer.colourScale([weights]);
  const width = explorer.window(state.layer, name);
  const masked = paint(built.canvas, weights, explorer.signed(), scale,
    (q, k) => explorer.masked(state.layer, q, k, name));
  built.canvas.dataset.window = String(width);
  built.canvas.dataset.masked = String(masked);
  built.scale = scale;
  if (built.signs) {
    built.signs.hidden = !explorer.signed();
    if (explorer.signed()) drawSigns(built, weights, scale);
  }
  const legend = legendOf(explorer.signed(), scale, reading.measure());
  built.legend.replaceWith(legend);
  built.legend = legend;
  const values = { scale: fixed(scale), low: `${MINUS}${fixed(scale)}`,
    high: `+${fixed(scale)}` };
  built.greyNote = masked ? n_("Grey: the {count} cell outside layer {layer}'s local window "
    + "of {width} (a query sees only the keys within {half} positions): masked, weight 0.",
  "Grey: the {count} cells outside layer {layer}'s local window of {width} (a query sees "
    + "only the keys within {half} positions): masked, weight 0.", masked,
  { count: String(masked), layer: explorer.shown().layerLabels[state.layer], width,
    half: Math.floor(width / 2) })
    : "";
  built.scaleNote.textContent = (explorer.signed()
    ? _("Colours: blue {low} (B less) to red {high} (B more).", values)
    : scale < 1 ? _("Colours: dark 0 to yellow {scale}, the largest here.", values)
      : _("Colours: dark 0 to yellow {scale}.", values))
    + (masked ? ` ${built.greyNote}` : "");
}

/** The look as a saved figure's drawing: its cells as an image (whole pixels per cell), the
 * tokens as text while a cell is tall enough, B − A's signs, the legend. */
function svg(m) {
  const { explorer, built } = m;
  const { state } = explorer;
  const weights = m.read(state.layer, state.head);
  if (!built || !weights || built.canvas.width !== weights.n) return null;
  const n = weights.n;
  const { tokens } = explorer.shown();
  const factor = Math.max(1, Math.floor(SVG_SIDE / n));
  const side = n * factor;
  const labelled = factor >= 10 && n === tokens.length;
  const band = labelled ? Math.ceil(10 + Math.max(...tokens.map((t) => textWidth(shortToken(t), 12))))
    : 0;
  const group = svgNode("g", { "font-size": 12, fill: "#1b1b1b" });
  group.append(svgNode("image", { x: band, y: band, width: side, height: side,
    href: crisp(built.canvas, factor), "data-role": "matrix" }));
  if (labelled) {
    tokens.forEach((token, i) => {
      const at = band + (i + 0.5) * factor;
      group.append(svgNode("text", { x: band - 4, y: at, "text-anchor": "end",
        "dominant-baseline": "central", "data-side": "query" }, shortToken(token)));
      group.append(svgNode("text", { transform: `translate(${at},${band - 4}) rotate(-90)`,
        "dominant-baseline": "central", "data-side": "key" }, shortToken(token)));
    });
  }
  if (explorer.signed() && factor >= 14) {
    const signs = svgNode("g", { "text-anchor": "middle", "dominant-baseline": "central",
      "font-weight": 700, "font-size": Math.min(18, Math.round(factor * 0.8)),
      "data-role": "signs" });
    eachSign(weights, built.scale, (q, k, glyph, ink) => signs.append(svgNode("text", {
      x: band + (k + 0.5) * factor, y: band + (q + 0.5) * factor, fill: ink }, glyph)));
    group.append(signs);
  }
  const [legend, legendWidth] = svgLegend(explorer.signed(), built.scale, m.reading.measure(), 0,
    band + side + 12);
  group.append(legend);
  let height = band + side + 30;
  if (built.greyNote) {
    group.append(svgNode("text", { x: 0, y: height + 8, fill: "#555555" }, built.greyNote));
    height += 20;
  }
  return { group, width: Math.max(band + side, legendWidth), height };
}
