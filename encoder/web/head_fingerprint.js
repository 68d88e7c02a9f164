/**
 * Head fingerprint: what every attention head does over a corpus, drawn as SVG (the Heads across
 * a corpus view's figure): a heatmap of behaviours (rows: its mean share of attention to the
 * previous token, the next, itself, [CLS], [SEP], punctuation, and its spread) by heads
 * (columns: every head, layer by layer, a white line between two layers), viridis colours from
 * zmin to zmax with a colour bar. Under the columns, the heads' numbers (as many as fit) and each
 * layer's name under its heads.
 *
 * An ES module, no framework, no network: each host's glue calls `mount`, the whole joined
 * into one file per host (encoder/web/hosts.py). The stylesheet is head_fingerprint.css beside this file.
 *
 *   const chart = mount(host, data);   // host: an element or shadow root
 *   chart.update(newData);             // another corpus, model or language
 *   chart.destroy();
 *
 * data: {title, notes?: string[] (lines under the title), behaviours: string[b] (each row's
 *        name), heads: [layer, head][n] (each column's head, layer by layer, from 0),
 *        values: (number|null)[b][n] (a behaviour's value for each head; null: none),
 *        zmin, zmax (the colour scale's ends), scale (the colour bar's title), lang?, words?}
 *        (head_fingerprint.py beside it: fingerprint_data). Every word but the module's own (the
 *        readout's, the tools', the plot's label, the layers' names) comes translated; with
 *        `lang` and `words` (app.i18n.browser) the module's own are in that language too.
 *
 * Reading it: the mouse over a cell, or the keyboard (the plot is one Tab stop: ← and → the head
 * before and after in the direction they are drawn, ↑ and ↓ the behaviour above and below, Home
 * the first head, End the last; Escape clears), chooses a cell: a ring marks it, its head's
 * number and its behaviour's name turn bold, and the readout below gives its value. In a
 * right-to-left language the figure is mirrored: the behaviours named on the right, the first
 * head on the right, the colour bar on the left.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="head-fingerprint"] role="figure", named by the title, with
 *            data-behaviours and data-heads (how many), data-draw-ms (the last draw's time),
 *            data-cell (the chosen cell, "behaviour,head": its row and its column; "" when
 *            none), data-width (the width it was drawn for)
 *   plot     the svg [data-role="plot"]: tabindex="0", role="application",
 *            aria-roledescription, aria-label (what it shows, the highest head of each
 *            behaviour, how to read it); inside it [data-role="cell"][data-row=i][data-head=j]
 *            (the cells, their colour in `fill`), [data-role="row-label"][data-row=i] (a
 *            behaviour's name), [data-role="tick"] (the heads' numbers shown: data-head, the
 *            column, data-layer and data-layer-head, its layer and its number in it),
 *            [data-role="layer-label"][data-layer=l] (a layer's name under its heads),
 *            [data-role="layer-line"] (the white line between two layers),
 *            [data-role="colour-bar"] and [data-role="ring"] (the chosen cell's mark, hidden
 *            when none)
 *   readout  [data-role="readout"], aria-live="polite": the chosen cell's head, behaviour and
 *            value
 *   tools    figure_tools.js's [data-testid=figure-text]: "Show as a table" (a row a head: its
 *            layer, its number, its value of every behaviour) and "Save as…" (the figure as SVG
 *            or PNG, the table as CSV)
 *   message  [data-role="message"]: why nothing is drawn
 */
import { viridis, rgb, element, rightToLeft, _, n_ } from "./shared.js";
import {
  figureSaid, svgNode, FIGURE_CHAR, mountFigure, colourBarScale, colourBar, figureRing,
  figureRingAt
} from "./figure_tools.js";

const PRINT_TEXT = 14; // px: every label (none under 14 px)
const PRINT_ROW = 28; // px: a behaviour's row
const PRINT_TOP = 32; // px: above the rows, the colour bar's title
const PRINT_MIN_WIDTH = 300; // px: narrower than this, drawn this wide (the page scrolls)
const PRINT_LAYER_GAP = 3; // px: the white line between two layers' heads
const PRINT_SCALE_GAP = 14; // px: between the heatmap and its colour bar
const PRINT_TICK_ROOM = PRINT_TEXT; // px: between two upright head numbers, at least
const PRINT_EMPTY = "#d9d9d9"; // a cell with no value
const PRINT_ARROWS = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

const printPrompt = () =>
  _("Hover a cell, or Tab to the plot and use the arrow keys: one head's value of one behaviour.");

/** A label's width in px at `size`, estimated. */
const printWidth = (text, size = PRINT_TEXT) => Math.ceil([...String(text)].length * FIGURE_CHAR * size);

/** Why `data` cannot be drawn, or "". */
function printProblem(data) {
  const rows = data && Array.isArray(data.behaviours) ? data.behaviours.length : 0;
  const count = data && Array.isArray(data.heads) ? data.heads.length : 0;
  if (!rows || !count) return _("nothing to draw");
  const pairs = data.heads.every((pair) => Array.isArray(pair) && pair.length === 2
    && pair.every((i) => Number.isInteger(i) && i >= 0));
  if (!pairs) return "the heads are not (layer, head) pairs";
  const value = (v) => v === null || Number.isFinite(v);
  const ok = Array.isArray(data.values) && data.values.length === rows
    && data.values.every((row) => Array.isArray(row) && row.length === count && row.every(value));
  if (!ok) return `the heatmap does not have ${rows} x ${count} values`;
  if (!(Number.isFinite(data.zmin) && Number.isFinite(data.zmax) && data.zmax > data.zmin)) {
    return `the colour scale from ${data.zmin} to ${data.zmax} is empty`;
  }
  return "";
}

/** `value` on the colour scale of `d`, as a CSS colour (viridis from zmin to zmax; grey: none). */
function printColour(d, value) {
  if (value === null) return PRINT_EMPTY;
  return rgb(viridis((value - d.zmin) / (d.zmax - d.zmin)));
}

/** A value as the readout and the label say it ("–": none). */
const printSaid = (value) => (value === null ? "–" : figureSaid(value));

/** The columns of `heads`, `band` px each from 0 (drawn left to right), PRINT_LAYER_GAP more
 * where the layer changes: {starts (each column's left edge), groups ([{layer, first, last, x0,
 * x1}]: each layer's columns and their extent), end}. */
function printColumns(heads, band) {
  const starts = [];
  const groups = [];
  let x = 0;
  heads.forEach(([layer], j) => {
    if (j > 0 && layer !== heads[j - 1][0]) x += PRINT_LAYER_GAP;
    if (!groups.length || groups[groups.length - 1].layer !== layer) {
      groups.push({ layer, first: j, last: j, x0: x, x1: x });
    }
    const group = groups[groups.length - 1];
    starts.push(x);
    x += band;
    group.last = j;
    group.x1 = x;
  });
  return { starts, groups, end: x };
}

/** Which heads' numbers to show under columns `band` px wide: {shown (the columns), upright
 * (turned a quarter, reading upwards), height (px, under the cells)}; every one, flat when the
 * widest fits its column, upright when a text's height does; else every k-th head of each layer
 * (0, k, 2k …, the same in every layer), PRINT_TICK_ROOM between two; none when fewer than 3 of a
 * layer's would show (the layers' names then say enough). */
function printTicks(heads, starts, band) {
  const widest = Math.max(...heads.map(([, head]) => printWidth(head)));
  const every = heads.map((_pair, j) => j);
  if (band >= widest + 6) return { shown: every, upright: false, height: PRINT_TEXT + 8 };
  const height = widest + 10;
  if (band >= PRINT_TICK_ROOM) return { shown: every, upright: true, height };
  const perLayer = Math.max(...heads.map(([, head]) => head)) + 1;
  // the same heads of every layer: the least step whose numbers, the last of one layer's and the
  // first of the next layer's too, stand PRINT_TICK_ROOM apart
  for (let step = Math.ceil(PRINT_TICK_ROOM / band); Math.ceil(perLayer / step) >= 3; step += 1) {
    const shown = every.filter((j) => heads[j][1] % step === 0);
    const apart = (j, i) => i === 0 || starts[j] - starts[shown[i - 1]] >= PRINT_TICK_ROOM - 1e-6;
    if (shown.every(apart)) return { shown, upright: true, height };
  }
  return { shown: [], upright: true, height: 0 };
}

/** Each layer's name under its heads: "layer 2" where every one fits its heads, else "L2", each
 * layer's where they fit side by side (6 px apart). [{group, text}] */
function printLayerNames(groups) {
  const fits = (say, pad) => groups.every((g) => printWidth(say(g.layer)) <= g.x1 - g.x0 - pad);
  const long = (layer) => _("layer {layer}", { layer });
  const short = (layer) => _("L{layer}", { layer });
  if (fits(long, 8)) return groups.map((group) => ({ group, text: long(group.layer) }));
  const named = [];
  let end = -Infinity;
  for (const group of groups) {
    const text = short(group.layer);
    const half = printWidth(text) / 2;
    const middle = (group.x0 + group.x1) / 2;
    if (middle - half >= end + 6) {
      named.push({ group, text });
      end = middle + half;
    }
  }
  return named;
}

/** Every head as a table's row: its layer, its number, its value of every behaviour. */
function printTable(d) {
  if (!d) return { head: [_("layer"), _("head")], body: [] };
  const head = [_("layer"), _("head"), ...d.behaviours];
  const body = d.heads.map(([layer, inLayer], j) => [String(layer), String(inLayer),
    ...d.values.map((row) => (row[j] === null ? "" : row[j]))]);
  return { head, body };
}

/** The plot's label: what it shows, the highest head of each behaviour and how to read it. */
function printLabel(d) {
  const highest = [];
  d.values.forEach((row, i) => {
    let most = -1;
    row.forEach((v, j) => { if (v !== null && (most < 0 || v > row[most])) most = j; });
    if (most < 0) return;
    const [layer, head] = d.heads[most];
    highest.push(_("{behaviour}, layer {layer}, head {head} ({value})", {
      behaviour: d.behaviours[i], layer, head, value: figureSaid(row[most]) }));
  });
  const layers = new Set(d.heads.map(([layer]) => layer)).size;
  return _("A heatmap of {behaviours} (rows) by {heads} in {layers} (columns), coloured from "
    + "{low} to {high}. The highest head of each: {highest}. ← and → choose a head, ↑ and ↓ a "
    + "behaviour, Home the first head, End the last; the value is read below the plot.", {
    behaviours: n_("{count} behaviour", "{count} behaviours", d.behaviours.length),
    heads: n_("{count} head", "{count} heads", d.heads.length),
    layers: n_("{count} layer", "{count} layers", layers),
    low: figureSaid(d.zmin), high: figureSaid(d.zmax), highest: highest.join("; ") });
}

/** `d` drawn into `canvas`, `width` px wide (what the choice needs kept in `state`): its
 * height. */
function drawFigure(state, canvas, d, width) {
  const at = printLayout(d, width);
  drawPrintCells(canvas, d, at);
  // the behaviours' names, beside their rows
  const rowLabels = d.behaviours.map((behaviour, i) => svgNode("text", { "data-role": "row-label",
    "data-row": i, x: at.X(at.heatLeft - 8),
    y: at.top + i * PRINT_ROW + PRINT_ROW / 2 + PRINT_TEXT * 0.35,
    "text-anchor": at.rtl ? "start" : "end", "font-size": PRINT_TEXT }, behaviour));
  canvas.append(...rowLabels);
  const tickOf = drawHeadTicks(canvas, d, at);
  // the colour bar, its title above it, ending at the drawing's edge
  canvas.appendChild(colourBar({ width, left: at.heatRight + PRINT_SCALE_GAP, top: at.top,
    height: at.height0, low: d.zmin, high: d.zmax, colour: (v) => printColour(d, v),
    scale: at.colours, title: d.scale, size: PRINT_TEXT, titleEnd: width - 2 }));
  // the chosen cell's ring
  const ring = figureRing();
  canvas.appendChild(ring);
  Object.assign(state, { top: at.top, band: at.band, heatLeft: at.heatLeft,
    starts: at.columns.starts, ring, R: at.R, rowLabels, tickOf });
  return at.height;
}

/** Where each part goes across `width`, laid out left to right then mirrored for a right-to-left
 * language: the behaviours' names | the heatmap | a gap | the colour bar and its values; the
 * heads' columns and ticks, and the height. */
function printLayout(d, width) {
  const rtl = rightToLeft();
  const count = d.heads.length;
  const names = Math.max(...d.behaviours.map((b) => printWidth(b))) + 10;
  const top = PRINT_TOP;
  const height0 = d.behaviours.length * PRINT_ROW;
  const colours = colourBarScale(d.zmin, d.zmax, Math.max(2, Math.floor(height0 / 28)), PRINT_TEXT);
  const layers = new Set(d.heads.map(([layer]) => layer)).size;
  const heatWidth = Math.max(count, width - names - PRINT_SCALE_GAP - colours.width - 2);
  const band = Math.max(1, (heatWidth - (layers - 1) * PRINT_LAYER_GAP) / count);
  const columns = printColumns(d.heads, band);
  const ticks = printTicks(d.heads, columns.starts, band);
  const below = top + height0 + 6;
  return { rtl, top, height0, colours, heatLeft: names, band, columns, ticks, below,
    heatRight: names + columns.end,
    height: Math.max(below + ticks.height + PRINT_TEXT + 10, top + height0 + 12),
    X: (x) => (rtl ? width - x : x), // a point
    R: (x, w) => (rtl ? width - x - w : x) }; // a box's left edge
}

/** The cells, a row a behaviour and a column a head, and a white line between two layers, in
 * the gap between their heads. */
function drawPrintCells(canvas, d, at) {
  const { top, band, heatLeft, columns, X, R } = at;
  const cells = svgNode("g", { "data-role": "heatmap" });
  d.values.forEach((line, i) => {
    const y = top + i * PRINT_ROW;
    line.forEach((v, j) => {
      cells.appendChild(svgNode("rect", { "data-role": "cell", "data-row": i, "data-head": j,
        x: R(heatLeft + columns.starts[j], band).toFixed(2), y, width: band.toFixed(2),
        height: PRINT_ROW, fill: printColour(d, v) }));
    });
  });
  canvas.appendChild(cells);
  for (const group of columns.groups.slice(1)) {
    const x = X(heatLeft + group.x0 - PRINT_LAYER_GAP / 2);
    canvas.appendChild(svgNode("line", { "data-role": "layer-line", "data-layer": group.layer,
      x1: x, x2: x, y1: top, y2: top + at.height0, stroke: "#ffffff",
      "stroke-width": PRINT_LAYER_GAP, "pointer-events": "none" }));
  }
}

/** The heads' numbers under their columns, then each layer's name under its heads: the ticks
 * by head. */
function drawHeadTicks(canvas, d, at) {
  const { ticks, below, band, heatLeft, columns, X } = at;
  const tickOf = new Map();
  for (const j of ticks.shown) {
    const [layer, inLayer] = d.heads[j];
    const x = X(heatLeft + columns.starts[j] + band / 2);
    const attributes = { "data-role": "tick", "data-head": j, "data-layer": layer,
      "data-layer-head": inLayer, "font-size": PRINT_TEXT };
    const tick = ticks.upright
      ? svgNode("text", { ...attributes, x: x + PRINT_TEXT * 0.35, y: below, "text-anchor": "end",
        transform: `rotate(-90 ${x + PRINT_TEXT * 0.35} ${below})` }, String(inLayer))
      : svgNode("text", { ...attributes, x, y: below + PRINT_TEXT * 0.8, "text-anchor": "middle" },
        String(inLayer));
    tickOf.set(j, tick);
    canvas.appendChild(tick);
  }
  const layerBase = below + ticks.height + PRINT_TEXT * 0.8;
  for (const { group, text } of printLayerNames(columns.groups)) {
    canvas.appendChild(svgNode("text", { "data-role": "layer-label", "data-layer": group.layer,
      x: X(heatLeft + (group.x0 + group.x1) / 2), y: layerBase, "text-anchor": "middle",
      "font-size": PRINT_TEXT }, text));
  }
  return tickOf;
}

/** The ring, the bold labels and the readout at the chosen cell. */
function showChosen({ root, readout, state }, chosen) {
  const d = state.data;
  const on = Boolean(d && chosen);
  root.dataset.cell = on ? `${chosen.row},${chosen.head}` : "";
  if (state.ring) {
    figureRingAt(state.ring, on ? { x: state.R(state.heatLeft + state.starts[chosen.head],
      state.band), y: state.top + chosen.row * PRINT_ROW, width: state.band,
    height: PRINT_ROW } : null);
    state.rowLabels.forEach((label, i) => {
      label.setAttribute("font-weight", on && i === chosen.row ? 700 : 400);
    });
    for (const [j, tick] of state.tickOf) {
      tick.setAttribute("font-weight", on && j === chosen.head ? 700 : 400);
    }
  }
  if (!on) {
    readout.textContent = d ? printPrompt() : "";
    return;
  }
  const [layer, head] = d.heads[chosen.head];
  readout.textContent = _("Layer {layer}, head {head} · {behaviour}: {value}", {
    layer, head, behaviour: d.behaviours[chosen.row],
    value: printSaid(d.values[chosen.row][chosen.head]) });
}

/** The cell a key moves the choice (`chosen`) to (null: none), or undefined: not the
 * figure's key. */
function printKey(event, d, chosen) {
  const lastHead = d.heads.length - 1;
  const lastRow = d.behaviours.length - 1;
  const at = chosen || { row: 0, head: 0 };
  if (event.key in PRINT_ARROWS) {
    const [down, along] = PRINT_ARROWS[event.key];
    return chosen ? {
      row: Math.min(lastRow, Math.max(0, at.row + down)),
      head: Math.min(lastHead, Math.max(0, at.head + along * (rightToLeft() ? -1 : 1))),
    } : at; // the first key: the first behaviour of the first head
  }
  if (event.key === "Home" || event.key === "End") {
    return { row: at.row, head: event.key === "Home" ? 0 : lastHead };
  }
  return event.key === "Escape" && chosen ? null : undefined;
}

export function mount(host, data) {
  let chosen = null; // {row, head}: a behaviour and a column
  const { root, plot, readout, state, start } = mountFigure(host, {
    name: "hfp", testid: "head-fingerprint", choice: "cell", untitled: "head fingerprint",
    minWidth: PRINT_MIN_WIDTH, role: () => _("heatmap"), problem: printProblem,
    note: (note) => element("div", {}, note),
    counts: { behaviours: (d) => d.behaviours.length, heads: (d) => d.heads.length },
    label: printLabel, table: printTable,
    forget: (d) => {
      if (chosen && (!d || chosen.row >= d.behaviours.length || chosen.head >= d.heads.length)) {
        chosen = null;
      }
    },
    draw: (canvas, d, width) => drawFigure(state, canvas, d, width),
    show: () => show(), choose,
    key: (event, d) => printKey(event, d, chosen),
  });

  const show = () => showChosen({ root, readout, state }, chosen);

  function choose(next) {
    const same = next && chosen && next.row === chosen.row && next.head === chosen.head;
    if (same || (!next && !chosen)) return;
    chosen = next;
    show();
  }

  plot.addEventListener("mousemove", (event) => {
    const cell = event.target instanceof Element ? event.target.closest("[data-role=cell]") : null;
    if (!cell || !state.data) return;
    choose({ row: Number(cell.dataset.row), head: Number(cell.dataset.head) });
  });

  return start(data);
}
