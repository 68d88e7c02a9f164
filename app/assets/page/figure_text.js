// Every Plotly chart's text alternative (WCAG 1.1.1), made in the browser from the numbers the
// chart draws, so that it is true of every run: the chart is a figure named by a sentence (its
// title, then each series' range and, for a heatmap, where its largest value is); one keyboard
// stop below it, "Show as a table" opens its numbers as a table, and the next, "Save as…", saves
// the chart as SVG or PNG (drawn from the chart's own SVG) or its numbers as CSV. Nothing is sent
// to the server; user text (tokens) is drawn with textContent.
//
// DOM contract: the chart's .js-plotly-plot has role="figure" and aria-label; after it, in the
// chart's element box (ELEMENT_BOX), the [data-testid=figure-text] box of
// encoder/web/figure_tools.js.

import { _, n_ } from "../../../encoder/web/shared.js";
import {
  figureRounded, figureSaid, svgDocument, figureControls
} from "../../../encoder/web/figure_tools.js";
import { ELEMENT_BOX } from "./streamlit_private.js";
import { whenStill } from "./when_still.js";

const MAX_SERIES = 4; // series named in a chart's sentence
// The box Streamlit gives each element (ELEMENT_BOX): the tools go in it after the chart, as the
// explorer's and the SVG figures' are in theirs, so that they are part of the figure's box.
// (Inside the chart's own box, sized to the chart and cut at its edge, and below it in a box of
// the chart's fixed height that scrolls, they were out of sight. app/streamlit_private.py's
// PAGE_CSS lets a box holding tools grow to hold them.)
const DTYPES = {
  f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array,
  i2: Int16Array, u2: Uint16Array, i1: Int8Array, u1: Uint8Array,
};

// A title's text without its tags, its line breaks (a title wrapped to its column) as spaces.
// ("\x3c" is "<": Streamlit's st.html drops a script whose text holds a tag's opening, even in
// a string or a regular expression.)
function plain(text) {
  return String(text ?? "").replace(/\x3cbr\s*\/?>/gi, " ").replace(/\x3c[^>]*>/g, "").trim();
}

// An array as sent: a list (of lists), or plotly.py's {dtype, bdata, shape} in base64.
function decoded(values) {
  if (values == null || Array.isArray(values) || ArrayBuffer.isView(values)) return values;
  if (typeof values === "object" && values.bdata && DTYPES[values.dtype]) {
    const bytes = Uint8Array.from(atob(values.bdata), (c) => c.charCodeAt(0));
    const flat = Array.from(new DTYPES[values.dtype](bytes.buffer));
    const shape = String(values.shape ?? flat.length).split(",").map(Number);
    if (shape.length < 2) return flat;
    const width = shape[1];
    return Array.from({ length: shape[0] }, (_, row) => flat.slice(row * width, (row + 1) * width));
  }
  return values;
}

function axisOf(layout, trace, letter) {
  const name = trace[`${letter}axis`] || letter;
  return layout[`${letter}axis${name.slice(1)}`] || {};
}

// The label of position `index` along an axis: the trace's own label, a tick's text, or the index.
function label(trace, layout, letter, index) {
  const own = decoded(trace[letter]);
  if (own && own[index] !== undefined) return String(own[index]);
  const axis = axisOf(layout, trace, letter);
  const at = (decoded(axis.tickvals) || []).indexOf(index);
  return at >= 0 && axis.ticktext ? plain(axis.ticktext[at]) : String(index);
}

function titleOf(thing) {
  return plain(typeof thing?.title === "object" ? thing.title?.text : thing?.title);
}

// The chart's numbers as a table: a heatmap's matrix with its labels, or one row per point.
function tableOf(traces, layout) {
  const heatmap = traces.find((trace) => trace.type === "heatmap");
  if (heatmap) {
    const rows = decoded(heatmap.z) || [];
    const columns = (rows[0] || []).length;
    const axis = (letter, otherwise) => titleOf(axisOf(layout, heatmap, letter)) || otherwise;
    // never an empty header; the words outside the template literal, where extraction finds them
    const down = axis("y", _("rows"));
    const across = axis("x", _("columns"));
    const corner = `${down} / ${across}`;
    const head = [corner, ...Array.from({ length: columns }, (_, j) => label(heatmap, layout, "x", j))];
    const body = rows.map((row, i) => [label(heatmap, layout, "y", i), ...Array.from(row, (value) => figureRounded(value))]);
    return { head, body };
  }
  const body = [];
  for (const trace of traces) {
    const xs = decoded(trace.x) || [];
    const ys = decoded(trace.y) || [];
    const count = Math.max(xs.length, ys.length);
    const axis = axisOf(layout, trace, "x");
    const ticks = decoded(axis.tickvals) || [];
    for (let i = 0; i < count; i++) {
      const x = xs[i] ?? i;
      const tick = typeof x === "number" && axis.ticktext ? ticks.indexOf(x) : -1;
      const shown = tick >= 0 ? plain(axis.ticktext[tick]) : typeof x === "number" ? figureRounded(x) : String(x);
      body.push([plain(trace.name) || trace.type, shown,
        typeof ys[i] === "number" ? figureRounded(ys[i]) : String(ys[i] ?? "")]);
    }
  }
  const layoutOf = traces[0] ? (letter) => titleOf(axisOf(layout, traces[0], letter)) : () => "";
  return { head: [_("series"), layoutOf("x") || "x", layoutOf("y") || "y"], body };
}

function finite(values) {
  return values.flat(Infinity).filter((value) => typeof value === "number" && Number.isFinite(value));
}

// One clause per series: its range, and for a heatmap where its largest value lies.
function seriesClause(trace, layout) {
  if (trace.type === "heatmap") {
    const rows = decoded(trace.z) || [];
    let best = null;
    rows.forEach((row, i) => Array.from(row).forEach((value, j) => {
      if (Number.isFinite(value) && (best === null || value > best[0])) best = [value, i, j];
    }));
    if (best === null) return null;
    const values = finite(rows.map((row) => Array.from(row)));
    return _("heatmap of {rows} rows by {columns} columns, from {low} to {high}; largest at row "
      + "{row}, column {column}", { rows: rows.length, columns: (rows[0] || []).length,
      low: figureSaid(Math.min(...values)), high: figureSaid(best[0]),
      row: label(trace, layout, "y", best[1]), column: label(trace, layout, "x", best[2]) });
  }
  const ys = finite(Array.from(decoded(trace.y) || []));
  if (!ys.length) return null;
  const axis = titleOf(axisOf(layout, trace, "y"));
  const name = [plain(trace.name) || trace.type, axis].filter(Boolean).join(", ");
  return n_("{name}: {count} value from {low} to {high}", "{name}: {count} values from {low} to "
    + "{high}", ys.length, { name, low: figureSaid(Math.min(...ys)), high: figureSaid(Math.max(...ys)) });
}

function sentenceOf(traces, layout) {
  const clauses = traces.filter((trace) => trace.visible !== false)
    .map((trace) => seriesClause(trace, layout)).filter(Boolean);
  const shown = clauses.slice(0, MAX_SERIES);
  if (clauses.length > MAX_SERIES) {
    shown.push(_("and {count} more series", { count: clauses.length - MAX_SERIES }));
  }
  const title = titleOf(layout) || _("Chart");
  const between = _("; "); // between two series' clauses
  return shown.length ? _("{title}: {clauses}.", { title, clauses: shown.join(between) })
    : _("{title}.", { title });
}

// The chart as the figure that figureControls (encoder/web/figure_tools.js) saves and tabulates:
// its numbers read, and Plotly's stacked layers (svg.main-svg) drawn, when used.
function figureOf(plot) {
  const title = () => titleOf(plot.layout) || _("Chart");
  return {
    title,
    table: () => tableOf(plot.data, plot.layout || {}),
    svg: () => svgDocument([...plot.querySelectorAll("svg.main-svg")], plot.clientWidth, plot.clientHeight, title()),
  };
}

// After a chart, in its element's box, made once per chart; a box whose chart has gone goes too.
const toolsOf = new WeakMap(); // a tools box: the chart it was made for

function controlsFor(plot) {
  const host = plot.closest(ELEMENT_BOX) || plot.parentElement;
  let box = host.querySelector(":scope > [data-testid=figure-text]");
  if (box && toolsOf.get(box) !== plot) {
    box.remove(); // made for a chart this box held before
    box = null;
  }
  if (!box) {
    box = figureControls(figureOf(plot));
    toolsOf.set(box, plot);
    host.appendChild(box);
  }
  return box;
}

function dropOrphans() {
  for (const box of document.querySelectorAll(`${ELEMENT_BOX} > [data-testid=figure-text]`)) {
    const plot = toolsOf.get(box);
    if (!plot || !box.parentElement.contains(plot)) box.remove();
  }
}

// A heatmap writes its numbers in its cells only where every one fits its cell: after each draw
// (a new width too), each heatmap's cell is measured (its bins' edges on its axes, less its gaps)
// and so is each of its texts as drawn; one too wide or too tall for its cell, and the heatmap's
// texts are not shown (the hover, the sentence and the table still give every number). The
// figure's width is known only here, in the browser; app/charts writes the texts.
const CELL_MARGIN = 2; // px: a cell's text keeps this clear of the cell's edges, each side

function cellOf(plot, cell) {
  const trace = cell[0].trace;
  const axis = (letter) => plot._fullLayout[`${letter}axis${(trace[`${letter}axis`] || letter).slice(1)}`];
  const side = (edges, along, gap) => (edges && edges.length > 1 && along
    ? Math.abs(along.c2p(edges[1]) - along.c2p(edges[0])) - (gap || 0) : Infinity);
  return { width: side(cell[0].x, axis("x"), trace.xgap), height: side(cell[0].y, axis("y"), trace.ygap) };
}

function fitCellText(plot) {
  for (const cell of plot.calcdata || []) {
    const trace = cell[0] && cell[0].trace;
    const group = cell[0] && cell[0].node3 && cell[0].node3.node(); // its trace's group, drawn
    if (!trace || trace.type !== "heatmap" || !group) continue;
    const texts = [...group.querySelectorAll("g.heatmap-label text")];
    if (!texts.length) continue;
    texts.forEach((text) => text.removeAttribute("display"));
    const room = cellOf(plot, cell);
    const fits = texts.every((text) => {
      const box = text.getBBox();
      return box.width <= room.width - 2 * CELL_MARGIN && box.height <= room.height;
    });
    if (!fits) texts.forEach((text) => text.setAttribute("display", "none"));
    plot.dataset.cellText = fits ? "shown" : "hidden";
  }
}

const fitting = new WeakSet(); // plots whose every draw is followed by fitCellText

function fitAfterEachDraw(plot) {
  if (fitting.has(plot) || typeof plot.on !== "function") return;
  fitting.add(plot);
  plot.on("plotly_afterplot", () => fitCellText(plot));
  fitCellText(plot);
}

const described = new WeakMap(); // plot: the data it was last described from

function describe(plot) {
  const traces = plot.data;
  const layout = plot.layout || {};
  if (!Array.isArray(traces) || described.get(plot) === traces) return;
  described.set(plot, traces);
  plot.setAttribute("role", "figure");
  plot.setAttribute("aria-label", sentenceOf(traces, layout));
  controlsFor(plot).refresh(); // an open table follows the chart
  fitAfterEachDraw(plot);
}

function describeAll() {
  dropOrphans();
  for (const plot of document.querySelectorAll(".js-plotly-plot")) {
    try {
      describe(plot);
    } catch (error) {
      plot.setAttribute("aria-label", titleOf(plot.layout) || _("Chart"));
    }
  }
}

whenStill(describeAll, 100); // not on every frame of a page being drawn
