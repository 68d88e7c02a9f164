/**
 * Similarity matrix: the cosine of every pair of sentences at one depth (0: the embeddings, …,
 * L: the output), drawn as SVG with a depth slider that redraws in the browser alone (no
 * rerun, nothing sent): square cells on a blue–white–red scale from −1 to 1 with its colour
 * bar, the value printed in each cell where it fits; in compare mode setup B's matrix (at the
 * same share of its depth) and B − A (a scale of its own); under them, each pair's cosine
 * across depth (the chosen pair's line in colour, a dot where a pair settles).
 *
 * An ES module, no framework, no network: each host's glue calls `mount` (encoder/web/hosts.py).
 * The stylesheet is similarity_matrix.css beside this file.
 *
 * data: {title, notes: string[], labels: string[B] (the sentences, the user's text), depth (the
 *        depth it opens at), depths: string[D] (each depth's name), values: number[D][B][B],
 *        captions: string[D] (what each depth's matrix says), scale, axis, lines, alike:
 *        [a, b, depth, said?][] (where each pair settles, and a sentence saying so), name
 *        ("A"), b?: {name, depths, values, captions, alike} (setup B, same sentences),
 *        difference? (B − A's title), lang?, words?} (similarity_matrix.py: similarity_payload).
 *
 * Reading it: the slider (a range input, keyboard-reachable) chooses the depth; the mouse over a
 * cell, or the keyboard on the plot (one Tab stop: arrows move the chosen cell, Home and End the
 * row's first and last; Escape clears) chooses a pair: a ring marks it in every matrix, its line
 * turns coloured and the readout gives its cosine(s) at the depth drawn.
 *
 * DOM contract: root [data-testid="similarity-matrix"] (data-depth: the depth drawn, data-cell:
 * "row,col" or ""), the slider [data-testid="depth-slider"], the caption [data-role=caption]
 * (also a line of the saved figure), cells [data-testid="similarity-cell"] (data-panel
 * "a" | "b" | "difference", data-row, data-col, data-value: the value drawn), each cell's
 * printed value [data-role=value], a pair's line [data-role=pair-line] (data-a, data-b),
 * [data-role=alike] dots, the depth marker [data-role=depth-line]; figure_tools' table (a row a
 * pair, a column a depth) and "Save as…".
 */
import { diverging, rgb, element, rightToLeft, _, number } from "./shared.js";
import {
  svgNode, FIGURE_INK, FIGURE_CHAR, mountFigure, colourBarScale, colourBar, figureRing,
  figureRingAt, niceScale, gridTick, plotFrame, figurePath, figureInkOn
} from "./figure_tools.js";

const SIM_TEXT = 14; // px: every label
const SIM_MIN_WIDTH = 300;
const SIM_MAX_CELL = 72; // px: a cell's side at most
const SIM_MIN_CELL = 18;
const SIM_GAP = 28; // px: between two panels
const SIM_LINES_HEIGHT = 150; // px: the lines' plot
const SIM_CHOSEN = "#0072B2";
const SIM_B = "#D55E00";
const SIM_ARROWS = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
let SIM_IDS = 0;

// a text's width, estimated (a bidi mark, as Arabic puts before a minus, takes none)
const simWidth = (text, size = SIM_TEXT) =>
  Math.ceil([...String(text).replace(/[\u200e\u200f\u061c]/g, "")].length * FIGURE_CHAR * size);
const simShort = (text, chars) => ([...text].length > chars
  ? `${[...text].slice(0, Math.max(1, chars - 1)).join("")}…` : text);

const square = (m, n) => Array.isArray(m) && m.length === n
  && m.every((row) => Array.isArray(row) && row.length === n && row.every(Number.isFinite));

function simProblem(data) {
  const n = data && Array.isArray(data.labels) ? data.labels.length : 0;
  if (!n || !Array.isArray(data.values) || !data.values.length) return _("nothing to draw");
  const ok = (s) => Array.isArray(s.depths) && s.values.length === s.depths.length
    && s.values.every((m) => square(m, n));
  if (!ok(data) || (data.b && !ok(data.b))) return `the matrices are not ${n} x ${n} at each depth`;
  return "";
}

/** The depth of B drawn with A's depth `i`: the same share of its depths (0 with 0, the output
 * with the output). */
const depthOfB = (d, i) => (d.depths.length < 2 ? 0
  : Math.round((i * (d.b.depths.length - 1)) / (d.depths.length - 1)));

/** The panels drawn: A, and in compare mode B and B − A, each {key, title, matrix(depth), low,
 * high, colour}. */
function simPanels(d) {
  const cos = (v) => rgb(diverging(v));
  const a = { key: "a", title: d.name, matrix: (i) => d.values[i], low: -1, high: 1, colour: cos };
  if (!d.b) return [a];
  const b = { key: "b", title: d.b.name, matrix: (i) => d.b.values[depthOfB(d, i)], low: -1,
    high: 1, colour: cos };
  let most = 0;
  d.values.forEach((m, i) => m.forEach((row, r) => row.forEach((v, c) => {
    most = Math.max(most, Math.abs(b.matrix(i)[r][c] - v));
  })));
  const span = niceScale(0, Math.max(most, 0.01), 2).high;
  const diff = { key: "difference", title: d.difference, low: -span, high: span,
    matrix: (i) => d.values[i].map((row, r) => row.map((v, c) => b.matrix(i)[r][c] - v)),
    colour: (v) => rgb(diverging(v / span)) };
  return [a, b, diff];
}

/** Where each panel goes across `width`: the row labels' characters, the cell's side, each
 * panel's box; panels flow, as many to a row as fit. */
function simLayout(d, panels, width) {
  const n = d.labels.length;
  const chars = Math.max(6, Math.min(26, Math.floor((width * 0.25) / (FIGURE_CHAR * SIM_TEXT))));
  const widest = Math.max(...d.labels.map((l, i) => simWidth(`${i + 1} ${simShort(l, chars)}`)));
  const labels = widest + 12;
  const room = Math.max(...panels.map((p) => colourBarScale(p.low, p.high, 4, SIM_TEXT).width)) + 12;
  let cell = Math.floor((width - labels - room) / n);
  if (panels.length > 1) { // side by side where they fit at a good size, else one under another
    const across = Math.floor((width - labels - (panels.length - 1) * (SIM_GAP + simWidth(n) + 12)
      - panels.length * room) / (panels.length * n));
    if (across >= 40) cell = across;
  }
  cell = Math.max(SIM_MIN_CELL, Math.min(SIM_MAX_CELL, cell));
  const top = (d.b ? SIM_TEXT + 8 : 0) + SIM_TEXT + 14; // the panel's title, the columns' numbers
  const boxes = [];
  let x = 0;
  let y = 0;
  panels.forEach((p, k) => {
    const left = k === 0 ? labels : simWidth(n) + 12; // the first names its rows, others number them
    const w = left + n * cell + room;
    if (k > 0 && x + SIM_GAP + w > width) { x = 0; y += top + n * cell + 16; }
    else if (k > 0) x += SIM_GAP;
    boxes.push({ x, y, left, w });
    x += w;
  });
  const bottom = y + top + n * cell + 16;
  return { n, chars, cell, top, boxes, bottom, width };
}

function drawPanel(canvas, d, p, box, at, state) {
  const { n, cell, top, chars } = at;
  const rtl = rightToLeft();
  const X = (x) => (rtl ? at.width - x : x);
  const R = (x, w) => (rtl ? at.width - x - w : x);
  const x0 = box.x + box.left;
  const y0 = box.y + top;
  if (d.b) { // a title over each panel in compare mode
    canvas.appendChild(svgNode("text", { "data-role": "panel-title", x: X(x0), y: box.y + SIM_TEXT,
      "font-size": SIM_TEXT, "font-weight": 600, "text-anchor": rtl ? "end" : "start" }, p.title));
  }
  for (let i = 0; i < n; i += 1) {
    const label = box.left > simWidth(n) + 12 ? `${i + 1} ${simShort(d.labels[i], chars)}` : String(i + 1);
    canvas.appendChild(svgNode("text", { "data-role": "row-label", "data-panel": p.key, "data-row": i,
      x: X(x0 - 8), y: y0 + i * cell + cell / 2 + SIM_TEXT * 0.35, "font-size": SIM_TEXT,
      "text-anchor": rtl ? "start" : "end" }, label));
    canvas.appendChild(svgNode("text", { "data-role": "col-label", "data-panel": p.key, "data-col": i,
      x: X(x0 + i * cell + cell / 2), y: y0 - 6, "font-size": SIM_TEXT, "text-anchor": "middle" },
    String(i + 1)));
  }
  const cells = [];
  for (let r = 0; r < n; r += 1) {
    for (let c = 0; c < n; c += 1) {
      const x = R(x0 + c * cell, cell);
      const rect = svgNode("rect", { "data-testid": "similarity-cell", "data-role": "cell",
        "data-panel": p.key, "data-row": r, "data-col": c, x, y: y0 + r * cell, width: cell - 1,
        height: cell - 1 });
      const text = svgNode("text", { "data-role": "value", "data-panel": p.key, x: x + (cell - 1) / 2,
        y: y0 + r * cell + (cell - 1) / 2 + SIM_TEXT * 0.35, "font-size": SIM_TEXT,
        "text-anchor": "middle", "pointer-events": "none" }, "");
      canvas.append(rect, text);
      cells.push({ r, c, rect, text });
    }
  }
  canvas.appendChild(colourBar({ width: at.width, left: x0 + n * cell + 10, top: y0,
    height: n * cell, low: p.low, high: p.high, colour: p.colour,
    scale: colourBarScale(p.low, p.high, 4, SIM_TEXT), title: "", size: SIM_TEXT }));
  const ring = figureRing();
  canvas.appendChild(ring);
  state.panels.push({ p, cells, ring, box: (r, c) => ({ x: R(x0 + c * cell, cell), y: y0 + r * cell,
    width: cell - 1, height: cell - 1 }) });
}

/** Each pair's cosine across depth (setup A's): a grey line a pair, the chosen pair's (and
 * B's, dashed) coloured, a dot where a pair settles, a line at the depth drawn. */
function drawLines(canvas, d, at, state) {
  const count = d.depths.length;
  const rtl = rightToLeft();
  const X = (x) => (rtl ? at.width - x : x);
  const y0 = at.bottom + SIM_TEXT * 2 + 14;
  const left = 44;
  const right = at.width - 12;
  let low = 0;
  d.values.forEach((m) => m.forEach((row) => row.forEach((v) => { low = Math.min(low, v); })));
  const scale = niceScale(low, 1, 4);
  const xOf = (i) => X(left + (count < 2 ? 0 : (i * (right - left)) / (count - 1)));
  const yOf = (v) => y0 + SIM_LINES_HEIGHT * (1 - (v - scale.low) / (scale.high - scale.low));
  canvas.appendChild(svgNode("text", { "data-role": "lines-title", x: X(4), y: y0 - 18,
    "font-size": SIM_TEXT, "text-anchor": rtl ? "end" : "start" },
  simShort(d.lines, Math.floor(at.width / (FIGURE_CHAR * SIM_TEXT)))));
  for (const t of scale.ticks) {
    canvas.append(...gridTick(X(left), X(right), yOf(t), X(left - 6), rtl ? "start" : "end",
      SIM_TEXT, number(t, scale.digits, false)));
  }
  canvas.appendChild(plotFrame(Math.min(X(left), X(right)), y0, right - left, SIM_LINES_HEIGHT));
  const every = Math.max(1, Math.ceil((simWidth(count) + 8) / ((right - left) / Math.max(1, count - 1))));
  for (let i = 0; i < count; i += every) {
    canvas.appendChild(svgNode("text", { "data-role": "depth-tick", x: xOf(i),
      y: y0 + SIM_LINES_HEIGHT + SIM_TEXT + 4, "font-size": SIM_TEXT, "text-anchor": "middle" },
    String(i)));
  }
  canvas.appendChild(svgNode("text", { "data-role": "axis-title", x: X(left),
    y: y0 + SIM_LINES_HEIGHT + 2 * SIM_TEXT + 10, "font-size": SIM_TEXT,
    "text-anchor": rtl ? "end" : "start" }, d.axis));
  const lines = new Map();
  const n = d.labels.length;
  for (let a = 0; a < n; a += 1) {
    for (let b = a + 1; b < n; b += 1) {
      const path = svgNode("path", { "data-role": "pair-line", "data-a": a, "data-b": b, fill: "none",
        d: figurePath(d.values.map((m) => m[a][b]), xOf, yOf), stroke: "#bdbdbd", "stroke-width": 1.5 });
      canvas.appendChild(path);
      lines.set(`${a},${b}`, path);
    }
  }
  const bLine = svgNode("path", { "data-role": "pair-line-b", fill: "none", stroke: SIM_B,
    "stroke-width": 2.5, "stroke-dasharray": "6 4", visibility: "hidden" });
  canvas.appendChild(bLine);
  for (const [a, b, depth] of d.alike || []) {
    canvas.appendChild(svgNode("circle", { "data-role": "alike", "data-a": a, "data-b": b,
      "data-depth": depth, cx: xOf(depth), cy: yOf(d.values[depth][a][b]), r: 4, fill: FIGURE_INK }));
  }
  const marker = svgNode("line", { "data-role": "depth-line", y1: y0, y2: y0 + SIM_LINES_HEIGHT,
    stroke: FIGURE_INK, "stroke-width": 1.5, "stroke-dasharray": "2 3" });
  canvas.appendChild(marker);
  Object.assign(state, { lines, bLine, marker, xOf, yOf });
  return y0 + SIM_LINES_HEIGHT + 2 * SIM_TEXT + 18;
}

function drawSimilarity(state, canvas, d, width) {
  const panels = simPanels(d);
  const at = simLayout(d, panels, width);
  state.panels = [];
  panels.forEach((p, k) => drawPanel(canvas, d, p, at.boxes[k], at, state));
  state.lines = null;
  const height = d.depths.length > 1 && d.labels.length > 1 ? drawLines(canvas, d, at, state) : at.bottom;
  return height;
}

/** The values of depth `state.depth` in every cell (fill, data-value, printed where it fits),
 * the depth line, the caption and the slider's words. */
function paint(state, parts) {
  const d = state.data;
  if (!d) return;
  const i = state.depth;
  for (const { p, cells } of state.panels || []) {
    const m = p.matrix(i);
    // the values printed where every one of the panel's fits its cell, else none (the table has them)
    const said = m.map((row) => row.map((v) => number(v, 2)));
    const side = cells.length ? Number(cells[0].rect.getAttribute("width")) : 0;
    const fits = said.every((row) => row.every((t) => simWidth(t) + 4 <= side));
    for (const { r, c, rect, text } of cells) {
      const v = m[r][c];
      const fill = p.colour(v);
      rect.setAttribute("fill", fill);
      rect.setAttribute("data-value", String(v));
      text.textContent = fits ? said[r][c] : "";
      text.setAttribute("fill", figureInkOn(fill.slice(4, -1).split(",").map(Number)));
    }
  }
  if (state.marker) {
    const x = state.xOf(i);
    state.marker.setAttribute("x1", x);
    state.marker.setAttribute("x2", x);
  }
  parts.root.dataset.depth = String(i);
  parts.slider.value = String(i);
  const name = d.depths[i];
  parts.slider.setAttribute("aria-valuetext", name);
  parts.output.textContent = name;
  const b = d.b ? ` ${d.b.name}: ${d.b.captions[depthOfB(d, i)]}` : "";
  parts.caption.textContent = `${d.b ? `${d.name}: ` : ""}${d.captions[i]}${b}`;
}

function simTable(d) {
  if (!d) return { head: [_("pair")], body: [] };
  const n = d.labels.length;
  const rows = [];
  const setups = [[d.b ? `${d.name} · ` : "", d], ...(d.b ? [[`${d.b.name} · `, d.b]] : [])];
  for (const [prefix, s] of setups) {
    for (let a = 0; a < n; a += 1) {
      for (let b = a; b < n; b += 1) {
        if (a === b && n > 1) continue;
        rows.push([`${prefix}${a + 1} – ${b + 1}`, ...s.values.map((m) => m[a][b])]);
      }
    }
  }
  const depths = Math.max(d.depths.length, d.b ? d.b.depths.length : 0);
  const head = [_("pair"), ...Array.from({ length: depths }, (_x, i) => d.depths[i]
    || `${d.b.name} ${d.b.depths[i]}`)];
  return { head, body: rows.map((row) => [...row, ...Array(depths + 1 - row.length).fill("")]) };
}

function simLabel(d) {
  const named = d.labels.map((l, i) => `${i + 1} “${l}”`).join("; ");
  return _("A matrix of the cosine of every pair of {count} sentences, from −1 (blue) to 1 (red): "
    + "{sentences}. The depth slider above it chooses the depth; the arrow keys choose a pair, "
    + "read below the plot.", { count: d.labels.length, sentences: named });
}

function simShow({ root, readout, state, d, chosen }) {
  root.dataset.cell = chosen ? `${chosen.row},${chosen.col}` : "";
  for (const panel of state.panels || []) {
    figureRingAt(panel.ring, chosen ? panel.box(chosen.row, chosen.col) : null);
  }
  if (state.lines) {
    for (const [key, path] of state.lines) {
      const on = chosen && key === `${Math.min(chosen.row, chosen.col)},${Math.max(chosen.row, chosen.col)}`;
      path.setAttribute("stroke", on ? SIM_CHOSEN : "#bdbdbd");
      path.setAttribute("stroke-width", on ? 3 : 1.5);
      if (on) path.parentNode.appendChild(path); // drawn over the others
    }
    const pair = chosen && chosen.row !== chosen.col;
    state.bLine.setAttribute("visibility", pair && d.b ? "visible" : "hidden");
    if (pair && d.b) {
      state.bLine.setAttribute("d", figurePath(d.values.map((_m, i) => d.b.values[depthOfB(d, i)][chosen.row][chosen.col]), state.xOf, state.yOf));
    }
    state.marker.parentNode.appendChild(state.marker);
  }
  if (!d || !chosen) {
    readout.textContent = d ? _("Hover a cell, or Tab to the plot and use the arrow keys: the cosine of one pair of sentences.") : "";
    return;
  }
  const i = state.depth;
  const { row, col } = chosen;
  const values = state.panels.map(({ p }) => `${p.title}: ${number(p.matrix(i)[row][col], 3)}`);
  const alike = (d.alike || []).find(([a, b]) => a === Math.min(row, col) && b === Math.max(row, col));
  readout.textContent = _("Sentences {a} and {b}, {depth}: cosine {values}.", { a: row + 1, b: col + 1,
    depth: d.depths[i], values: d.b ? values.join(", ") : number(d.values[i][row][col], 3) })
    + (alike ? " " + (alike[3] || _("It settles at depth {depth} ({name}).",
      { depth: alike[2], name: d.depths[alike[2]] })) : "");
}

/** The cell a key moves the choice (`chosen`) to among `x`'s sentences (null: none), or
 * undefined: not the figure's key. */
function simKey(event, x, chosen) {
  const last = x.labels.length - 1;
  const at = chosen || { row: 0, col: 0 };
  if (event.key in SIM_ARROWS) {
    const [down, along] = SIM_ARROWS[event.key];
    return chosen ? { row: Math.min(last, Math.max(0, at.row + down)),
      col: Math.min(last, Math.max(0, at.col + along * (rightToLeft() ? -1 : 1))) } : at;
  }
  if (event.key === "Home" || event.key === "End") return { row: at.row, col: event.key === "Home" ? 0 : last };
  return event.key === "Escape" && chosen ? null : undefined;
}

/** The depth slider (its box, label, range input and the depth's name) and the caption. */
function depthParts(root) {
  const id = `sim-depth-${(SIM_IDS += 1)}`;
  const box = element("div", { class: "sim-depth" });
  const label = element("label", { for: id }, _("Depth"));
  const slider = element("input", { type: "range", id, min: "0", max: "0", step: "1", value: "0",
    "data-testid": "depth-slider" });
  const output = element("output", { for: id, "aria-hidden": "true" }, "");
  box.append(label, slider, output);
  return { root, box, label, slider, output, caption: element("div", { "data-role": "caption" }) };
}

/** New data (`next`, or null): the depth it opens at (a rerun of the same keeps the reader's),
 * the slider's range and words, the caption a line of the notes (in the saved figure too). */
function simForget(next, state, parts) {
  const opening = next ? `${next.depth}|${next.depths.length}` : "";
  if (next && opening !== state.opening) {
    const depth = Number.isInteger(next.depth) ? next.depth : 0;
    state.depth = Math.min(Math.max(0, depth), next.depths.length - 1);
    state.opening = opening;
  }
  parts.slider.max = String(next ? next.depths.length - 1 : 0);
  parts.label.textContent = _("Depth");
  parts.box.hidden = !next || next.depths.length < 2;
  parts.caption.textContent = "";
  parts.root.querySelector(".sim-notes").appendChild(parts.caption);
}

export function mount(host, data) {
  let chosen = null;
  const said = () => simShow({ root, readout, state, d: state.data, chosen });
  const { root, plot, readout, state, start } = mountFigure(host, {
    name: "sim", testid: "similarity-matrix", choice: "cell", untitled: "similarity matrix",
    minWidth: SIM_MIN_WIDTH, role: () => _("matrix"), problem: simProblem,
    note: (note) => element("div", {}, note),
    counts: { sentences: (x) => x.labels.length, depths: (x) => x.depths.length },
    label: simLabel, table: simTable,
    forget: (next) => {
      const n = next ? next.labels.length : 0;
      if (chosen && (chosen.row >= n || chosen.col >= n)) chosen = null;
      simForget(next, state, parts);
    },
    draw: (canvas, x, width) => drawSimilarity(state, canvas, x, width),
    show: () => { paint(state, parts); said(); },
    choose: (next) => { chosen = next; said(); },
    key: (event, x) => simKey(event, x, chosen),
  });
  const parts = depthParts(root);
  root.insertBefore(parts.box, plot);
  parts.slider.addEventListener("input", () => {
    state.depth = Number(parts.slider.value);
    paint(state, parts);
    said();
  });
  plot.addEventListener("mousemove", (event) => {
    const cell = event.target instanceof Element ? event.target.closest("[data-role=cell]") : null;
    if (!cell || !state.data) return;
    const next = { row: Number(cell.dataset.row), col: Number(cell.dataset.col) };
    if (!chosen || chosen.row !== next.row || chosen.col !== next.col) {
      chosen = next;
      said();
    }
  });
  return start(data);
}
