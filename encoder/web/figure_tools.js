/**
 * What every figure offers beside itself, whoever draws it (a Plotly chart on the page, the
 * attention explorer, the head scatter): "Show as a table" (its numbers, one keyboard stop) and
 * "Save as…" (a menu: SVG, PNG at PNG_SCALE times its size, CSV of its numbers). Nothing is
 * sent to a server; user text (tokens) is drawn with textContent.
 *
 * And what the SVG figure modules share beyond those: a key's step, a redraw on a new width, the
 * frame of new data, their font, a word wrap, round ticks, a token's label and the saved file
 * with its title; their mount's frame (mountFigure); and the heatmaps' colour bar and chosen
 * cell's ring (below).
 *
 * Imported by the modules and by the page's own script (app/assets/page/figure_text.js).
 * ("\x3c" is "<" in these files: Streamlit's st.html drops a script whose text holds a tag's
 * opening, even in a string.)
 *
 * DOM contract: figureControls' box is [data-testid=figure-text]; it holds the toggle
 * [data-testid=figure-table-toggle] (aria-expanded), the menu button [data-testid=figure-save]
 * (aria-expanded) and its menu [data-testid=figure-save-menu] of
 * [data-role=export][data-format=svg|png|csv] items, and the table [data-testid=figure-table]
 * (hidden until toggled). A table is {head: [...], body: [[...], ...]} of strings and numbers:
 * the table on the page writes a number as the language spoken writes it ("0,0906" in Spanish),
 * the CSV as String does ("0.0906"), for any program to read.
 */
import { element, speakWith, spoken, rightToLeft, _, number } from "./shared.js";

const FIGURE_MAX_CELLS = 20000; // a table's cells; beyond, its first rows and a line that says so
const SVG_NS = "http://www.w3.org/2000/svg";
const PNG_SCALE = 2; // a PNG at twice the figure's size on the page: sharp on a slide
const SAVE_FORMATS = [ // what "Save as…" offers: its format, its item's words (in the language
  // spoken, shared.js's `_`; the formats' names stay)
  ["svg", () => _("SVG (drawing, any size)")],
  ["png", () => _("PNG (picture, {scale}x)", { scale: PNG_SCALE })],
  ["csv", () => _("CSV (its numbers)")],
];

/** A number as a figure's table and sentence give it: three significant digits (anything else,
 * NaN among them, as it is). */
export function figureRounded(value) {
  return typeof value === "number" && Number.isFinite(value) ? Number(value.toPrecision(3)) : value;
}

/** `value` as the language spoken writes it, with the digits String(value) gives ("0,0906" in
 * Spanish; in English String(value) itself); anything but a plain decimal number (a word, NaN,
 * 1e-7) as String gives it. */
function spokenNumber(value) {
  const text = String(value);
  if (typeof value !== "number" || !/^-?\d+(\.\d+)?$/.test(text)) return text;
  return number(value, (text.split(".")[1] || "").length, false);
}

/** figureRounded's number as the language spoken writes it in a sentence ("0,715" in Spanish). */
export function figureSaid(value) {
  return spokenNumber(figureRounded(value));
}

function csvText(table) {
  const cell = (value) => (/[",\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value);
  return [table.head, ...table.body].map((row) => row.map((v) => cell(String(v))).join(",")).join("\n");
}

/** `table` drawn into the table element `into`: a header row, a row header per row, and at most
 * FIGURE_MAX_CELLS cells, with a caption where it stops. */
function drawTable(into, table) {
  into.replaceChildren();
  const cells = table.body.length * table.head.length;
  const rows = cells > FIGURE_MAX_CELLS
    ? Math.max(1, Math.floor(FIGURE_MAX_CELLS / table.head.length)) : table.body.length;
  const head = into.createTHead().insertRow();
  for (const text of table.head) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    head.appendChild(th);
  }
  const body = into.createTBody();
  for (const row of table.body.slice(0, rows)) {
    const tr = body.insertRow();
    row.forEach((text, index) => {
      const cell = document.createElement(index === 0 ? "th" : "td");
      if (index === 0) cell.scope = "row";
      cell.textContent = spokenNumber(text); // a number as the language writes it; the CSV's as String
      tr.appendChild(cell);
    });
  }
  if (rows < table.body.length) {
    into.createCaption().textContent = _("The first {rows} of {total} rows (the CSV has them all).",
      { rows: number(rows, 0, false), total: number(table.body.length, 0, false) });
  }
}

/** A file name made from a figure's title. */
function fileName(title) {
  return title.replace(/[^\w\- ]+/g, "").trim().slice(0, 60) || "figure";
}

/** A new SVG element with these attributes and, if given, this text (as text). */
export function svgNode(tag, attributes = {}, text = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

/** One SVG document of `width` x `height` on a white ground, titled `title`, holding `layers`
 * (SVG elements, cloned: the page keeps its own) one group each: {text, width, height}. */
export function svgDocument(layers, width, height, title) {
  const root = svgNode("svg", { xmlns: SVG_NS, width, height, viewBox: `0 0 ${width} ${height}` });
  root.append(svgNode("title", {}, title), svgNode("rect", { width: "100%", height: "100%", fill: "white" }));
  for (const layer of layers) {
    const group = svgNode("g");
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

/** The figure saved as `format`: "csv" from figure.table(), "svg" or "png" from figure.svg()
 * (an svgDocument), named after figure.title(). */
function saveFigure(figure, format) {
  const name = fileName(figure.title());
  if (format === "csv") {
    download(new Blob([csvText(figure.table())], { type: "text/csv" }), `${name}.csv`);
    return;
  }
  const svg = figure.svg();
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

function figureButton(words, attributes) {
  const made = document.createElement("button");
  made.type = "button";
  made.textContent = words;
  for (const [name, value] of Object.entries(attributes)) made.setAttribute(name, value);
  return made;
}

/** "Show as a table" and "Save as…" for `figure` ({title(), table(), svg()}, each read when
 * used, not on every redraw), in a new box for the caller to place. box.refresh() redraws an
 * open table from figure.table(), for a figure that changed; box.relabel() says its words again
 * in the language spoken now (shared.js's speakWith). */
export function figureControls(figure) {
  const box = document.createElement("div");
  box.setAttribute("data-testid", "figure-text");
  box.className = "figure-text";
  const toggle = figureButton(_("Show as a table"), { "data-testid": "figure-table-toggle", "aria-expanded": "false" });
  const save = figureButton(_("Save as…"), { "data-testid": "figure-save", "aria-haspopup": "menu", "aria-expanded": "false" });
  const menu = document.createElement("div");
  menu.setAttribute("role", "menu");
  menu.setAttribute("data-testid", "figure-save-menu");
  menu.hidden = true;
  const table = document.createElement("table");
  table.setAttribute("data-testid", "figure-table");
  table.tabIndex = 0; // it scrolls past 24rem: the keyboard must reach it to scroll it
  table.hidden = true;
  toggle.addEventListener("click", () => {
    const open = table.hidden;
    if (open) drawTable(table, figure.table());
    table.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? _("Hide the table") : _("Show as a table");
  });
  const showMenu = (open) => {
    menu.hidden = !open;
    save.setAttribute("aria-expanded", String(open));
  };
  save.addEventListener("click", () => {
    showMenu(menu.hidden);
    if (!menu.hidden) menu.querySelector("button").focus();
  });
  for (const [format, words] of SAVE_FORMATS) {
    const item = figureButton(words(), { role: "menuitem", "data-role": "export", "data-format": format });
    item.addEventListener("click", () => {
      showMenu(false);
      save.focus();
      saveFigure(figure, format);
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
  box.refresh = () => {
    if (!table.hidden) drawTable(table, figure.table());
  };
  box.relabel = () => { // the buttons' words in the language spoken now
    toggle.textContent = table.hidden ? _("Show as a table") : _("Hide the table");
    save.textContent = _("Save as…");
    SAVE_FORMATS.forEach(([, words], i) => { menu.children[i].textContent = words(); });
  };
  return box;
}

// ---------------------------------------------------------------- what a figure module shares
// (token_lines.js, value_histogram.js, top_units.js: an SVG figure, one Tab stop, a readout)

const FIGURE_ARROWS = { ArrowRight: 1, ArrowLeft: -1 }; // in the drawing's direction

/** The place a key moves a figure's choice to, among 0..last from `chosen` (-1: none): ← and →
 * the previous and next in the direction drawn (right to left in Arabic), the first arrow the
 * first place; Home the first, End the last; Escape none. undefined: the key is not the
 * figure's (Escape with nothing chosen, a modifier held, another key). */
export function figureStep(event, chosen, last) {
  if (event.altKey || event.ctrlKey || event.metaKey) return undefined;
  if (event.key in FIGURE_ARROWS) {
    const step = FIGURE_ARROWS[event.key] * (rightToLeft() ? -1 : 1);
    return chosen < 0 ? 0 : Math.min(last, Math.max(0, chosen + step));
  }
  if (event.key === "Home") return 0;
  if (event.key === "End") return last;
  if (event.key === "Escape" && chosen >= 0) return -1;
  return undefined;
}

/** `redraw()` whenever `box` becomes more than a pixel wider or narrower than at the last draw;
 * the returned {drawn(), stop()}: drawn() notes the width a draw used, stop() stops watching. */
function watchWidth(box, redraw) {
  let width = 0;
  const observer = new ResizeObserver(() => {
    const now = Math.floor(box.clientWidth);
    if (now && Math.abs(now - width) > 1) {
      width = now;
      redraw();
    }
  });
  observer.observe(box);
  return {
    drawn() { width = Math.floor(box.clientWidth); },
    stop() { observer.disconnect(); },
  };
}

/** A figure module's frame for its new `data`: the language it speaks (data.lang, data.words,
 * data.direction), the root's lang and dir, the title (data.title, also the root's name), the
 * plot's role in words (`role`, said after the language is set) and its tools' words. */
function frameFor(data, { root, title, plot, tools }, role) {
  speakWith(data && data.words, data && data.lang, data && data.direction);
  root.setAttribute("lang", spoken());
  root.setAttribute("dir", rightToLeft() ? "rtl" : "ltr");
  title.textContent = data && data.title ? data.title : "";
  root.setAttribute("aria-label", title.textContent);
  plot.setAttribute("aria-roledescription", role());
  tools.relabel();
}

const FIGURE_FONT = "system-ui, -apple-system, sans-serif"; // an SVG figure's, in its file too
export const FIGURE_INK = "#1b1b1b";
export const FIGURE_CHAR = 0.6; // of the font's size: a character's width, estimated

/** `text` in lines of at most `chars` characters, broken between words (a longer word: a line
 * of its own). */
export function wrapWords(text, chars) {
  const lines = [];
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    const last = lines.length - 1;
    if (last >= 0 && [...lines[last]].length + 1 + [...word].length <= chars) lines[last] += ` ${word}`;
    else lines.push(word);
  }
  return lines;
}

/** A figure module's drawing (the svg `plot`, drawn `width` x `height`) as an SVG document with
 * a margin of 12 px, its `title` and the lines under it (`notes`) above it, wrapped to its width
 * (on the right in a right-to-left language). */
function savedFigure(plot, width, height, title, notes = []) {
  const margin = 12;
  const rtl = rightToLeft();
  const words = svgNode("g", { "font-family": FIGURE_FONT, fill: FIGURE_INK });
  let y = margin - 4;
  const lines = [[title, 17, 600], ...notes.map((note) => [note, 14, 400])];
  for (const [text, size, weight] of lines) {
    for (const line of wrapWords(text, Math.floor(width / (size * FIGURE_CHAR)))) {
      y += size * 1.35;
      words.appendChild(svgNode("text", { x: rtl ? margin + width : margin, y, "font-size": size,
        "font-weight": weight, direction: rtl ? "rtl" : "ltr" }, line));
    }
  }
  y = Math.ceil(y + 10);
  const drawing = svgNode("g", { transform: `translate(${margin} ${y})` });
  for (const child of plot.childNodes) drawing.appendChild(child.cloneNode(true));
  const layer = svgNode("g");
  layer.append(words, drawing);
  return svgDocument([layer], width + 2 * margin, height + y + margin, title);
}

/** About `count` round steps spanning [low, high]: {low, high, ticks, digits} (1, 2 or 5 times a
 * power of ten apart, the ends on a step; `digits`: the decimals the steps need). */
export function niceScale(low, high, count = 4) {
  if (!(high > low)) { // one value: a unit around it
    const pad = Math.abs(low) > 0 ? Math.abs(low) * 0.1 : 1;
    [low, high] = [low - pad, high + pad];
  }
  const raw = (high - low) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * power).find((s) => s >= raw);
  const start = Math.floor(low / step) * step;
  const end = Math.ceil(high / step) * step;
  const ticks = [];
  for (let v = start; v <= end + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  return { low: start, high: end, ticks, digits };
}

const TOKEN_LABEL_CHARS = 12; // a token's label on a figure's axis, cut beyond

/** A token as a figure's axis label says it: cut beyond TOKEN_LABEL_CHARS characters. */
export const tokenLabel = (token) => ([...token].length > TOKEN_LABEL_CHARS
  ? `${[...token].slice(0, TOKEN_LABEL_CHARS - 1).join("")}…` : token);

/** The room under a plot for token labels turned 45°, `size` px, the longest `chars` long. */
export const angledRoom = (chars, size) => Math.ceil(chars * FIGURE_CHAR * size * Math.SQRT1_2) + 24;

/** Token `p`'s label turned 45° under its column at `x`, hanging from `base`, `size` px (`bold`,
 * where given: the chosen token's weight). */
export function tokenTick(tokens, p, x, base, size, bold = null) {
  const rtl = rightToLeft();
  const weight = bold === null ? {} : { "font-weight": bold ? 700 : 400 };
  return svgNode("text", { "data-role": "tick", "data-position": p, "data-token-text": tokens[p],
    x, y: base + size * 0.7, "font-size": size, ...weight, "text-anchor": rtl ? "start" : "end",
    transform: `rotate(${rtl ? 45 : -45} ${x} ${base})` }, tokenLabel(tokens[p]));
}

/** A value's grid line across a plot, from `left` to `right` at `y`, and its label at `labelX`. */
export const gridTick = (left, right, y, labelX, anchor, size, text) => [
  svgNode("line", { x1: left, x2: right, y1: y, y2: y, stroke: "#e3e3e3" }),
  svgNode("text", { x: labelX, y: y + size * 0.35, "font-size": size, "text-anchor": anchor }, text),
];

/** A plot's frame. */
export const plotFrame = (x, y, width, height) =>
  svgNode("rect", { x, y, width, height, fill: "none", stroke: "#8c8c8c" });

/** A path's `d` through the finite `values` (the i-th at xOf(i), yOf(value)), gaps skipped. */
export function figurePath(values, xOf, yOf) {
  let path = "";
  values.forEach((v, i) => {
    if (Number.isFinite(v)) path += `${path ? "L" : "M"}${xOf(i).toFixed(1)},${yOf(v).toFixed(1)}`;
  });
  return path;
}

// ------------------------------------------------------------ an SVG figure module's frame

const FIGURE_LARGE = 8 / 7; // presenter mode's figures (data.large_text): 14 px labels at 16 px

/** Where a mouse `event` points in a figure's drawing (its plot's px over its scale, `state`'s:
 * mountFigure's), as {x, y} from the drawing's top left. */
export function figurePoint(plot, state, event) {
  const box = plot.getBoundingClientRect();
  const scale = state.scale || 1;
  return { x: (event.clientX - box.left) / scale, y: (event.clientY - box.top) / scale };
}
// (token_lines.js, value_histogram.js, top_units.js, head_fingerprint.js, block_diagram.js: all
// their mount does but draw, mark the choice, say it and read the mouse and keys)

/** An SVG figure module's frame, mounted in `host` (an element or shadow root), from `spec`:
 * the module's words for its DOM (name: the classes' stem; testid; choice: the root's data-*
 * that says the choice; untitled; minWidth, px; written; note; role; label; table; counts) and
 * its functions (problem, forget, draw, show, key, choose; below). Its DOM, in this order, each
 * part a div classed svg-figure-title (the frame's look: figure_tools.css) and
 * `${spec.name}-title` (the module's), and so on (the plot an svg):
 *   root     classes svg-figure and spec.name, [data-testid=spec.testid], role="figure",
 *            data-{spec.choice}=""
 *            (show() keeps it); lang, dir and aria-label from frameFor; data-{name} of
 *            spec.counts, data-width and data-draw-ms
 *   title    dir="auto" where spec.written (a title that comes written)
 *   notes    only where spec.note: spec.note(line) for each line of data.notes
 *   message  [data-role=message]: why nothing is drawn
 *   plot     the svg [data-role=plot], tabindex="0", role="application", aria-roledescription
 *            spec.role(), aria-label spec.label(d) (with nothing drawn: the message)
 *   readout  [data-role=readout], aria-live="polite"
 *   tools    figureControls': its table spec.table(d); its drawing saved with the title and the
 *            notes shown, state.width wide (spec.minWidth before a draw), named after the title
 *            or spec.untitled
 *
 * spec's functions (d: data it can draw):
 *   problem(data)   why `data` cannot be drawn, or "" (then it is d)
 *   counts          {name: (d) => how many}: the root's data-{name}, "0" with no d
 *   forget(d)       drops the module's choice where new data (d, or null) has no place for it
 *   draw(canvas, d, width)  draws d into `canvas` (the plot's one group, in FIGURE_FONT) `width`
 *                   px wide (spec.minWidth at least; the root's): returns the height it took
 *   show()          marks the choice and says it in the readout (empty with no d); called after
 *                   each draw, and after an update with nothing to draw
 *   key(event, d)   the choice a key on the plot moves to, or undefined: not the figure's key (a
 *                   modifier held: never asked); then its default is prevented and
 *   choose(next)    called with it
 *
 * Returns {root, plot, readout, state, start(data)}: state is {data (d or null), width, height,
 * scale} (the last draw's: its drawing's size, and how many times as large it is shown, more
 * than 1 for data.large_text: figurePoint reads the mouse in it), for the module to add what its
 * drawing needs; start(data) frames and draws
 * the first data and returns the module's {update(data), destroy()}. A new width redraws. */
export function mountFigure(host, spec) {
  const f = figureParts(host, spec);
  const { root, plot, readout, state } = f;
  plot.addEventListener("keydown", (event) => {
    if (!state.data || event.altKey || event.ctrlKey || event.metaKey) return;
    const next = spec.key(event, state.data);
    if (next === undefined) return;
    event.preventDefault();
    spec.choose(next);
  });
  f.resizing = watchWidth(root, () => state.data && drawFrame(f));
  const update = (next) => updateFrame(f, next);

  function start(data) {
    update(data);
    return {
      update,
      destroy() {
        f.resizing.stop();
        root.remove();
      },
    };
  }

  return { root, plot, readout, state, start };
}

/** A figure's parts in `host`: its title, notes, message, plot, readout and tools, its state. */
function figureParts(host, spec) {
  // each part classed twice: the frame's look (figure_tools.css: svg-figure-*) and the module's
  const part = (role, attributes = {}) => element("div", {
    class: `svg-figure-${role} ${spec.name}-${role}`, ...attributes });
  const root = element("div", { class: `svg-figure ${spec.name}`, "data-testid": spec.testid,
    role: "figure", [`data-${spec.choice}`]: "" });
  const title = part("title", spec.written ? { dir: "auto" } : {});
  const notes = spec.note ? part("notes") : null;
  const message = part("message", { "data-role": "message" });
  const plot = svgNode("svg", { class: `svg-figure-plot ${spec.name}-plot`, "data-role": "plot",
    tabindex: "0", role: "application" });
  const readout = part("readout", { "data-role": "readout", "aria-live": "polite" });
  const state = { data: null, width: 0, height: 0 };
  const tools = figureControls({
    title: () => title.textContent || spec.untitled,
    table: () => spec.table(state.data),
    svg: () => savedFigure(plot, state.width || spec.minWidth, state.height, title.textContent,
      notes ? [...notes.children].map((note) => note.textContent) : []),
  });
  root.append(...[title, notes, message, plot, readout, tools].filter(Boolean));
  host.appendChild(root);
  return { host, spec, root, title, notes, message, plot, readout, state, tools };
}

/** The figure's data drawn as wide as its place (then the module's marks of the choice). */
function drawFrame({ host, spec, root, plot, state }) {
  const start = performance.now();
  plot.replaceChildren();
  const d = state.data;
  if (!d) return;
  // one group holds the drawing, its font with it (a saved SVG has no stylesheet)
  const canvas = svgNode("g", { "font-family": FIGURE_FONT, fill: FIGURE_INK });
  plot.appendChild(canvas);
  // large text (presenter mode): drawn for a narrower place and shown FIGURE_LARGE times as
  // large, every word and mark with it (the layout stays the module's own)
  const scale = d.large_text ? FIGURE_LARGE : 1;
  const room = root.clientWidth || host.clientWidth || 640;
  const width = Math.max(spec.minWidth, Math.floor(room / scale));
  const height = spec.draw(canvas, d, width);
  plot.setAttribute("width", Math.round(width * scale));
  plot.setAttribute("height", Math.round(height * scale));
  plot.setAttribute("viewBox", `0 0 ${width} ${height}`);
  Object.assign(state, { width, height, scale });
  root.dataset.width = String(width);
  root.dataset.drawMs = (performance.now() - start).toFixed(1);
  spec.show();
}

/** New data for the figure: its frame's words, its notes and counts, drawn. */
function updateFrame(f, next) {
  const { spec, root, notes, plot, state } = f;
  const problem = spec.problem(next);
  frameFor(next, f, spec.role);
  f.message.textContent = problem;
  if (notes) {
    notes.replaceChildren(...(next && Array.isArray(next.notes) ? next.notes : [])
      .map((note) => spec.note(note)));
  }
  state.data = problem ? null : next;
  for (const [name, count] of Object.entries(spec.counts)) {
    root.dataset[name] = state.data ? String(count(state.data)) : "0";
  }
  plot.setAttribute("aria-label", state.data ? spec.label(state.data) : problem);
  spec.forget(state.data);
  f.resizing.drawn();
  drawFrame(f);
  if (!state.data) spec.show();
  f.tools.refresh(); // an open table follows the data
}

// ------------------------------------------------------------- what a heatmap module shares
// (top_units.js, head_fingerprint.js: cells in viridis, a colour bar beside them, a chosen
// cell's ring)

const FIGURE_SCALE_WIDTH = 14; // px: a colour bar's width
const FIGURE_SCALE_STEPS = 48; // a colour bar's bands

/** What a colour bar from `low` to `high` marks: about `count` round values inside it ({ticks,
 * digits}, as niceScale rounds them) and the px its bar and their labels (`size` px) take. */
export function colourBarScale(low, high, count, size) {
  const scale = niceScale(low, high, count);
  const ticks = scale.ticks.filter((t) => t >= low - 1e-9 && t <= high + 1e-9);
  const widest = Math.max(0, ...ticks.map((t) => [...number(t, scale.digits, false)].length));
  return { ticks, digits: scale.digits,
    width: FIGURE_SCALE_WIDTH + 6 + Math.ceil(widest * FIGURE_CHAR * size) };
}

/** A vertical colour bar, [data-role=colour-bar], in a drawing `width` px wide:
 * FIGURE_SCALE_STEPS bands from `low` (at the bottom) to `high` (at the top), each coloured
 * `colour(value)`, its left edge at `left`, from `top` down `height` px; beside it, on the far
 * side, the values of `scale` (colourBarScale's); above it its `title` (its baseline 14 px above
 * `top`, clear of the top value's label), starting over the bar or, given `titleEnd` (an x),
 * ending there. Laid out left to right, mirrored within `width` in a
 * right-to-left language; its text `size` px. */
export function colourBar({ width, left, top, height, low, high, colour, scale, title, size,
  titleEnd = null }) {
  const rtl = rightToLeft();
  const X = (x) => (rtl ? width - x : x); // a point
  const far = rtl ? "end" : "start"; // an anchor that keeps a label away from the bar
  const bar = svgNode("g", { "data-role": "colour-bar" });
  const step = height / FIGURE_SCALE_STEPS;
  const span = high - low;
  for (let s = 0; s < FIGURE_SCALE_STEPS; s += 1) {
    const v = low + ((s + 0.5) / FIGURE_SCALE_STEPS) * span;
    bar.appendChild(svgNode("rect", { x: rtl ? width - left - FIGURE_SCALE_WIDTH : left,
      y: (top + height - (s + 1) * step).toFixed(2), width: FIGURE_SCALE_WIDTH,
      height: (step + 0.5).toFixed(2), fill: colour(v) }));
  }
  const edge = left + FIGURE_SCALE_WIDTH;
  for (const tick of scale.ticks) {
    const y = span > 0 ? top + height - ((tick - low) / span) * height : top + height;
    bar.append(
      svgNode("line", { x1: X(edge), x2: X(edge + 4), y1: y, y2: y, stroke: FIGURE_INK }),
      svgNode("text", { x: X(edge + 6), y: y + size * 0.35, "text-anchor": far, "font-size": size },
        number(tick, scale.digits, false)),
    );
  }
  const ending = titleEnd !== null;
  bar.appendChild(svgNode("text", { x: X(ending ? titleEnd : left), y: top - 14,
    "text-anchor": ending ? (rtl ? "start" : "end") : far, "font-size": size }, title));
  return bar;
}

/** The text colour on a cell of colour `[r, g, b]`: the ink or white, whichever contrasts more
 * (WCAG's relative luminance). */
export function figureInkOn([r, g, b]) {
  const lin = (c) => { const s = c / 255; return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
  const y = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  return 1.05 / (y + 0.05) > (y + 0.05) / 0.0611 ? "#ffffff" : FIGURE_INK; // 0.0611: the ink's
}

/** A chosen cell's ring, [data-role=ring]: white inside black, seen on every colour; hidden
 * until figureRingAt places it. */
export function figureRing() {
  const ring = svgNode("g", { "data-role": "ring", fill: "none", visibility: "hidden",
    "pointer-events": "none" });
  ring.append(
    svgNode("rect", { "data-edge": "outer", stroke: FIGURE_INK, "stroke-width": 2 }),
    svgNode("rect", { "data-edge": "inner", stroke: "#ffffff", "stroke-width": 2 }),
  );
  return ring;
}

/** `ring` (figureRing's) around the cell `box` ({x, y, width, height}, as drawn), its black edge
 * just outside the cell and its white one just inside; hidden when `box` is null. */
export function figureRingAt(ring, box) {
  ring.setAttribute("visibility", box ? "visible" : "hidden");
  if (!box) return;
  const [outer, inner] = ring.children;
  for (const [rect, pad] of [[outer, 1], [inner, -1]]) {
    rect.setAttribute("x", (box.x - pad).toFixed(2));
    rect.setAttribute("y", (box.y - pad).toFixed(2));
    rect.setAttribute("width", (box.width + 2 * pad).toFixed(2));
    rect.setAttribute("height", (box.height + 2 * pad).toFixed(2));
  }
}
