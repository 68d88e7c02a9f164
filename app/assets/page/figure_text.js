// Every Plotly chart's text alternative (WCAG 1.1.1), made in the browser from the numbers the
// chart draws, so that it is true of every run: the chart is a figure named by a sentence (its
// title, then each series' range and, for a heatmap, where its largest value is); one keyboard
// stop below it, "Show as a table" opens its numbers as a table, and the next, "Save as…", saves
// the chart as SVG or PNG (drawn from the chart's own SVG) or its numbers as CSV. Nothing is sent
// to the server; user text (tokens) is drawn with textContent.
//
// DOM contract: the chart's .js-plotly-plot has role="figure" and aria-label; after it, a
// [data-testid=figure-text] holds the toggle [data-testid=figure-table-toggle] (aria-expanded),
// the menu button [data-testid=figure-save] (aria-expanded) and its menu
// [data-testid=figure-save-menu] of [data-role=export][data-format=svg|png|csv] items, and the
// table [data-testid=figure-table] (hidden until toggled).
const MAX_SERIES = 4; // series named in a chart's sentence
const MAX_CELLS = 20000; // a table's cells; beyond, its first rows and a line that says so
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

function number(value) {
  return Number.isFinite(value) ? Number(value.toPrecision(3)).toString() : String(value);
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
    const head = ["", ...Array.from({ length: columns }, (_, j) => label(heatmap, layout, "x", j))];
    const body = rows.map((row, i) => [label(heatmap, layout, "y", i), ...Array.from(row, number)]);
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
      const shown = tick >= 0 ? plain(axis.ticktext[tick]) : typeof x === "number" ? number(x) : String(x);
      body.push([plain(trace.name) || trace.type, shown,
        typeof ys[i] === "number" ? number(ys[i]) : String(ys[i] ?? "")]);
    }
  }
  const layoutOf = traces[0] ? (letter) => titleOf(axisOf(layout, traces[0], letter)) : () => "";
  return { head: ["series", layoutOf("x") || "x", layoutOf("y") || "y"], body };
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
    return `heatmap of ${rows.length} rows by ${(rows[0] || []).length} columns, ` +
      `from ${number(Math.min(...values))} to ${number(best[0])}; largest at row ` +
      `${label(trace, layout, "y", best[1])}, column ${label(trace, layout, "x", best[2])}`;
  }
  const ys = finite(Array.from(decoded(trace.y) || []));
  if (!ys.length) return null;
  const axis = titleOf(axisOf(layout, trace, "y"));
  const name = [plain(trace.name) || trace.type, axis].filter(Boolean).join(", ");
  return `${name}: ${ys.length} values from ${number(Math.min(...ys))} to ${number(Math.max(...ys))}`;
}

function sentenceOf(traces, layout) {
  const clauses = traces.filter((trace) => trace.visible !== false)
    .map((trace) => seriesClause(trace, layout)).filter(Boolean);
  const shown = clauses.slice(0, MAX_SERIES);
  if (clauses.length > MAX_SERIES) shown.push(`and ${clauses.length - MAX_SERIES} more series`);
  const title = titleOf(layout) || "Chart";
  return shown.length ? `${title}: ${shown.join("; ")}.` : `${title}.`;
}

function csvOf(table) {
  const cell = (value) => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  return [table.head, ...table.body].map((row) => row.map((v) => cell(String(v))).join(",")).join("\n");
}

function drawTable(element, table) {
  element.replaceChildren();
  const cells = table.body.length * table.head.length;
  const rows = cells > MAX_CELLS ? Math.max(1, Math.floor(MAX_CELLS / table.head.length)) : table.body.length;
  const head = element.createTHead().insertRow();
  for (const text of table.head) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    head.appendChild(th);
  }
  const body = element.createTBody();
  for (const row of table.body.slice(0, rows)) {
    const tr = body.insertRow();
    row.forEach((text, index) => {
      const cell = document.createElement(index === 0 ? "th" : "td");
      if (index === 0) cell.scope = "row";
      cell.textContent = text;
      tr.appendChild(cell);
    });
  }
  if (rows < table.body.length) {
    element.createCaption().textContent = `The first ${rows} of ${table.body.length} rows (the CSV has them all).`;
  }
}

const SVG_NS = "http://www.w3.org/2000/svg";
const PNG_SCALE = 2; // a PNG at twice the chart's size on the page: sharp on a slide
const FORMATS = [ // what "Save as…" offers: its format, its item's words
  ["svg", "SVG (drawing, any size)"],
  ["png", `PNG (picture, ${PNG_SCALE}x)`],
  ["csv", "CSV (its numbers)"],
];

// The chart as one SVG document: Plotly's stacked layers (svg.main-svg) on a white ground,
// titled with the chart's title.
function svgOf(plot) {
  const layers = [...plot.querySelectorAll("svg.main-svg")];
  const width = plot.clientWidth;
  const height = plot.clientHeight;
  const root = document.createElementNS(SVG_NS, "svg");
  root.setAttribute("xmlns", SVG_NS);
  for (const [name, value] of [["width", width], ["height", height], ["viewBox", `0 0 ${width} ${height}`]]) {
    root.setAttribute(name, String(value));
  }
  const title = document.createElementNS(SVG_NS, "title");
  title.textContent = titleOf(plot.layout) || "Chart";
  const ground = document.createElementNS(SVG_NS, "rect");
  for (const [name, value] of [["width", "100%"], ["height", "100%"], ["fill", "white"]]) {
    ground.setAttribute(name, value);
  }
  root.append(title, ground);
  for (const layer of layers) {
    const group = document.createElementNS(SVG_NS, "g");
    for (const child of layer.childNodes) group.appendChild(child.cloneNode(true));
    root.appendChild(group);
  }
  return { text: new XMLSerializer().serializeToString(root), width, height };
}

function download(blob, name) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 60000);
}

function saveAs(plot, format) {
  const name = fileName(titleOf(plot.layout));
  if (format === "csv") {
    download(new Blob([csvOf(tableOf(plot.data, plot.layout || {}))], { type: "text/csv" }), `${name}.csv`);
    return;
  }
  const svg = svgOf(plot);
  if (format === "svg") {
    download(new Blob([svg.text], { type: "image/svg+xml" }), `${name}.svg`);
    return;
  }
  const image = new Image();
  image.onload = () => {
    const canvas = document.createElement("canvas");
    canvas.width = svg.width * PNG_SCALE;
    canvas.height = svg.height * PNG_SCALE;
    const context = canvas.getContext("2d");
    context.scale(PNG_SCALE, PNG_SCALE);
    context.drawImage(image, 0, 0);
    canvas.toBlob((blob) => download(blob, `${name}.png`), "image/png");
  };
  image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg.text)}`;
}

function button(words, attributes) {
  const made = document.createElement("button");
  made.type = "button";
  made.textContent = words;
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
  return made;
}

// After a chart, made once: "Show as a table" and "Save as…" (a menu: SVG, PNG, CSV). Each
// reads the chart's numbers when used, not on every redraw.
function controlsFor(plot) {
  const host = plot.parentElement;
  let box = host.querySelector(":scope > [data-testid=figure-text]");
  if (box) return box;
  box = document.createElement("div");
  box.setAttribute("data-testid", "figure-text");
  box.className = "figure-text";
  const toggle = button("Show as a table", { "data-testid": "figure-table-toggle", "aria-expanded": "false" });
  const save = button("Save as…", { "data-testid": "figure-save", "aria-haspopup": "menu", "aria-expanded": "false" });
  const menu = document.createElement("div");
  menu.setAttribute("role", "menu");
  menu.setAttribute("data-testid", "figure-save-menu");
  menu.hidden = true;
  const table = document.createElement("table");
  table.setAttribute("data-testid", "figure-table");
  table.hidden = true;
  toggle.addEventListener("click", () => {
    const open = table.hidden;
    if (open) drawTable(table, tableOf(plot.data, plot.layout || {}));
    table.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Hide the table" : "Show as a table";
  });
  const showMenu = (open) => {
    menu.hidden = !open;
    save.setAttribute("aria-expanded", String(open));
  };
  save.addEventListener("click", () => {
    showMenu(menu.hidden);
    if (!menu.hidden) menu.querySelector("button").focus();
  });
  for (const [format, words] of FORMATS) {
    const item = button(words, { role: "menuitem", "data-role": "export", "data-format": format });
    item.addEventListener("click", () => {
      showMenu(false);
      save.focus();
      saveAs(plot, format);
    });
    menu.appendChild(item);
  }
  box.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !menu.hidden) {
      showMenu(false);
      save.focus();
      event.stopPropagation();
    }
  });
  box.append(toggle, save, menu, table);
  host.appendChild(box);
  return box;
}

function fileName(title) {
  return title.replace(/[^\w\- ]+/g, "").trim().slice(0, 60) || "chart";
}

const described = new WeakMap(); // plot: the data it was last described from

function describe(plot) {
  const traces = plot.data;
  const layout = plot.layout || {};
  if (!Array.isArray(traces) || described.get(plot) === traces) return;
  described.set(plot, traces);
  plot.setAttribute("role", "figure");
  plot.setAttribute("aria-label", sentenceOf(traces, layout));
  const table = controlsFor(plot).querySelector("[data-testid=figure-table]");
  if (!table.hidden) drawTable(table, tableOf(traces, layout)); // open: it follows the chart
}

function describeAll() {
  for (const plot of document.querySelectorAll(".js-plotly-plot")) {
    try {
      describe(plot);
    } catch (error) {
      plot.setAttribute("aria-label", titleOf(plot.layout) || "Chart");
    }
  }
}

// Once the page has been still for QUIET_MS, not on every frame of a page being drawn.
const QUIET_MS = 100;
let timer = null;
function soon() {
  clearTimeout(timer);
  timer = setTimeout(describeAll, QUIET_MS);
}

if (!window.encoderExplorerFigures) {
  window.encoderExplorerFigures = true;
  new MutationObserver(soon).observe(document.body, { childList: true, subtree: true });
  soon();
}
