/**
 * Head scatter: one head's queries and keys from a whole corpus, in one plane (AttentionViz).
 *
 * An ES module, no framework, no network: each host's glue calls `mount`, the whole joined
 * into one file per host (encoder/web/hosts.py). The stylesheet is head_scatter.css beside this file.
 *
 *   const scatter = mount(host, data, {colour});   // host: an element or shadow root
 *   scatter.update(newData);   // another head or corpus; the colouring is kept
 *   scatter.destroy();
 *
 * data: {title, x: number[], y: number[], role: (0 query | 1 key)[], sentence: int[],
 *        position: int[], kind: int[], kinds: string[], tokens: string[] (one per point),
 *        sentences: string[], axes?: [x's name, y's name] ("x", "y" without), layer?, head?,
 *        lang?, words?}: every array of x's length but kinds, sentences and axes. With `lang`
 *        and `words` (encoder/web/scatter.py) its words are in that language (shared.js's `_`),
 *        the title made from `layer` and `head` in it; without, English and the data's title.
 * User text (tokens, sentences) is drawn with textContent only.
 *
 * Keyboard (the plane is one Tab stop): an arrow key selects the nearest point that way (for →,
 * among the points to the right, the one with the least dx + 2|dy|: off-axis counts double; at
 * the edge nothing happens; the first arrow selects the first point), Home the first point, End
 * the last, Escape clears the selection and the hover readout (and, anywhere on the page, a
 * mouse's hover readout). The plane's scale is the same across and up, so distances in the
 * data's units are the screen's. A click selects the point under the mouse.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="head-scatter"] role="figure", named by the title, with data-points
 *            (how many), data-colour ("position" | "kind" | "role"), data-draw-ms (the last
 *            draw's time), data-hover (the hovered point's index, "" when none),
 *            data-hover-token, data-hover-role, data-hover-sentence (its sentence's index),
 *            data-selected (the keyboard's point's index, "" when none), data-key-ms (the last
 *            key's handling time)
 *   buttons  [data-role="colour"][data-colour=...][aria-pressed]
 *   plane    the canvas [data-role="plane"] (hover: the nearest point within HOVER_PX):
 *            tabindex="0", role="application", aria-roledescription="scatter plot", aria-label
 *            a sentence of its data (how many points, queries and keys, each axis's name and
 *            range, the keys)
 *   marks    [data-role="hover-mark"], [data-role="selected-mark"]: rings over the hovered and
 *            the selected point (aria-hidden, `hidden` when none)
 *   hover    [data-role="hover"], aria-live="polite": the point shown (the hovered one, else
 *            the selected one): its token, query or key, its position, its sentence, its x and y
 *   legend   [data-role="legend"]
 *   tools    figure_tools.js's [data-testid=figure-text] after the plane: "Show as a table" (one
 *            row per point: token, role, position, kind, sentence, x, y) and "Save as…" (CSV of
 *            those rows, SVG or PNG of the plane with its title and legend)
 *   message  [data-role="message"]: why nothing is drawn
 */
import {
  OKABE_ITO, SERIES_COLOURS, viridis, rgb, element, speakWith, spoken, rightToLeft, _, n_,
  number
} from "./shared.js";
import { svgNode, svgDocument, figureControls } from "./figure_tools.js";

const SIZE = 560; // px, the plane's side
const PAD = 12;
const HOVER_PX = 8;
const CELL = 16; // px per bucket of the hover grid
const KIND_COLOURS = SERIES_COLOURS; // six kinds: the first six
const ROLE_COLOURS = [OKABE_ITO.green, OKABE_ITO.purple]; // query, key
const ROLES = ["query", "key"];
const COLOURINGS = ["position", "kind", "role"];
// arrow key -> [sign across, sign up] in the data's units (y grows upward on the screen)
const ARROWS = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] };
const OFF_AXIS = 2; // an arrow's cost: distance along it + OFF_AXIS x distance across it
const promptWords = () =>
  _("Hover a point, or Tab to the plane and use the arrow keys: its token and its sentence.");
// the words the data sends in English (encoder/web/scatter.py, encoder.inspect.token_kinds), in
// the language spoken; any other (a token kind such as "[CLS]") as it is
const DATA_WORDS = {
  "the first principal component": () => _("the first principal component"),
  "the second principal component": () => _("the second principal component"),
  punctuation: () => _("punctuation"),
  word: () => _("word"),
  special: () => _("special"),
  query: () => _("query"),
  key: () => _("key"),
};
const said = (word) => (Object.hasOwn(DATA_WORDS, word) ? DATA_WORDS[word]() : word);
const COLOUR_BY = { // a colouring's button
  position: () => _("colour by position"),
  kind: () => _("colour by kind"),
  role: () => _("colour by role"),
};

/** A coordinate for the readout: at most 4 decimals. */
const coordinate = (value) => {
  const text = String(Number(value.toFixed(4)));
  return /e/.test(text) ? text : number(Number(text), (text.split(".")[1] || "").length, false);
};

/** The data's axis names, or "x" and "y". */
function axesOf(data) {
  const axes = Array.isArray(data.axes) && data.axes.length === 2 ? data.axes : ["x", "y"];
  return axes.map(String);
}

/** The data as sent: an object (a notebook, an offline file), or its JSON as bytes (the page,
 * where app.corpus_stats.scatter_for keeps it serialised); bytes that are not JSON: null. */
function asData(data) {
  if (!(data instanceof ArrayBuffer || ArrayBuffer.isView(data))) return data;
  const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
    : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    return null;
  }
}

function check(data) {
  const n = data && data.x ? data.x.length : 0;
  if (!n) return _("no points to draw");
  for (const name of ["y", "role", "sentence", "position", "kind", "tokens"]) {
    if (!data[name] || data[name].length !== n) return `the scatter's ${name} does not match its ${n} points`;
  }
  return "";
}

/** The data's title: made from its layer and head in the language spoken, else as sent. */
function scatterTitle(data) {
  if (!data || !data.x || !Number.isInteger(data.layer) || !Number.isInteger(data.head)) {
    return data && data.title ? data.title : "";
  }
  return n_("layer {layer}, head {head}: {count} query and key",
    "layer {layer}, head {head}: {count} queries and keys", data.x.length,
    { layer: data.layer, head: data.head });
}

/** Every point as a table's row: token, role, position, kind, sentence, x, y. */
function pointTable(d) {
  if (!d) return { head: ["point"], body: [] };
  const body = d.x.map((x, i) => [d.tokens[i], ROLES[d.role[i]], String(d.position[i]),
    d.kinds[d.kind[i]], d.sentences[d.sentence[i]] ?? "", x, d.y[i]]);
  return { head: [_("token"), _("role"), _("position"), _("kind"), _("sentence"), "x", "y"], body };
}

/** The figure's elements, appended to `host`: a view `v` the functions below share, with its
 * data's layout (`v.state`), its colouring, the hovered (mouse) and selected (keyboard) points. */
function scatterDom(host, colour) {
  const v = {
    root: element("div", { class: "hsc", "data-testid": "head-scatter", "data-hover": "",
      "data-selected": "", role: "figure" }),
    title: element("span", { class: "hsc-title" }),
    buttons: element("span", { class: "hsc-group" }),
    canvas: element("canvas", { class: "hsc-plane", "data-role": "plane", width: SIZE,
      height: SIZE, tabindex: "0", role: "application", "aria-roledescription": "scatter plot" }),
    hoverMark: element("div", { class: "hsc-mark", "data-role": "hover-mark",
      "aria-hidden": "true", hidden: "" }),
    selectedMark: element("div", { class: "hsc-mark", "data-role": "selected-mark",
      "aria-hidden": "true", hidden: "" }),
    hover: element("div", { class: "hsc-hover", "data-role": "hover", "aria-live": "polite" }),
    legend: element("div", { class: "hsc-legend", "data-role": "legend" }),
    message: element("div", { class: "hsc-message", "data-role": "message" }),
    state: { data: null, px: null, py: null, grid: null, maxPosition: 1 },
    colour: COLOURINGS.includes(colour) ? colour : "position",
    hovered: -1, // the mouse's point
    selected: -1, // the keyboard's point
  };
  v.tools = figureControls({
    title: () => v.title.textContent || _("Head scatter"),
    table: () => pointTable(v.state.data),
    svg: () => planeSvg(v),
  });
  const [bar, frame, side, body] = ["hsc-bar", "hsc-frame", "hsc-side", "hsc-body"]
    .map((name) => element("div", { class: name }));
  bar.append(v.title, v.buttons);
  side.append(v.legend, v.hover);
  frame.append(v.canvas, v.selectedMark, v.hoverMark);
  body.append(frame, side);
  v.root.append(bar, v.message, body, v.tools);
  host.appendChild(v.root);
  const ratio = window.devicePixelRatio || 1;
  v.canvas.width = SIZE * ratio;
  v.canvas.height = SIZE * ratio;
  v.canvas.style.width = `${SIZE}px`;
  v.canvas.style.height = `${SIZE}px`;
  v.context = v.canvas.getContext("2d");
  v.context.scale(ratio, ratio);
  return v;
}

/** Point `i`'s colour in the view's colouring. */
function colourOf(v, i) {
  const d = v.state.data;
  if (v.colour === "role") return ROLE_COLOURS[d.role[i]];
  if (v.colour === "kind") return KIND_COLOURS[d.kind[i] % KIND_COLOURS.length];
  return rgb(viridis(d.position[i] / v.state.maxPosition));
}

/** Each point's place on the plane (one scale for both axes), the hover grid's buckets, the
 * last position and the data's extent, kept in `state`. */
function scatterLayout(state) {
  const d = state.data;
  const n = d.x.length;
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < n; i++) {
    x0 = Math.min(x0, d.x[i]); x1 = Math.max(x1, d.x[i]);
    y0 = Math.min(y0, d.y[i]); y1 = Math.max(y1, d.y[i]);
  }
  const span = Math.max(x1 - x0, y1 - y0) || 1;
  const inner = SIZE - 2 * PAD;
  const px = new Float32Array(n), py = new Float32Array(n);
  const cells = Math.ceil(SIZE / CELL);
  const grid = Array.from({ length: cells * cells }, () => []);
  let maxPosition = 1;
  for (let i = 0; i < n; i++) {
    px[i] = PAD + ((d.x[i] - x0) / span) * inner;
    py[i] = SIZE - PAD - ((d.y[i] - y0) / span) * inner;
    const cx = Math.min(cells - 1, Math.floor(px[i] / CELL));
    const cy = Math.min(cells - 1, Math.floor(py[i] / CELL));
    grid[cy * cells + cx].push(i);
    maxPosition = Math.max(maxPosition, d.position[i]);
  }
  Object.assign(state, { px, py, grid, cells, maxPosition, extent: [x0, x1, y0, y1] });
}

/** The legend of the view's colouring. */
function drawLegend(v) {
  v.legend.replaceChildren();
  const entries = v.colour === "role"
    ? ROLES.map((r, k) => [said(r), ROLE_COLOURS[k]])
    : v.colour === "kind"
      ? v.state.data.kinds.map((k, i) => [said(k), KIND_COLOURS[i % KIND_COLOURS.length]])
      : [[_("first token"), rgb(viridis(0))],
        [_("position {position}", { position: v.state.maxPosition }), rgb(viridis(1))]];
  for (const [label, swatch] of entries) {
    const row = element("div", { class: "hsc-entry" });
    const dot = element("span", { class: "hsc-swatch" });
    dot.style.background = swatch;
    row.append(dot, element("span", {}, label));
    v.legend.appendChild(row);
  }
  v.legend.appendChild(element("div", { class: "hsc-entry" }, _("● query   ○ key")));
}

/** The points on the plane and the legend, in the view's colouring. */
function draw(v) {
  const start = performance.now();
  const { root, context, state } = v;
  root.dataset.colour = v.colour;
  for (const button of v.buttons.children) {
    button.setAttribute("aria-pressed", String(button.dataset.colour === v.colour));
  }
  context.clearRect(0, 0, SIZE, SIZE);
  if (!state.data) return;
  const d = state.data;
  const n = d.x.length;
  context.lineWidth = 1.2;
  for (let i = 0; i < n; i++) { // queries filled, keys as rings, so both show where they mix
    const c = colourOf(v, i);
    context.beginPath();
    context.arc(state.px[i], state.py[i], 2.6, 0, 2 * Math.PI);
    if (d.role[i] === 0) {
      context.fillStyle = c;
      context.globalAlpha = 0.65;
      context.fill();
    } else {
      context.strokeStyle = c;
      context.globalAlpha = 0.8;
      context.stroke();
    }
  }
  context.globalAlpha = 1;
  drawLegend(v);
  root.dataset.drawMs = (performance.now() - start).toFixed(1);
}

/** The point nearest (mx, my) within HOVER_PX, from the hover grid's buckets around it; -1. */
function nearest(state, mx, my) {
  const { cells, grid, px, py } = state;
  const cx = Math.floor(mx / CELL), cy = Math.floor(my / CELL);
  let best = -1, bestDistance = HOVER_PX * HOVER_PX;
  for (let gy = cy - 1; gy <= cy + 1; gy++) {
    for (let gx = cx - 1; gx <= cx + 1; gx++) {
      if (gx < 0 || gy < 0 || gx >= cells || gy >= cells) continue;
      for (const i of grid[gy * cells + gx]) {
        const distance = (px[i] - mx) ** 2 + (py[i] - my) ** 2;
        if (distance <= bestDistance) { best = i; bestDistance = distance; }
      }
    }
  }
  return best;
}

/** The keyboard's next point from `from` for an arrow's [sign across, sign up]; -1 at the
 * edge. A linear scan: well under a millisecond for ten thousand points. */
function step(state, from, [across, up]) {
  const { x, y } = state.data;
  const x0 = x[from], y0 = y[from];
  let best = -1, bestCost = Infinity;
  for (let j = 0; j < x.length; j++) {
    const dx = x[j] - x0, dy = y[j] - y0;
    const along = across ? across * dx : up * dy;
    if (!(along > 0)) continue;
    const cost = along + OFF_AXIS * Math.abs(across ? dy : dx);
    if (cost < bestCost) { best = j; bestCost = cost; }
  }
  return best;
}

/** A ring `mark` over point `i` (hidden for -1). */
function place({ canvas, state }, mark, i) {
  mark.hidden = i < 0;
  if (i < 0) return;
  mark.style.left = `${canvas.offsetLeft + canvas.clientLeft + state.px[i]}px`;
  mark.style.top = `${canvas.offsetTop + canvas.clientTop + state.py[i]}px`;
}

/** The readout and the rings: the hovered point, else the selected one. */
function show(v) {
  const { root, hovered, selected, hover } = v;
  root.dataset.hover = hovered < 0 ? "" : String(hovered);
  root.dataset.selected = selected < 0 ? "" : String(selected);
  const d = v.state.data;
  if (hovered < 0) {
    for (const name of ["hoverToken", "hoverRole", "hoverSentence"]) delete root.dataset[name];
  } else {
    root.dataset.hoverToken = d.tokens[hovered];
    root.dataset.hoverRole = ROLES[d.role[hovered]];
    root.dataset.hoverSentence = String(d.sentence[hovered]);
  }
  place(v, v.hoverMark, d ? hovered : -1);
  place(v, v.selectedMark, d ? selected : -1);
  const i = hovered < 0 ? selected : hovered;
  hover.replaceChildren();
  if (i < 0) {
    hover.textContent = promptWords();
    return;
  }
  const values = { token: d.tokens[i], position: d.position[i], kind: said(d.kinds[d.kind[i]]) };
  const head = element("div", { class: "hsc-token" }, d.role[i] === 0
    ? _("“{token}” as a query, position {position} ({kind})", values)
    : _("“{token}” as a key, position {position} ({kind})", values));
  const sentence = element("div", { class: "hsc-sentence" }, d.sentences[d.sentence[i]] ?? "");
  const where = element("div", { class: "hsc-where" },
    _("x {x}, y {y}", { x: coordinate(d.x[i]), y: coordinate(d.y[i]) }));
  hover.append(head, sentence, where);
}

function showHover(v, i) {
  if (i === v.hovered) return;
  v.hovered = i;
  show(v);
}

/** The keyboard on the plane: an arrow the nearest point that way, Home the first, End the last,
 * Escape none. */
function onKey(v, event) {
  if (!v.state.data || event.altKey || event.ctrlKey || event.metaKey) return;
  const start = performance.now();
  const n = v.state.data.x.length;
  let next = v.selected;
  if (event.key in ARROWS) {
    next = v.selected < 0 ? 0 : step(v.state, v.selected, ARROWS[event.key]);
    if (next < 0) { // the edge: nothing happens (and the page does not scroll)
      event.preventDefault();
      return;
    }
  } else if (event.key === "Home") {
    next = 0;
  } else if (event.key === "End") {
    next = n - 1;
  } else if (event.key === "Escape") {
    if (v.selected < 0 && v.hovered < 0) return; // nothing to dismiss: the page's Escape
    next = -1;
  } else {
    return;
  }
  event.preventDefault();
  v.hovered = -1; // the last move, mouse or key, is the one shown
  v.selected = next;
  show(v);
  v.root.dataset.keyMs = (performance.now() - start).toFixed(2);
}

/** The colouring buttons, the mouse and the keyboard. */
function listen(v) {
  for (const name of COLOURINGS) {
    const button = element("button", { type: "button", "data-role": "colour", "data-colour": name },
      COLOUR_BY[name]());
    button.addEventListener("click", () => {
      v.colour = name;
      draw(v);
    });
    v.buttons.appendChild(button);
  }
  const { canvas } = v;
  canvas.addEventListener("mousemove", (event) => {
    if (!v.state.data) return;
    const box = canvas.getBoundingClientRect();
    showHover(v, nearest(v.state, event.clientX - box.left, event.clientY - box.top));
  });
  canvas.addEventListener("mouseleave", () => showHover(v, -1));
  canvas.addEventListener("click", () => {
    if (v.hovered < 0) return;
    v.selected = v.hovered;
    show(v);
  });
  canvas.addEventListener("keydown", (event) => onKey(v, event));
}

/** The plane's label: its points, its axes' names and ranges (as laid out), its keys. */
function label({ data: d, extent: [x0, x1, y0, y1] }) {
  const n = d.x.length;
  const queries = d.role.filter((role) => role === 0).length;
  const [xName, yName] = axesOf(d).map(said);
  return _("Scatter plot of {points} points, {queries} queries and {keys} keys. Across, x: "
    + "{xName}, from {x0} to {x1}. Up, y: {yName}, from {y0} to {y1}. Arrow keys select the "
    + "nearest point that way, Home the first point, End the last, Escape clears.",
  { points: number(n), queries: number(queries), keys: number(n - queries), xName,
    x0: number(x0, 2, false), x1: number(x1, 2, false), yName, y0: number(y0, 2, false),
    y1: number(y1, 2, false) });
}

/** The plane as it is drawn, its title above and its legend's words beside it. */
function planeSvg({ title, canvas, legend }) {
  const layer = svgNode("g");
  const heading = title.textContent || _("Head scatter");
  layer.append(svgNode("text", { x: PAD, y: 22, "font-size": 16, "font-family": "system-ui, sans-serif" }, heading));
  layer.append(svgNode("image", { href: canvas.toDataURL("image/png"), x: 0, y: 36, width: SIZE, height: SIZE }));
  [...legend.children].forEach((entry, k) => {
    const swatch = entry.querySelector(".hsc-swatch")?.style.background;
    const y = 60 + k * 22;
    if (swatch) layer.append(svgNode("circle", { cx: SIZE + 16, cy: y - 5, r: 5, fill: swatch }));
    layer.append(svgNode("text", { x: SIZE + 28, y, "font-size": 13, "font-family": "system-ui, sans-serif" },
      entry.textContent));
  });
  return svgDocument([layer], SIZE + 220, SIZE + 40, heading);
}

/** The view drawn from what the host `sent`, in the language it names. */
function update(v, sent) {
  const { root, canvas } = v;
  const next = asData(sent);
  const problem = check(next);
  v.message.textContent = problem;
  root.dataset.points = problem ? "0" : String(next.x.length);
  speakWith(next && next.words, next && next.lang, next && next.direction);
  root.setAttribute("lang", spoken());
  root.setAttribute("dir", rightToLeft() ? "rtl" : "ltr");
  canvas.setAttribute("aria-roledescription", _("scatter plot"));
  for (const button of v.buttons.children) button.textContent = COLOUR_BY[button.dataset.colour]();
  v.tools.relabel();
  v.title.textContent = scatterTitle(next);
  root.setAttribute("aria-label", v.title.textContent || _("Head scatter"));
  v.state.data = problem ? null : next;
  if (v.state.data) {
    scatterLayout(v.state);
    canvas.setAttribute("aria-label", label(v.state));
  } else {
    canvas.setAttribute("aria-label", _("Scatter plot: {problem}", { problem }));
  }
  draw(v);
  v.hovered = -1;
  v.selected = -1;
  show(v);
  v.tools.refresh(); // an open table follows the data
}

export function mount(host, data, options = {}) {
  const v = scatterDom(host, options.colour);
  listen(v);
  // Escape dismisses a mouse's hover readout wherever the focus is (WCAG 1.4.13)
  function dismiss(event) {
    if (event.key !== "Escape" || v.hovered < 0 || event.composedPath().includes(v.canvas)) return;
    showHover(v, -1);
  }
  document.addEventListener("keydown", dismiss);
  let sentLast = data; // what the host last sent: said again when the page's language changes
  const redraw = (sent) => {
    sentLast = sent;
    update(v, sent);
  };
  redraw(data);
  return {
    update: redraw,
    /** Drawn again as it is, in the language spoken now (the page's changed). */
    relabel: () => redraw(sentLast),
    destroy() {
      document.removeEventListener("keydown", dismiss);
      v.root.remove();
    },
  };
}
