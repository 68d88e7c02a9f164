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

export function mount(host, data, options = {}) {
  const root = element("div", { class: "hsc", "data-testid": "head-scatter", "data-hover": "",
    "data-selected": "", role: "figure" });
  const bar = element("div", { class: "hsc-bar" });
  const title = element("span", { class: "hsc-title" });
  const buttons = element("span", { class: "hsc-group" });
  const canvas = element("canvas", { class: "hsc-plane", "data-role": "plane", width: SIZE,
    height: SIZE, tabindex: "0", role: "application", "aria-roledescription": "scatter plot" });
  const frame = element("div", { class: "hsc-frame" });
  const hoverMark = element("div", { class: "hsc-mark", "data-role": "hover-mark",
    "aria-hidden": "true", hidden: "" });
  const selectedMark = element("div", { class: "hsc-mark", "data-role": "selected-mark",
    "aria-hidden": "true", hidden: "" });
  const hover = element("div", { class: "hsc-hover", "data-role": "hover", "aria-live": "polite" });
  const legend = element("div", { class: "hsc-legend", "data-role": "legend" });
  const message = element("div", { class: "hsc-message", "data-role": "message" });
  const side = element("div", { class: "hsc-side" });
  const body = element("div", { class: "hsc-body" });
  const tools = figureControls({
    title: () => title.textContent || _("Head scatter"),
    table: () => pointTable(state.data),
    svg: () => planeSvg(),
  });
  bar.append(title, buttons);
  side.append(legend, hover);
  frame.append(canvas, selectedMark, hoverMark);
  body.append(frame, side);
  root.append(bar, message, body, tools);
  host.appendChild(root);

  const ratio = window.devicePixelRatio || 1;
  canvas.width = SIZE * ratio;
  canvas.height = SIZE * ratio;
  canvas.style.width = `${SIZE}px`;
  canvas.style.height = `${SIZE}px`;
  const context = canvas.getContext("2d");
  context.scale(ratio, ratio);

  let state = { data: null, px: null, py: null, grid: null, maxPosition: 1 };
  let colour = COLOURINGS.includes(options.colour) ? options.colour : "position";
  let hovered = -1; // the mouse's point
  let selected = -1; // the keyboard's point

  for (const name of COLOURINGS) {
    const button = element("button", { type: "button", "data-role": "colour", "data-colour": name },
      COLOUR_BY[name]());
    button.addEventListener("click", () => {
      colour = name;
      draw();
    });
    buttons.appendChild(button);
  }

  function colourOf(i) {
    const d = state.data;
    if (colour === "role") return ROLE_COLOURS[d.role[i]];
    if (colour === "kind") return KIND_COLOURS[d.kind[i] % KIND_COLOURS.length];
    return rgb(viridis(d.position[i] / state.maxPosition));
  }

  function layout() {
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
    Object.assign(state, { px, py, grid, cells, maxPosition });
  }

  function drawLegend() {
    legend.replaceChildren();
    const entries = colour === "role"
      ? ROLES.map((r, k) => [said(r), ROLE_COLOURS[k]])
      : colour === "kind"
        ? state.data.kinds.map((k, i) => [said(k), KIND_COLOURS[i % KIND_COLOURS.length]])
        : [[_("first token"), rgb(viridis(0))],
          [_("position {position}", { position: state.maxPosition }), rgb(viridis(1))]];
    for (const [label, swatch] of entries) {
      const row = element("div", { class: "hsc-entry" });
      const dot = element("span", { class: "hsc-swatch" });
      dot.style.background = swatch;
      row.append(dot, element("span", {}, label));
      legend.appendChild(row);
    }
    legend.appendChild(element("div", { class: "hsc-entry" }, _("● query   ○ key")));
  }

  function draw() {
    const start = performance.now();
    root.dataset.colour = colour;
    for (const button of buttons.children) {
      button.setAttribute("aria-pressed", String(button.dataset.colour === colour));
    }
    context.clearRect(0, 0, SIZE, SIZE);
    if (!state.data) return;
    const d = state.data;
    const n = d.x.length;
    context.lineWidth = 1.2;
    for (let i = 0; i < n; i++) { // queries filled, keys as rings, so both show where they mix
      const c = colourOf(i);
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
    drawLegend();
    root.dataset.drawMs = (performance.now() - start).toFixed(1);
  }

  function nearest(mx, my) {
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
  function step(from, [across, up]) {
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

  function place(mark, i) {
    mark.hidden = i < 0;
    if (i < 0) return;
    mark.style.left = `${canvas.offsetLeft + canvas.clientLeft + state.px[i]}px`;
    mark.style.top = `${canvas.offsetTop + canvas.clientTop + state.py[i]}px`;
  }

  /** The readout and the rings: the hovered point, else the selected one. */
  function show() {
    root.dataset.hover = hovered < 0 ? "" : String(hovered);
    root.dataset.selected = selected < 0 ? "" : String(selected);
    const d = state.data;
    if (hovered < 0) {
      for (const name of ["hoverToken", "hoverRole", "hoverSentence"]) delete root.dataset[name];
    } else {
      root.dataset.hoverToken = d.tokens[hovered];
      root.dataset.hoverRole = ROLES[d.role[hovered]];
      root.dataset.hoverSentence = String(d.sentence[hovered]);
    }
    place(hoverMark, d ? hovered : -1);
    place(selectedMark, d ? selected : -1);
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

  function showHover(i) {
    if (i === hovered) return;
    hovered = i;
    show();
  }

  canvas.addEventListener("mousemove", (event) => {
    if (!state.data) return;
    const box = canvas.getBoundingClientRect();
    showHover(nearest(event.clientX - box.left, event.clientY - box.top));
  });
  canvas.addEventListener("mouseleave", () => showHover(-1));
  canvas.addEventListener("click", () => {
    if (hovered < 0) return;
    selected = hovered;
    show();
  });

  canvas.addEventListener("keydown", (event) => {
    if (!state.data || event.altKey || event.ctrlKey || event.metaKey) return;
    const start = performance.now();
    const n = state.data.x.length;
    let next = selected;
    if (event.key in ARROWS) {
      next = selected < 0 ? 0 : step(selected, ARROWS[event.key]);
      if (next < 0) { // the edge: nothing happens (and the page does not scroll)
        event.preventDefault();
        return;
      }
    } else if (event.key === "Home") {
      next = 0;
    } else if (event.key === "End") {
      next = n - 1;
    } else if (event.key === "Escape") {
      if (selected < 0 && hovered < 0) return; // nothing to dismiss: the page's Escape
      next = -1;
    } else {
      return;
    }
    event.preventDefault();
    hovered = -1; // the last move, mouse or key, is the one shown
    selected = next;
    show();
    root.dataset.keyMs = (performance.now() - start).toFixed(2);
  });

  // Escape dismisses a mouse's hover readout wherever the focus is (WCAG 1.4.13)
  function dismiss(event) {
    if (event.key !== "Escape" || hovered < 0 || event.composedPath().includes(canvas)) return;
    showHover(-1);
  }
  document.addEventListener("keydown", dismiss);

  function label(d) {
    const n = d.x.length;
    let queries = 0, x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) {
      if (d.role[i] === 0) queries += 1;
      x0 = Math.min(x0, d.x[i]); x1 = Math.max(x1, d.x[i]);
      y0 = Math.min(y0, d.y[i]); y1 = Math.max(y1, d.y[i]);
    }
    const [xName, yName] = axesOf(d).map(said);
    return _("Scatter plot of {points} points, {queries} queries and {keys} keys. Across, x: "
      + "{xName}, from {x0} to {x1}. Up, y: {yName}, from {y0} to {y1}. Arrow keys select the "
      + "nearest point that way, Home the first point, End the last, Escape clears.",
    { points: number(n), queries: number(queries), keys: number(n - queries), xName,
      x0: number(x0, 2, false), x1: number(x1, 2, false), yName, y0: number(y0, 2, false),
      y1: number(y1, 2, false) });
  }

  /** The plane as it is drawn, its title above and its legend's words beside it. */
  function planeSvg() {
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

  let sentLast = data; // what the host last sent: said again when the page's language changes

  function update(sent) {
    sentLast = sent;
    const next = asData(sent);
    const problem = check(next);
    message.textContent = problem;
    root.dataset.points = problem ? "0" : String(next.x.length);
    speakWith(next && next.words, next && next.lang, next && next.direction);
    root.setAttribute("lang", spoken());
    root.setAttribute("dir", rightToLeft() ? "rtl" : "ltr");
    canvas.setAttribute("aria-roledescription", _("scatter plot"));
    for (const button of buttons.children) button.textContent = COLOUR_BY[button.dataset.colour]();
    tools.relabel();
    title.textContent = scatterTitle(next);
    root.setAttribute("aria-label", title.textContent || _("Head scatter"));
    state.data = problem ? null : next;
    if (state.data) {
      layout();
      canvas.setAttribute("aria-label", label(state.data));
    } else {
      canvas.setAttribute("aria-label", _("Scatter plot: {problem}", { problem }));
    }
    draw();
    hovered = -1;
    selected = -1;
    show();
    tools.refresh(); // an open table follows the data
  }

  update(data);
  return {
    update,
    /** Drawn again as it is, in the language spoken now (the page's changed). */
    relabel: () => update(sentLast),
    destroy() {
      document.removeEventListener("keydown", dismiss);
      root.remove();
    },
  };
}
