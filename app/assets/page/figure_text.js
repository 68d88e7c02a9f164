// Every Plotly chart's text alternative (WCAG 1.1.1), made in the browser from the numbers the
// chart draws, so that it is true of every run: the chart is a figure named by a sentence (its
// title, then each series' range and, for a heatmap, where its largest value is); one keyboard
// stop below it, "Show as a table" opens its numbers as a table, and the next, "Save as…", saves
// the chart as SVG or PNG (drawn from the chart's own SVG) or its numbers as CSV. Nothing is sent
// to the server; user text (tokens) is drawn with textContent.
//
// DOM contract: the chart's .js-plotly-plot has role="figure" and aria-label; after it, the
// [data-testid=figure-text] box of encoder/web/figure_tools.js (joined before this file).
const MAX_SERIES = 4; // series named in a chart's sentence
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

// After a chart, made once: "Show as a table" and "Save as…".
function controlsFor(plot) {
  const host = plot.parentElement;
  let box = host.querySelector(":scope > [data-testid=figure-text]");
  if (!box) {
    box = figureControls(figureOf(plot));
    host.appendChild(box);
  }
  return box;
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
}

function describeAll() {
  for (const plot of document.querySelectorAll(".js-plotly-plot")) {
    try {
      describe(plot);
    } catch (error) {
      plot.setAttribute("aria-label", titleOf(plot.layout) || _("Chart"));
    }
  }
}

whenStill(describeAll, 100); // not on every frame of a page being drawn
