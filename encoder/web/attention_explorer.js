/**
 * Attention explorer: one run's attention, drawn and explored entirely in the browser.
 *
 * An ES module, no framework, no network. Hosts (Streamlit Custom Components v2, anywidget, an
 * offline file's module script) load it with what it imports and their glue (glue/*.js), which
 * calls `mount`, joined into one self-contained module (encoder/web/hosts.py). The stylesheet is
 * attention_explorer.css.
 *
 *   const explorer = mount(element, payloadBytes, {selection, onSelect});
 *   explorer.update(newPayloadBytes);   // a rerun's payload; the selection is kept
 *   explorer.destroy();
 *
 * payloadBytes: ArrayBuffer | Uint8Array | DataView, as encoder/web/payload.py writes it
 * ("AEX1", uint32 header length, JSON header, body of uint16 weights = value / 65535, float32
 * value norms). A header with "large_text": true draws every label at 16 px or more (presenter
 * mode); else no text is under 12 px.
 * selection: {layer, head, mode, setup, query} to start from (all optional; query: a pinned token).
 * A payload whose header has a "start" ({layer, head, mode, query}) opens there instead, and a
 * rerun's payload with another start moves the explorer there (the lesson's steps).
 * onSelect({layer, head, query, setup, mode, full}): called when the selection SETTLES (a new
 * head, a pin, a mode or setup), never on hover. `full` is false when the chosen head is only
 * drawn in blocks (long inputs): a host may then fetch it at full resolution.
 *
 * Layers and heads are numbered from 0, as on the page ("layer 2, head 1").
 *
 * Modes: lines (a window of WINDOW tokens around the chosen query once there are more than
 * LINES_ALL tokens, said above the lines; colours then stretched, as everywhere past LINES_ALL
 * tokens, where a weight is about 1/n), matrix (square cells filling the stage, labels beside
 * them while a cell is tall enough for text), every head (block tiles for long inputs), what it
 * moves (the chosen head's norm-weighted attention, ‖weight × f(key)‖: its weights times its keys'
 * value norms, colours stretched to the largest) and rollout (the attention rollout after the
 * chosen layer, or after the last one where only that one was sent).
 *
 * DOM contract (what tests and outside tools drive; it may sit inside a shadow root):
 *   root      [data-testid="attention-explorer"] with data-layer, data-head, data-query (the
 *             pinned or hovered query token's index, "" when none), data-pinned ("true"|"false"),
 *             data-setup ("A", "B" or "B-A"), data-mode ("lines", "matrix", "heads", "moves",
 *             "rollout"), data-large ("true"|"false"); focusable: ←/→ heads, PageUp/PageDown
 *             layers, ↑/↓ query tokens, Enter pins/unpins, Escape clears
 *   layer     [data-testid="explorer-layer"] (data-role="layer"): a select element of the layers
 *   window    [data-role="window"] in lines: which tokens are shown ("Tokens 120–147 of 502 …"),
 *             data-start and data-end (end exclusive); absent while every token is shown
 *   buttons   [data-role="mode"][data-mode=...], [data-role="setup"][data-setup=...]
 *   chips     [data-role="chip"][data-layer][data-head][aria-pressed]: heads overlaid in lines
 *   tokens    [data-side="query"|"key"][data-index] (lines and matrix labels), user text as text
 *   weights   [data-role="weight"] inside a key token: the selected head's weight for the query
 *   cells     the matrix canvas [data-role="matrix"] (hover a cell: readout), data-reading
 *             ("weights", "moves", "rollout"); the same canvas in the moves and rollout modes;
 *             data-window (the layer's local window, "0" when it is global) and data-masked
 *             (how many cells the window masks, drawn in MASKED_RGB grey, not a colour of the
 *             scale; "0" when none): a query sees only the keys within window / 2 positions
 *             (the payload's "windows"; B − A and the rollout mark none)
 *   tiles     [data-role="tile"][data-layer][data-head] canvases of every head; the chosen one
 *             has aria-current="true" (its outline is one element moved over it, so that a head
 *             switch repaints no tile)
 *   readout   [data-role="readout"] (aria-live): 'layer 2, head 1: "it" → "tired" 0.715', or
 *             '… "it" → "cat" outside the window (masked)' for a cell a local window masks
 *   message   [data-role="message"]: why something is not drawn (bad payload, B − A impossible)
 *   figure    [data-role="figure"] (the stage: lines, matrix, tiles), role="figure", aria-label: a
 *             sentence of the look's numbers, set when the look settles (never on hover):
 *             'Layer 2, head 1 of A: "it" gives 0.715 to "tired"; 11 of 16 tokens put most weight
 *             on "[CLS]".' (the query with the largest single weight, or the pinned one, and its
 *             top key; then the key most queries put their largest weight on); what a head moves
 *             ('What layer 2, head 1 of A moves: "it" moves 3.210 from …; … move most from …'),
 *             the rollout ('Rollout after layer 3 of A: "it" draws 0.500 on …; … draw most on …'),
 *             every head ('Every head of A (6 layers × 12 heads), layer 2, head 1 chosen: …'),
 *             B − A ('Layer 2, head 5 of B − A: the largest increase +0.120 at "it" → "cat", the
 *             largest decrease −0.080 at …'); numbers to 3 decimals, tokens as text
 *   legend    [data-role="legend"] under every colour scale: what it measures, its ends' numbers
 *             and a bar ("weight: 0 ▭ 0.715"; B − A: "weight: B less −0.3 ▭ +0.3 B more")
 *   signs     [data-role="signs"] over B − A's matrix while its cells are tall enough for text: a
 *             "+" or "−" on each cell whose |difference| is SIGN_MIN of the scale or more,
 *             data-signs (how many); B − A's readout and weights say their sign ("+0.120")
 *   dashes    each overlaid head's lines have their own dash (HEAD_DASHES) as well as colour; its
 *             chip holds a sample (svg line, stroke-dasharray) and data-dash
 *   text      figure_tools.js's box [data-testid="figure-text"] after the readout: "Show as a
 *             table" (the look's matrix: a row per query "index token", a column per key,
 *             figureRounded values, written as the language writes numbers ("0,0906" in
 *             Spanish; the CSV's in English); every head: the chosen head's; B − A: signed
 *             differences;
 *             redrawn when the look settles) and "Save as…" (CSV the same; SVG of the look,
 *             titled setup, input's first TITLE_CHARS characters, layer, head and mode: lines as
 *             SVG paths with their dashes, cells as an image, tokens as text; PNG from the SVG)
 */
import {
  SERIES_COLOURS, VIRIDIS, viridis, diverging, rgb, element, speakWith, spoken, rightToLeft, _,
  n_, number
} from "./shared.js";
import { figureRounded, svgNode, svgDocument, figureControls } from "./figure_tools.js";

const SCALE = 65535;
const MAGIC = "AEX1";
const MAX_OVERLAY = 8;
// the overlaid heads' colours: apart in every common colour vision, 3:1 on white (shared.js)
const HEAD_COLOURS = SERIES_COLOURS;
// ... and their dash patterns (px), one per overlay index: colour is never the only carrier
const HEAD_DASHES = [[], [9, 4], [2, 3], [9, 3, 2, 3], [16, 5], [5, 5], [2, 7],
  [16, 3, 2, 3, 2, 3]];
const SIGNED_RGB = { more: "#B2182B", less: "#2166AC" }; // B − A's lines: B more, B less
const SIGN_MIN = 0.25; // a B − A cell this far (of its scale) from white gets a + or − glyph
const TITLE_CHARS = 60; // the input's first characters in a saved figure's title
const SVG_SIDE = 640; // a saved matrix's cells at most this wide (whole pixels per cell)
const MINUS = "\u2212"; // a difference's sign, as the page writes it
const LINE_MIN = 0.01; // lines below this weight are not drawn (invisible at that opacity)
const ALPHA_STEPS = 16; // lines are stroked in this many opacities, one path each
const ROW = { normal: 22, large: 30 }; // px per token row in the lines view
const LINES_ALL = 96; // up to this many tokens the lines view lists them all; past it, a window
const WINDOW = 28; // tokens the lines view shows around the chosen query of a long input
const MATRIX_PX = 720; // the matrix's side at most (the window's height bounds it too)
const MATRIX_MIN_PX = 240; // ... but never below this
const LABEL_PX = { normal: 14, large: 20 }; // a matrix cell this tall or more gets its token
const SETTLE_MS = 250;
const MASKED_RGB = [218, 218, 218]; // cells a local window masks: a grey no scale colour takes

// ---------------------------------------------------------------------------- the payload

function asBytes(data) {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new Error("the explorer's payload is not bytes");
}

/** The payload's header and weights: {setups: [{name, tokens, layers, heads, n, layerLabels,
 * full: Map("l,h" -> Uint16Array n*n), tiles: {starts, size, data: Uint16Array} | null}]}. */
export function decodePayload(data) {
  const bytes = asBytes(data);
  if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(0, 4)) !== MAGIC) {
    throw new Error("the explorer's payload does not start with AEX1");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length)));
  const bodyStart = 8 + length;
  const array = (Type, offset, count) => { // a view of the body, copied where misaligned
    const start = bytes.byteOffset + bodyStart + offset;
    if (start % Type.BYTES_PER_ELEMENT === 0) return new Type(bytes.buffer, start, count);
    const end = bodyStart + offset + Type.BYTES_PER_ELEMENT * count;
    return new Type(bytes.slice(bodyStart + offset, end).buffer);
  };
  const words = (offset, count) => array(Uint16Array, offset, count);
  const setups = header.setups.map((s) => {
    const cells = s.n * s.n;
    const full = new Map();
    s.full.forEach(([layer, head], i) => {
      full.set(`${layer},${head}`, words(s.full_offset + 2 * i * cells, cells));
    });
    let tiles = null;
    if (s.tiles) {
      const size = s.tiles.starts.length;
      tiles = { starts: s.tiles.starts, size,
        data: words(s.tiles.offset, s.layers * s.heads * size * size) };
    }
    const norms = new Map(); // "l,h" -> Float32Array n: the full heads' value norms
    if (s.norms) {
      s.full.forEach(([layer, head], i) => {
        norms.set(`${layer},${head}`, array(Float32Array, s.norms.offset + 4 * i * s.n, s.n));
      });
    }
    const rollout = new Map(); // layer -> Uint16Array n*n
    if (s.rollout) {
      s.rollout.layers.forEach((layer, i) => {
        rollout.set(layer, words(s.rollout.offset + 2 * i * cells, cells));
      });
    }
    return { name: s.name, tokens: s.tokens.map(String), layers: s.layers, heads: s.heads,
      n: s.n, layerLabels: s.layer_labels, full, tiles, norms, rollout,
      windows: s.windows || new Array(s.layers).fill(0) };
  });
  if (!setups.length) throw new Error("the explorer's payload holds no setup");
  return { setups, stretch: Boolean(header.stretch), start: header.start || null,
    largeText: Boolean(header.large_text), lang: header.lang, words: header.words };
}

/** One head's [n*n] weights as numbers (full resolution), or null when only blocks exist. */
export function fullWeights(setup, layer, head) {
  const words = setup.full.get(`${layer},${head}`);
  return words ? { n: setup.n, at: (q, k) => words[q * setup.n + k] / SCALE } : null;
}

/** One head's norm-weighted attention ‖weight × f(key)‖ = weight × ‖f(key)‖ (as
 * encoder.inspect.moves), or null where the head is not in full or no norms were sent. */
export function movedWeights(setup, layer, head) {
  const weights = fullWeights(setup, layer, head);
  const norms = setup.norms.get(`${layer},${head}`);
  return weights && norms ? { n: setup.n, at: (q, k) => weights.at(q, k) * norms[k] } : null;
}

/** The rollout after `layer` ({n, at, layer}), or after the last layer sent when that one was
 * not (long inputs send only the last); null where none was sent. */
export function rolloutWeights(setup, layer) {
  if (!setup.rollout.size) return null;
  const kept = setup.rollout.has(layer) ? layer : Math.max(...setup.rollout.keys());
  const words = setup.rollout.get(kept);
  return { n: setup.n, layer: kept, at: (q, k) => words[q * setup.n + k] / SCALE };
}

/** One head's block tile: {n: blocks, at(q, k)} (the tile of full weights when there are no
 * blocks). */
export function tileWeights(setup, layer, head) {
  if (!setup.tiles) return fullWeights(setup, layer, head);
  const { size, data } = setup.tiles;
  const base = (layer * setup.heads + head) * size * size;
  return { n: size, at: (q, k) => data[base + q * size + k] / SCALE };
}

/** Whether layer `layer`'s local window masks query `q`'s key `k` (|q − k| > window / 2, as
 * encoder.core's attention_window); never in a global layer (window 0). */
export function outsideWindow(setup, layer, q, k) {
  const width = setup.windows[layer] || 0;
  return width > 0 && Math.abs(q - k) > Math.floor(width / 2);
}

function sameShape(a, b) {
  return a.layers === b.layers && a.heads === b.heads && a.n === b.n
    && a.tokens.every((t, i) => t === b.tokens[i]);
}

/** B − A as a weights reader, or null where either is missing. */
function difference(a, b) {
  if (!a || !b || a.n !== b.n) return null;
  return { n: a.n, at: (q, k) => b.at(q, k) - a.at(q, k) };
}

// ---------------------------------------------------------------------------- colours

/** The largest |weight| of a reader (at least a tiny number, so that it can divide). */
function peak(weights) {
  let top = 1e-6;
  for (let q = 0; q < weights.n; q++) {
    for (let k = 0; k < weights.n; k++) top = Math.max(top, Math.abs(weights.at(q, k)));
  }
  return top;
}

/** The largest |weight| from the queries `rows` to the keys start..end−1. */
function shownPeak(weights, rows, start, end) {
  let top = 0;
  for (const q of rows) {
    for (let k = start; k < end; k++) top = Math.max(top, Math.abs(weights.at(q, k)));
  }
  return top;
}

/** Paint a weights reader onto a canvas at one pixel per cell; colours run from 0 to `scale`
 * (from −scale to scale when signed); the cells `masked(q, k)` says a window masks are
 * MASKED_RGB. Returns how many cells were masked. */
function paint(canvas, weights, signed, scale, masked = () => false) {
  let count = 0;
  const n = weights.n;
  canvas.width = n;
  canvas.height = n;
  const context = canvas.getContext("2d");
  const image = context.createImageData(n, n);
  for (let q = 0; q < n; q++) {
    for (let k = 0; k < n; k++) {
      const v = weights.at(q, k);
      const hidden = masked(q, k);
      count += hidden;
      const [r, g, b] = hidden ? MASKED_RGB : signed ? diverging(v / scale) : viridis(v / scale);
      const p = 4 * (q * n + k);
      image.data[p] = r; image.data[p + 1] = g; image.data[p + 2] = b; image.data[p + 3] = 255;
    }
  }
  context.putImageData(image, 0, 0);
  return count;
}

/** A token in quotes; right to left, isolated (FSI … PDI) so that its own direction keeps it whole. */
const quote = (token) => (rightToLeft() ? `\u2068"${token}"\u2069` : `"${token}"`);
const fixed = (value) => number(Math.abs(value) < 5e-4 ? 0 : value, 3, false);
/** A difference with its sign: "+0.120", "−0.080" ("0.000" for none to three decimals). */
const signedFixed = (value) => {
  const text = fixed(Math.abs(value));
  return text === number(0, 3, false) ? text : `${value > 0 ? "+" : MINUS}${text}`;
};

// ---------------------------------------------------------------------------- legends, SVG

/** A colour scale's legend: what it measures, its two ends' numbers and a bar between them
 * (B − A: "B less −0.3 ▭ +0.3 B more"); `kind` "lines" is a ramp of one line's opacity. */
function legendOf(signed, scale, measure, kind = "cells") {
  const box = element("div", { class: "aex-note aex-legend", "data-role": "legend" });
  const stops = signed ? [diverging(-1), [255, 255, 255], diverging(1)].map(rgb)
    : kind === "lines" ? ["rgba(27,27,27,0.08)", "rgb(27,27,27)"] : VIRIDIS.map(rgb);
  const bar = element("span", { class: "aex-legend-bar", "aria-hidden": "true",
    style: `background:linear-gradient(to ${rightToLeft() ? "left" : "right"},${stops.join(",")})` });
  if (signed) {
    box.append(element("span", {}, _("B − A {measure}: B less", { measure })),
      element("span", {}, `${MINUS}${fixed(scale)}`), bar, element("span", {}, `+${fixed(scale)}`),
      element("span", {}, _("B more")));
  } else {
    box.append(element("span", {}, _("{measure}:", { measure })), element("span", {}, number(0)),
      bar, element("span", {}, fixed(scale)));
  }
  box.dataset.key = `${signed}|${scale}|${measure}|${kind}|${spoken()}`;
  return box;
}

let measurer = null;
/** How wide `text` is at `px` in the explorer's font (for a saved figure's layout). */
function textWidth(text, px) {
  measurer = measurer || document.createElement("canvas").getContext("2d");
  measurer.font = `${px}px system-ui, sans-serif`;
  return measurer.measureText(text).width;
}

/** A token as a saved figure labels it: at most 16 characters. */
const shortToken = (token) => (token.length > 16 ? `${token.slice(0, 15)}…` : token);

/** `canvas` (one pixel per cell) as a PNG data URL at `factor` whole pixels per cell, crisp. */
function crisp(canvas, factor) {
  const big = document.createElement("canvas");
  big.width = canvas.width * factor;
  big.height = canvas.height * factor;
  const context = big.getContext("2d");
  context.imageSmoothingEnabled = false;
  context.drawImage(canvas, 0, 0, big.width, big.height);
  return big.toDataURL("image/png");
}

/** A saved figure's legend at (x, y): as legendOf, the bar a gradient; returns [group, width]. */
function svgLegend(signed, scale, measure, x, y, kind = "cells") {
  const group = svgNode("g", { transform: `translate(${x},${y})`, "font-size": 12 });
  const id = `aex-scale-${Math.random().toString(36).slice(2, 8)}`;
  const gradient = svgNode("linearGradient", { id });
  const stops = signed ? [diverging(-1), [255, 255, 255], diverging(1)].map(rgb)
    : kind === "lines" ? ["rgb(236,236,236)", "rgb(27,27,27)"] : VIRIDIS.map(rgb);
  stops.forEach((colour, i) => gradient.append(svgNode("stop",
    { offset: i / (stops.length - 1), "stop-color": colour })));
  const words = signed
    ? [_("B − A {measure}: B less", { measure }), `${MINUS}${fixed(scale)}`, null,
      `+${fixed(scale)}`, _("B more")]
    : [_("{measure}:", { measure }), number(0), null, fixed(scale)];
  group.append(svgNode("defs"));
  group.firstChild.append(gradient);
  let at = 0;
  for (const word of words) {
    if (word === null) {
      group.append(svgNode("rect", { x: at, y: 0, width: 120, height: 12, fill: `url(#${id})`,
        stroke: "#767676" }));
      at += 126;
    } else {
      group.append(svgNode("text", { x: at, y: 10, fill: "#1b1b1b" }, word));
      at += textWidth(word, 12) + 6;
    }
  }
  return [group, at];
}

// ---------------------------------------------------------------------------- the modes

/* Each mode draws the stage its own way. A mode is made from `explorer` (the explorer's state and
 * readers, see mount) and is an object:
 *   label     its button's text
 *   overlays  whether it draws the overlaid heads (the chips)
 *   oneHead   whether it draws the chosen head itself (else a message says it is in blocks)
 *   pointed() the [query, key] cell under the pointer, or null
 *   build()   puts its elements on the stage for the setup shown
 *   draw()    draws what a look changes, building first when what it built is stale
 *   forget()  drops what it built (another mode or a new payload takes the stage) */

/** Lines: query tokens on the left, key tokens on the right, one line per weight; past
 * LINES_ALL tokens, a window of WINDOW tokens that follows the chosen query. */
function linesMode(explorer) {
  let built = null; // {canvas, keys, queries, setup, start, end, banner, outside, large}

  /** The [start, end) of tokens shown: every token, or the window holding query `q` (kept while
   * `q` is in it, so that pointing inside it never moves it). */
  function span(n, q) {
    if (n <= LINES_ALL) return [0, n];
    const kept = built && built.setup === explorer.shown() ? [built.start, built.end] : null;
    if (kept && (q === null || (q >= kept[0] && q < kept[1]))) return kept;
    const start = q === null ? 0 : Math.min(Math.max(q - Math.floor(WINDOW / 2), 0), n - WINDOW);
    return [start, start + WINDOW];
  }

  function build(start, end) {
    const setup = explorer.shown();
    const wrap = element("div", { class: "aex-lines" });
    const left = element("div", { class: "aex-column aex-queries" });
    const right = element("div", { class: "aex-column aex-keys" });
    const canvas = element("canvas", { class: "aex-links", "aria-hidden": "true" });
    const queries = [];
    const keys = [];
    for (let i = start; i < end; i++) {
      const token = setup.tokens[i];
      const query = element("div", { class: "aex-token", "data-side": "query",
        "data-index": String(i), dir: "auto" }, token);
      query.addEventListener("mouseenter", () => explorer.hover(i));
      query.addEventListener("click", () => explorer.pin(i));
      left.append(query);
      queries.push(query);
      const key = element("div", { class: "aex-token", "data-side": "key", "data-index": String(i) });
      key.append(element("span", { dir: "auto" }, token),
        element("span", { class: "aex-weight", "data-role": "weight" }, ""));
      right.append(key);
      keys.push(key);
    }
    wrap.addEventListener("mouseleave", () => explorer.hover(null));
    wrap.append(left, canvas, right);
    const scroll = element("div", { class: "aex-scroll" });
    scroll.append(wrap);
    let outside = null;
    let banner = null;
    const legend = element("div");
    if (end - start < setup.n) { // a long input: say which tokens these are
      const said = _("Tokens {start}–{end} of {count}: a window of {window} around the chosen "
        + "query (↑/↓ move it past its edge; the matrix shows every token).", { start,
        end: end - 1, count: setup.n, window: WINDOW });
      banner = element("div", { class: "aex-note aex-window", "data-role": "window",
        "data-start": String(start), "data-end": String(end) }, `${said} `);
      outside = element("span");
      banner.append(outside);
      explorer.stage.replaceChildren(banner, scroll, legend);
    } else {
      explorer.stage.replaceChildren(scroll, legend);
    }
    built = { canvas, keys, queries, setup, start, end, outside, banner, scroll, legend,
      seen: null, look: null, large: explorer.large() };
  }

  /** Each line a look draws: visit(id, q, k), id = "overlay index|colour|opacity step" (one
   * path per id: a few strokes however many lines). */
  function eachLine(look, visit) {
    const { drawn, rows, start, end, scale, n, signed } = look;
    drawn.forEach((weights, index) => {
      if (!weights || weights.n !== n) return;
      for (const q of rows) {
        for (let k = start; k < end; k++) {
          const w = weights.at(q, k);
          const strength = Math.abs(w) / scale;
          if (strength < LINE_MIN) continue;
          const colour = signed ? (w > 0 ? SIGNED_RGB.more : SIGNED_RGB.less) : HEAD_COLOURS[index];
          const step = Math.min(ALPHA_STEPS - 1, Math.floor(strength * ALPHA_STEPS));
          visit(`${index}|${colour}|${step}`, q, k);
        }
      }
    });
  }

  function draw() {
    const setup = explorer.shown();
    const q0 = explorer.query();
    const [start, end] = span(setup.n, q0);
    if (!built || built.setup !== setup || built.start !== start
      || built.large !== explorer.large()) build(start, end);
    const { canvas, keys, queries } = built;
    const { state, full, tile, signed } = explorer;
    const n = setup.n;
    const row = explorer.large() ? ROW.large : ROW.normal;
    const ratio = window.devicePixelRatio || 1;
    const width = 180;
    const height = (end - start) * row;
    if (canvas.width !== width * ratio || canvas.height !== height * ratio) {
      canvas.width = width * ratio;
      canvas.height = height * ratio;
      canvas.style.width = `${width}px`;
      canvas.style.height = `${height}px`;
    }
    const context = canvas.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    context.lineWidth = 2;
    const drawn = explorer.overlaid().map(([layer, head]) => full(layer, head)
      || (signed() ? null : tile(layer, head)));
    const present = drawn.filter((weights) => weights && weights.n === n);
    const rows = q0 !== null ? [q0] : Array.from({ length: end - start }, (_, i) => start + i);
    const windowed = end - start < n;
    // a window's lines are stretched to its own largest weight (its weights are about 1/n)
    const scale = !present.length ? 1 : windowed
      ? Math.max(1e-6, ...present.map((weights) => shownPeak(weights, rows, start, end)))
      : explorer.colourScale(present);
    // one path per head, colour and opacity step: a few strokes however many lines; each
    // overlaid head has its own dash pattern as well as its own colour
    const look = { drawn, rows, start, end, scale, n, row, width, signed: signed() };
    const paths = new Map(); // id -> Path2D
    eachLine(look, (id, q, k) => {
      let path = paths.get(id);
      if (!path) { path = new Path2D(); paths.set(id, path); }
      path.moveTo(0, (q - start + 0.5) * row);
      path.lineTo(width, (k - start + 0.5) * row);
    });
    for (const [id, path] of paths) {
      const [index, colour, step] = id.split("|");
      context.globalAlpha = Math.min(1, (Number(step) + 1) / ALPHA_STEPS);
      context.strokeStyle = colour;
      context.setLineDash(HEAD_DASHES[Number(index)]);
      context.stroke(path);
    }
    context.globalAlpha = 1;
    context.setLineDash([]);
    built.look = look;
    const measure = built.measure = signed() ? _("line opacity") : _("line opacity (weight)");
    const legend = legendOf(signed(), scale, measure, "lines");
    if (legend.dataset.key !== built.legend.dataset.key) {
      built.legend.replaceWith(legend);
      built.legend = legend;
    }
    const selected = full(state.layer, state.head);
    queries.forEach((node, i) => node.classList.toggle("aex-active", start + i === q0));
    if (q0 !== null && q0 !== built.seen) { // the chosen query in sight within its scroll box
      const node = queries[q0 - start];
      const box = built.scroll;
      if (node.offsetTop < box.scrollTop) box.scrollTop = node.offsetTop;
      const bottom = node.offsetTop + node.offsetHeight - box.clientHeight;
      if (bottom > box.scrollTop) box.scrollTop = bottom;
    }
    built.seen = q0;
    const written = signed() ? signedFixed : fixed; // B − A's weights say their sign
    keys.forEach((node, i) => {
      node.lastChild.textContent = q0 !== null && selected ? written(selected.at(q0, start + i)) : "";
    });
    if (built.outside) {
      let rest = 0;
      if (q0 !== null && selected) {
        for (let k = 0; k < n; k++) if (k < start || k >= end) rest += selected.at(q0, k);
      }
      const stretchedTo = _("Lines stretched to the largest weight shown, {scale}.",
        { scale: fixed(scale) });
      const outside = _("Weight on the tokens outside the window: {weight}.",
        { weight: fixed(rest) });
      built.outside.textContent = q0 !== null && selected ? `${stretchedTo} ${outside}`
        : stretchedTo;
    }
  }

  /** The look as a saved figure's drawing: the tokens as text, the lines as SVG paths (with
   * their heads' dashes), the weights beside the keys, the heads' legend, the opacity legend. */
  function svg() {
    if (!built || !built.look) return null;
    const { look, setup, start, end } = built;
    const px = 13;
    const left = 12 + Math.max(...setup.tokens.slice(start, end).map((t) => textWidth(shortToken(t), px)));
    const weights = built.keys.map((node) => node.lastChild.textContent);
    const right = 12 + Math.max(...setup.tokens.slice(start, end).map((t, i) => textWidth(
      `${shortToken(t)}  ${weights[i]}`, px)));
    const group = svgNode("g", { "font-size": px, fill: "#1b1b1b" });
    let top = 0;
    if (built.banner) {
      group.append(svgNode("text", { x: 0, y: 12, "font-size": 12, fill: "#555555" },
        built.banner.textContent));
      top = 22;
    }
    const q0 = explorer.query();
    for (let i = start; i < end; i++) {
      const y = top + (i - start + 0.5) * look.row;
      group.append(svgNode("text", { x: left - 6, y, "text-anchor": "end",
        "dominant-baseline": "central", "font-weight": i === q0 ? 700 : 400,
        "data-side": "query" }, shortToken(setup.tokens[i])));
      const key = svgNode("text", { x: left + look.width + 6, y, "dominant-baseline": "central",
        "data-side": "key" }, shortToken(setup.tokens[i]));
      if (weights[i - start]) {
        key.append(svgNode("tspan", { fill: "#555555", dx: 6 }, weights[i - start]));
      }
      group.append(key);
    }
    const d = new Map(); // id -> path data
    eachLine(look, (id, q, k) => {
      d.set(id, `${d.get(id) || ""}M0 ${((q - start + 0.5) * look.row).toFixed(1)}L${look.width} `
        + `${((k - start + 0.5) * look.row).toFixed(1)}`);
    });
    const links = svgNode("g", { transform: `translate(${left},${top})`, fill: "none",
      "stroke-width": 2 });
    const on = explorer.overlaid();
    for (const [id, path] of d) {
      const [index, colour, step] = id.split("|");
      const dash = HEAD_DASHES[Number(index)];
      links.append(svgNode("path", { d: path, stroke: colour,
        "stroke-opacity": Math.min(1, (Number(step) + 1) / ALPHA_STEPS).toFixed(3),
        "stroke-dasharray": dash.length ? dash.join(" ") : "none",
        "data-layer": on[index][0], "data-head": on[index][1] }));
    }
    group.append(links);
    let y = top + (end - start) * look.row + 14;
    let x = 0;
    on.forEach(([layer, head], index) => { // which line is which head: its colour and dash
      const words = explorer.headName(layer, head);
      const dash = HEAD_DASHES[index];
      group.append(svgNode("line", { x1: x, y1: y + 5, x2: x + 30, y2: y + 5,
        stroke: look.signed ? "#1b1b1b" : HEAD_COLOURS[index], "stroke-width": 2.5,
        "stroke-dasharray": dash.length ? dash.join(" ") : "none" }));
      group.append(svgNode("text", { x: x + 36, y: y + 9, "font-size": 12 }, words));
      x += 36 + textWidth(words, 12) + 16;
    });
    y += 22;
    const [legend, legendWidth] = svgLegend(look.signed, look.scale, built.measure, 0, y,
      "lines");
    group.append(legend);
    return { group, width: Math.ceil(Math.max(left + look.width + right, x, legendWidth)),
      height: y + 16 };
  }

  return { label: () => _("Lines"), overlays: true, oneHead: true, pointed: () => null, build, draw, svg,
    forget() { built = null; } };
}

/* The readings a matrix draws: the weights, what a head moves, the rollout. Each: its button's
 * label, `read(explorer)` -> (layer, head) -> reader | null, `stretched` (colours always end at
 * the largest value: norms are not shares), `named(explorer, layer, head)` for titles and the
 * readout, its readout's verb for a whole row, what its legend says it measures, and the words
 * of the figure's sentence (`gives` 0.7 `to` a key; 3 of 9 tokens `drives` `towards` a key). */
const READINGS = {
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
 * labels beside them while a cell is tall enough for text, and a note of the colours' range. */
function matrixMode(explorer, name) {
  const reading = READINGS[name];
  const read = reading.read(explorer);
  let built = null; // {canvas, setup, key, wrap, scaleNote, large}

  function build() {
    const { state } = explorer;
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
    const cell = side / n;
    const wrap = element("div", { class: labelled ? "aex-matrix" : "aex-matrix aex-bare",
      style: labelled ? `grid-template-columns:${labelsPx}px ${side}px;`
        + `grid-template-rows:${labelsPx}px ${side}px` : "" });
    const canvas = element("canvas", { "data-role": "matrix", "data-reading": name,
      class: "aex-grid", style: `width:${side}px;height:${side}px` });
    // B − A's signs as glyphs over cells tall enough for text (colour is not the only carrier)
    const signs = labelled ? element("canvas", { "data-role": "signs", class: "aex-signs",
      "aria-hidden": "true", style: `width:${side}px;height:${side}px` }) : null;
    if (labelled) {
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
      wrap.append(element("div", { class: "aex-corner" }, _("query ↓ key →")), top, left, canvas);
      if (signs) wrap.append(signs);
    } else { // too many tokens for labels: no empty label bands, a note above the cells
      wrap.append(element("div", { class: "aex-note" }, n_("{count} token (query ↓ key →): point "
        + "at a cell, or use ↑/↓, to read its tokens and value.", "{count} tokens (query ↓ key →): "
        + "point at a cell, or use ↑/↓, to read its tokens and value.", n)), canvas);
    }
    canvas.addEventListener("mousemove", (event) => {
      const box = canvas.getBoundingClientRect();
      const q = Math.floor(((event.clientY - box.top) / box.height) * n);
      const k = Math.floor(((event.clientX - box.left) / box.width) * n);
      if (q < 0 || k < 0 || q >= n || k >= n) return;
      state.cell = [q, k];
      explorer.hover(q);
    });
    canvas.addEventListener("mouseleave", () => { state.cell = null; explorer.hover(null); });
    canvas.addEventListener("click", () => { if (state.cell) explorer.pin(state.cell[0]); });
    const scaleNote = element("div", { class: "aex-note", "data-role": "scale" });
    const legend = element("div");
    explorer.stage.replaceChildren(wrap, legend, scaleNote);
    built = { canvas, signs, setup, key: null, wrap, legend, scaleNote, large, scale: 1, side,
      labelled };
  }

  /** B − A's + and − over the cells whose |difference| is SIGN_MIN of the scale or more, in
   * black or white as the cell is light or dark; data-signs says how many. */
  function drawSigns(weights, scale) {
    const { signs, side } = built;
    const n = weights.n;
    const ratio = window.devicePixelRatio || 1;
    signs.width = Math.round(side * ratio);
    signs.height = Math.round(side * ratio);
    const context = signs.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    const cell = side / n;
    context.font = `700 ${Math.max(12, Math.min(18, Math.round(cell * 0.8)))}px system-ui, sans-serif`;
    context.textAlign = "center";
    context.textBaseline = "middle";
    let count = 0;
    for (let q = 0; q < n; q++) {
      for (let k = 0; k < n; k++) {
        const v = weights.at(q, k);
        if (Math.abs(v) < SIGN_MIN * scale) continue;
        const [r, g, b] = diverging(v / scale);
        context.fillStyle = 0.299 * r + 0.587 * g + 0.114 * b < 150 ? "#ffffff" : "#1b1b1b";
        context.fillText(v > 0 ? "+" : MINUS, (k + 0.5) * cell, (q + 0.5) * cell);
        count += 1;
      }
    }
    signs.dataset.signs = String(count);
  }

  function draw() {
    if (!built || built.setup !== explorer.shown() || built.large !== explorer.large()) build();
    const { state } = explorer;
    const key = `${state.setup}:${state.layer},${state.head}`;
    const weights = read(state.layer, state.head);
    if (!weights) {
      explorer.message.textContent = explorer.signed()
        ? _("B − A needs both setups at the same resolution.")
        : _("{name}: not in this payload.",
          { name: reading.named(explorer, state.layer, state.head) });
    } else if (built.key !== key) {
      const scale = reading.stretched ? peak(weights) : explorer.colourScale([weights]);
      const width = explorer.window(state.layer, name);
      const masked = paint(built.canvas, weights, explorer.signed(), scale,
        (q, k) => explorer.masked(state.layer, q, k, name));
      built.canvas.dataset.window = String(width);
      built.canvas.dataset.masked = String(masked);
      built.scale = scale;
      if (built.signs) {
        built.signs.hidden = !explorer.signed();
        if (explorer.signed()) drawSigns(weights, scale);
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
      built.key = key;
    }
    const q0 = explorer.query();
    for (const node of built.wrap.querySelectorAll(".aex-label[data-side=query]")) {
      node.classList.toggle("aex-active", Number(node.dataset.index) === q0);
    }
  }

  /** The look as a saved figure's drawing: its cells as an image (whole pixels per cell), the
   * tokens as text while a cell is tall enough, B − A's signs, the legend. */
  function svg() {
    const { state } = explorer;
    const weights = read(state.layer, state.head);
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
      for (let q = 0; q < n; q++) {
        for (let k = 0; k < n; k++) {
          const v = weights.at(q, k);
          if (Math.abs(v) < SIGN_MIN * built.scale) continue;
          const [r, g, b] = diverging(v / built.scale);
          signs.append(svgNode("text", { x: band + (k + 0.5) * factor,
            y: band + (q + 0.5) * factor,
            fill: 0.299 * r + 0.587 * g + 0.114 * b < 150 ? "#ffffff" : "#1b1b1b" },
          v > 0 ? "+" : MINUS));
        }
      }
      group.append(signs);
    }
    const [legend, legendWidth] = svgLegend(explorer.signed(), built.scale, reading.measure(), 0,
      band + side + 12);
    group.append(legend);
    let height = band + side + 30;
    if (built.greyNote) {
      group.append(svgNode("text", { x: 0, y: height + 8, fill: "#555555" }, built.greyNote));
      height += 20;
    }
    return { group, width: Math.max(band + side, legendWidth), height };
  }

  return { label: reading.label, overlays: false, oneHead: name !== "rollout", reading,
    read, pointed: () => explorer.state.cell, build, draw, svg, forget() { built = null; } };
}

/** Every head: one tile per head, the chosen one outlined; a click opens it in the matrix. */
function headsMode(explorer) {
  let built = null; // {key, setup, tiles: [canvases], outline, chosen}

  function build() {
    const { state, tile, headName } = explorer;
    const setup = explorer.shown();
    const grid = element("div", { class: "aex-heads",
      style: `grid-template-columns: auto repeat(${setup.heads}, 1fr)` });
    grid.append(element("div"));
    for (let h = 0; h < setup.heads; h++) {
      grid.append(element("div", { class: "aex-note" }, _("H{head}", { head: h })));
    }
    const tiles = [];
    const drawn = [];
    for (let l = 0; l < setup.layers; l++) {
      for (let h = 0; h < setup.heads; h++) if (tile(l, h)) drawn.push(tile(l, h));
    }
    const scale = drawn.length ? explorer.colourScale(drawn) : 1;
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
    const outline = element("div", { class: "aex-outline", "aria-hidden": "true" });
    grid.append(outline);
    const note = setup.tiles
      ? n_("Each tile is one head, drawn in blocks of {count} token; click a tile to open it.",
        "Each tile is one head, drawn in blocks of {count} tokens; click a tile to open it.",
        Math.ceil(setup.n / setup.tiles.size))
      : _("Each tile is one head's query × key weights; click a tile to open it.");
    explorer.stage.replaceChildren(element("div", { class: "aex-note" }, note), grid,
      legendOf(explorer.signed(), scale, _("weight")));
    built = { key: state.setup, setup, tiles, outline, chosen: null, scale };
  }

  function draw() {
    const { state } = explorer;
    const setup = explorer.shown();
    if (!built || built.key !== state.setup || built.setup !== setup) build();
    const chosen = built.tiles[state.layer * setup.heads + state.head];
    if (chosen !== built.chosen) { // a head switch touches two tiles' attributes and the outline
      if (built.chosen) built.chosen.removeAttribute("aria-current");
      chosen.setAttribute("aria-current", "true");
      const [row, column] = [state.layer + 2, state.head + 2]; // after the labels' row, column
      built.outline.style.gridArea = `${row} / ${column} / ${row + 1} / ${column + 1}`;
      built.chosen = chosen;
    }
  }

  /** Every head as a saved figure's drawing: its tiles as images, the layers' and heads'
   * labels, the chosen head outlined, the legend. */
  function svg() {
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

  return { label: () => _("Every head"), overlays: false, oneHead: false, pointed: () => null, build,
    draw, svg, forget() { built = null; } };
}

const MODES = { // in the bar's order
  lines: linesMode,
  matrix: (explorer) => matrixMode(explorer, "weights"),
  heads: headsMode,
  moves: (explorer) => matrixMode(explorer, "moves"),
  rollout: (explorer) => matrixMode(explorer, "rollout"),
};

// ---------------------------------------------------------------------------- the explorer

/** Draw `payload` into `host` (an element or shadow root); see the module doc. */
export function mount(host, payload, options = {}) {
  const onSelect = options.onSelect || (() => {});
  const start = options.selection || {};
  const state = {
    layer: 0, head: 0, mode: "lines", setup: start.setup || "A",
    hovered: null, // query token under the pointer or the keyboard's focus
    pinned: null,
    cell: null, // [query, key] under the pointer in the matrix
    overlay: [], // extra heads drawn in the lines view: [layer, head] pairs
  };
  /** Open at `at` ({layer, head, mode, query}, all optional). */
  function openAt(at) {
    state.layer = Number(at.layer) || 0;
    state.head = Number(at.head) || 0;
    state.mode = Object.hasOwn(MODES, at.mode) ? at.mode : "lines";
    state.pinned = Number.isInteger(at.query) && at.query >= 0 ? at.query : null;
    state.hovered = null;
    state.overlay = [];
  }
  openAt(start);
  let data = null;
  let settleTimer = null;
  let opened = null; // the payload start last opened at (JSON), so a rerun keeps the selection

  const root = element("div", { "data-testid": "attention-explorer", class: "aex", tabindex: "0",
    role: "application", "aria-label": "Attention explorer" });
  const bar = element("div", { class: "aex-bar" });
  const modeButtons = element("div", { class: "aex-group", role: "group", "aria-label": "View" });
  const setups = element("div", { class: "aex-group", role: "group", "aria-label": "Setup" });
  const layerPick = element("select", { "data-testid": "explorer-layer", "data-role": "layer",
    "aria-label": "Layer", class: "aex-layer" });
  layerPick.addEventListener("change", () => choose(Number(layerPick.value), state.head));
  const layerLabel = element("label", { class: "aex-layer-label" });
  const layerWord = document.createTextNode("Layer ");
  layerLabel.append(layerWord, layerPick);
  const title = element("div", { class: "aex-title" });
  bar.append(modeButtons, setups, layerLabel, title);
  const chips = element("div", { class: "aex-chips", role: "group", "aria-label": "Heads drawn" });
  const message = element("div", { class: "aex-message", "data-role": "message", role: "alert" });
  const stage = element("div", { class: "aex-stage", "data-role": "figure", role: "figure",
    "aria-label": "Attention explorer" });
  const readout = element("div", { class: "aex-readout", "data-role": "readout",
    "aria-live": "polite" });
  // the look's table and "Save as…" (figure_tools.js), read only when used
  const controls = figureControls({ title: () => figureTitle(), table: () => figureTable(),
    svg: () => figureSvg() });
  root.append(bar, chips, message, stage, readout, controls);
  host.append(root);

  // ------------------------------------------------------------ what is drawn

  const setupNamed = (name) => data.setups.find((s) => s.name === name) || data.setups[0];
  const a = () => data.setups[0];
  const b = () => data.setups[1] || null;
  const comparable = () => b() !== null && sameShape(a(), b());
  const signed = () => state.setup === "B-A";
  const shown = () => (signed() ? a() : setupNamed(state.setup)); // shapes and tokens

  function weightsOf(layer, head, reader) {
    if (!signed()) return reader(setupNamed(state.setup), layer, head);
    return difference(reader(a(), layer, head), reader(b(), layer, head));
  }
  const full = (layer, head) => weightsOf(layer, head, fullWeights);
  const tile = (layer, head) => weightsOf(layer, head, tileWeights);
  const moved = (layer, head) => weightsOf(layer, head, movedWeights);
  const rolled = (layer) => weightsOf(layer, 0, (setup) => rolloutWeights(setup, layer));
  /** The layer whose rollout is drawn for `layer` (the last where only that one was sent). */
  const rolledLayer = (layer) => (rolloutWeights(shown(), layer) || { layer }).layer;
  const large = () => data.largeText;
  const query = () => (state.pinned !== null ? state.pinned : state.hovered);
  /** Where the colours end: 1, or the largest |weight| drawn when stretched: by the host's
   * choice, always for B − A (whose differences are small) and for long inputs (past LINES_ALL
   * tokens a weight is about 1/n: unstretched, every cell would be dark). */
  const stretched = () => data.stretch || signed() || shown().n > LINES_ALL;
  const colourScale = (drawn) => (stretched() ? Math.max(...drawn.map(peak)) : 1);
  const headName = (layer, head) => _("layer {layer}, head {head}",
    { layer: shown().layerLabels[layer], head });
  /** The local window a reading of `layer` marks (0: none; B − A and the rollout mark none). */
  const windowOf = (layer, reading = "weights") => (signed() || reading === "rollout" ? 0
    : shown().windows[layer] || 0);
  const masked = (layer, q, k, reading = "weights") => windowOf(layer, reading) > 0
    && outsideWindow(shown(), layer, q, k);

  // the explorer as its modes see it; each mode draws on the stage
  const explorer = { state, stage, message, shown, full, tile, moved, rolled, rolledLayer, large,
    signed, query, colourScale, headName, overlaid, hover, pin, say, choose, window: windowOf,
    masked };
  const modes = Object.fromEntries(Object.entries(MODES)
    .map(([name, make]) => [name, make(explorer)]));
  const mode = () => modes[state.mode];

  for (const [name, { label }] of Object.entries(modes)) {
    const button = element("button", { type: "button", "data-role": "mode", "data-mode": name },
      label());
    button.addEventListener("click", () => { state.mode = name; render(); settle(); });
    modeButtons.append(button);
  }

  function setAttributes() {
    root.dataset.layer = String(state.layer);
    root.dataset.head = String(state.head);
    root.dataset.query = query() === null ? "" : String(query());
    root.dataset.pinned = String(state.pinned !== null);
    root.dataset.setup = state.setup;
    root.dataset.mode = state.mode;
    root.dataset.large = String(large());
  }

  function say(text) {
    readout.textContent = text;
  }

  /** The bar's and the regions' words, and the direction, in the payload's language (none
   * given: the page's, shared.js's speakWith). */
  function speak() {
    speakWith(data.words, data.lang);
    root.setAttribute("dir", rightToLeft() ? "rtl" : "ltr");
    root.setAttribute("lang", spoken());
    root.setAttribute("aria-label", _("Attention explorer"));
    stage.setAttribute("aria-label", _("Attention explorer"));
    modeButtons.setAttribute("aria-label", _("View"));
    setups.setAttribute("aria-label", _("Setup"));
    layerPick.setAttribute("aria-label", _("Layer"));
    layerWord.textContent = _("Layer") + " ";
    chips.setAttribute("aria-label", _("Heads drawn"));
    for (const button of modeButtons.children) button.textContent = modes[button.dataset.mode].label();
    controls.relabel();
  }

  /** The readout of query `q` (and key `k`, or its largest key when null) in the mode's
   * reading (the weights in lines and every head). */
  function describe(layer, head, q, k) {
    const reading = mode().reading || READINGS.weights;
    const weights = reading === READINGS.weights ? full(layer, head) : mode().read(layer, head);
    const tokens = shown().tokens;
    const named = reading.named(explorer, layer, head);
    if (!weights) return _("{name}: drawn in blocks; loading it in full", { name: named });
    const written = signed() ? signedFixed : fixed; // a difference says its sign
    if (k === null) {
      let best = 0;
      for (let j = 1; j < weights.n; j++) if (weights.at(q, j) > weights.at(q, best)) best = j;
      const values = { name: named, query: quote(tokens[q]), key: quote(tokens[best]),
        value: written(weights.at(q, best)) };
      return signed() ? _("{name} (B − A): {query} gains most on {key} {value}", values)
        : reading.best(values);
    }
    const values = { name: named, query: quote(tokens[q]), key: quote(tokens[k]),
      value: written(weights.at(q, k)) };
    if (masked(layer, q, k, reading === READINGS.rollout ? "rollout" : "weights")) {
      return _("{name}: {query} → {key} outside the window (masked)", values);
    }
    return signed() ? _("{name} (B − A): {query} → {key} {value}", values)
      : _("{name}: {query} → {key} {value}", values);
  }

  // ------------------------------------------------------------ the figure's text

  /** The matrix the look draws: the chosen head's weights (lines, matrix, every head), what it
   * moves, or the rollout; B − A's differences; null where not in the payload. */
  function lookMatrix() {
    const reading = mode().reading || READINGS.weights;
    const read = mode().read || reading.read(explorer);
    return { reading, weights: read(state.layer, state.head) };
  }

  /** The setup shown, by name: "A", or "B − A" for the difference of two named others. */
  const setupTitle = () => (signed() ? `${b().name} − ${a().name}` : shown().name);

  /** The look's head (or rollout's layer) in words, with the setup: "Layer 2, head 1 of A". */
  function lookName() {
    const { reading } = lookMatrix();
    const layer = shown().layerLabels[state.layer];
    const values = { layer, head: state.head, setup: setupTitle() };
    if (reading === READINGS.moves) return _("What layer {layer}, head {head} of {setup} moves", values);
    if (reading === READINGS.rollout) {
      return _("Rollout after layer {layer} of {setup}",
        { ...values, layer: shown().layerLabels[rolledLayer(state.layer)] });
    }
    if (state.mode === "heads") {
      return _("Every head of {setup} ({layers} layers × {heads} heads), layer {layer}, head "
        + "{head} chosen", { ...values, layers: shown().layers, heads: shown().heads });
    }
    return _("Layer {layer}, head {head} of {setup}", values);
  }

  /** Labels of a matrix's rows and columns: "3 it" (index, token), or a block's tokens. */
  function matrixLabels(n) {
    const setup = shown();
    if (n === setup.n) return setup.tokens.map((token, i) => `${i} ${token}`);
    const starts = setup.tiles ? setup.tiles.starts : [];
    return starts.map((start, i) => _("tokens {start}–{end}",
      { start, end: (i + 1 < starts.length ? starts[i + 1] : setup.n) - 1 }));
  }

  /** The look in one sentence of its own numbers (computed when it settles: O(T²)). Weights
   * (and what a head moves, the rollout): the query with the largest single value (or the
   * pinned one) and its key, then how many queries put their largest on each key, the most
   * chosen named; B − A: its largest increase and decrease, query → key. */
  function figureSentence() {
    const { reading, weights } = lookMatrix();
    const head = lookName();
    const tokens = shown().tokens;
    if (!weights) return _("{name}: not in this payload.", { name: head });
    if (weights.n !== tokens.length) {
      return _("{head}: drawn in blocks until its full resolution arrives.", { head });
    }
    const n = weights.n;
    const pinned = state.pinned !== null && state.pinned < n ? state.pinned : null;
    if (signed()) {
      let up = [0, 0, -Infinity];
      let down = [0, 0, Infinity];
      for (let q = pinned ?? 0; q < (pinned ?? n - 1) + 1; q++) {
        for (let k = 0; k < n; k++) {
          const v = weights.at(q, k);
          if (v > up[2]) up = [q, k, v];
          if (v < down[2]) down = [q, k, v];
        }
      }
      const pair = ([q, k]) => `${quote(tokens[q])} → ${quote(tokens[k])}`;
      const values = { head, up: signedFixed(up[2]), upAt: pair(up), down: signedFixed(down[2]),
        downAt: pair(down) };
      return pinned !== null
        ? _("{head}: the largest increase {up} at {upAt}, the largest decrease {down} at "
          + "{downAt} (pinned).", values)
        : _("{head}: the largest increase {up} at {upAt}, the largest decrease {down} at "
          + "{downAt}.", values);
    }
    const chosen = new Array(n).fill(0); // how many queries put their largest value on each key
    let top = [0, 0, -Infinity];
    for (let q = 0; q < n; q++) {
      let best = 0;
      let value = weights.at(q, 0);
      for (let k = 1; k < n; k++) {
        const v = weights.at(q, k);
        if (v > value) { best = k; value = v; }
      }
      chosen[best] += 1;
      if ((pinned === null || q === pinned) && value > top[2]) top = [q, best, value];
    }
    let most = 0;
    for (let k = 1; k < n; k++) if (chosen[k] > chosen[most]) most = k;
    const count = chosen[most];
    const asked = quote(tokens[top[0]]);
    return reading.sentence({ head, query: pinned !== null
      ? _("{token} (pinned)", { token: asked }) : asked, value: fixed(top[2]),
    key: quote(tokens[top[1]]), total: number(n), most: quote(tokens[most]) }, count, n);
  }

  /** The input's first TITLE_CHARS characters, from the tokens (word pieces joined, special
   * tokens such as [CLS] left out). */
  function inputText() {
    const words = shown().tokens.filter((t) => !/^(\[[A-Z]+\]|\x3c\/?s>|\x3cpad>)$/.test(t));
    const text = words.join(" ").replace(/ ##/g, "").replace(/\s+/g, " ").trim();
    return text.length > TITLE_CHARS ? `${text.slice(0, TITLE_CHARS - 1)}…` : text;
  }

  /** A saved figure's title: setup, input, layer and head, mode. */
  function figureTitle() {
    const { reading } = lookMatrix();
    const layer = shown().layerLabels[state.layer];
    const values = { setup: setupTitle(), layer, head: state.head };
    const look = reading === READINGS.rollout
      ? _("{setup}, rollout after layer {layer}",
        { ...values, layer: shown().layerLabels[rolledLayer(state.layer)] })
      : { lines: () => _("{setup}, layer {layer}, head {head}, lines", values),
        matrix: () => _("{setup}, layer {layer}, head {head}, matrix", values),
        heads: () => _("{setup}, layer {layer}, head {head}, every head", values),
        moves: () => _("{setup}, layer {layer}, head {head}, what it moves", values) }[state.mode]();
    return `${look}: "${inputText()}"`;
  }

  /** The look's matrix as a table: a row per query (its index and token), a column per key. */
  function figureTable() {
    const { weights } = lookMatrix();
    if (!weights) return { head: [_("query \\ key")], body: [] };
    const labels = matrixLabels(weights.n);
    const body = labels.map((label, q) => {
      const row = [label];
      for (let k = 0; k < weights.n; k++) row.push(figureRounded(weights.at(q, k)));
      return row;
    });
    return { head: [_("query \\ key"), ...labels], body };
  }

  /** The look as one SVG document: its title's lines above the mode's own drawing. */
  function figureSvg() {
    const drawing = mode().svg ? mode().svg() : null;
    const heading = figureTitle();
    const cut = heading.indexOf(': "');
    const lines = [heading.slice(0, cut), heading.slice(cut + 2)]; // the look, then the input
    const font = "system-ui, -apple-system, 'Segoe UI', sans-serif";
    const header = svgNode("g"); // svgDocument keeps a layer's children, not its attributes
    const words = svgNode("g", { fill: "#1b1b1b", "font-family": font });
    header.append(words);
    lines.forEach((line, i) => words.append(svgNode("text", { x: 12, y: 22 + i * 20,
      "font-size": i ? 14 : 16, "font-weight": i ? 400 : 700 }, line)));
    const top = 22 + lines.length * 20;
    const body = svgNode("g");
    if (drawing) {
      const moved = svgNode("g", { transform: `translate(12,${top})`, "font-family": font });
      moved.append(drawing.group);
      body.append(moved);
    }
    const width = Math.ceil(Math.max(24 + (drawing ? drawing.width : 0),
      ...lines.map((line, i) => 24 + textWidth(line, i ? 14 : 16))));
    const height = Math.ceil(top + (drawing ? drawing.height : 0) + 12);
    return svgDocument([header, body], width, height, heading);
  }

  /** Name the stage by the look's sentence, and redraw an open table: when the look settles. */
  function nameFigure() {
    if (!data) return;
    stage.setAttribute("aria-label", figureSentence());
    controls.refresh();
  }

  function settle() {
    clearTimeout(settleTimer);
    settleTimer = setTimeout(() => {
      nameFigure();
      onSelect({ layer: state.layer, head: state.head, query: state.pinned, setup: state.setup,
        mode: state.mode, full: full(state.layer, state.head) !== null });
    }, SETTLE_MS);
  }

  function choose(layer, head) {
    const setup = shown();
    state.layer = Math.min(Math.max(layer, 0), setup.layers - 1);
    state.head = Math.min(Math.max(head, 0), setup.heads - 1);
    render();
    settle();
  }

  // ------------------------------------------------------------ the bar and chips

  function drawBar() {
    const setup = shown();
    for (const button of modeButtons.children) {
      button.setAttribute("aria-pressed", String(button.dataset.mode === state.mode));
      button.hidden = !available(button.dataset.mode);
    }
    if (layerPick.options.length !== setup.layers
      || [...layerPick.options].some((o, i) => o.textContent !== String(setup.layerLabels[i]))) {
      layerPick.replaceChildren(...setup.layerLabels.map((label, i) => element("option",
        { value: String(i) }, String(label))));
    }
    layerPick.value = String(state.layer);
    const names = b() ? [a().name, b().name].concat(comparable() ? ["B-A"] : []) : [];
    if (names.join("\n") !== [...setups.children].map((n) => n.dataset.setup).join("\n")) {
      setups.replaceChildren();
      for (const name of names) {
        const button = element("button", { type: "button", "data-role": "setup",
          "data-setup": name, "aria-pressed": String(name === state.setup) },
        name === "B-A" ? "B − A" : name);
        button.addEventListener("click", () => { state.setup = name; render(); settle(); });
        setups.append(button);
      }
    }
    for (const button of setups.children) {
      button.setAttribute("aria-pressed", String(button.dataset.setup === state.setup));
    }
    title.textContent = signed() ? _("{name}: B − A", { name: shownName() }) : shownName();
  }

  /** What the stage shows, in words: "layer 2 head 1", "... moves", "rollout after layer 5". */
  function shownName() {
    return (mode().reading || READINGS.weights).named(explorer, state.layer, state.head);
  }

  /** Whether the payload holds what mode `name` draws (the readings are optional). */
  function available(name) {
    if (name === "moves") return data.setups.some((setup) => setup.norms.size > 0);
    if (name === "rollout") return data.setups.some((setup) => setup.rollout.size > 0);
    return true;
  }

  function overlaid() {
    const heads = [[state.layer, state.head]];
    for (const pair of state.overlay) {
      if (pair[0] !== state.layer || pair[1] !== state.head) heads.push(pair);
    }
    return heads.slice(0, MAX_OVERLAY);
  }

  function drawChips() {
    chips.replaceChildren();
    if (!mode().overlays) return;
    const on = overlaid();
    const colourOf = (layer, head) => on.findIndex(([l, h]) => l === layer && h === head);
    chips.append(element("span", { class: "aex-note" },
      _("Layer {layer}:", { layer: shown().layerLabels[state.layer] })));
    for (let head = 0; head < shown().heads; head++) {
      const index = colourOf(state.layer, head);
      const chip = element("button", { type: "button", "data-role": "chip",
        "data-layer": String(state.layer), "data-head": String(head),
        "aria-pressed": String(index >= 0) }, _("head {head}", { head }));
      if (index >= 0) { // its line's colour, and a sample of its dash: the legend of the lines
        chip.style.setProperty("--chip", signed() ? "#1b1b1b" : HEAD_COLOURS[index]); // B − A:
        // the lines' colours are their signs
        const dash = HEAD_DASHES[index];
        chip.dataset.dash = dash.length ? dash.join(" ") : "none";
        const sample = svgNode("svg", { class: "aex-dash", width: 28, height: 10,
          "aria-hidden": "true" });
        sample.append(svgNode("line", { x1: 0, y1: 5, x2: 28, y2: 5, "stroke-width": 2.5,
          stroke: signed() ? "#1b1b1b" : HEAD_COLOURS[index], "stroke-dasharray": chip.dataset.dash }));
        chip.append(sample);
      }
      chip.addEventListener("click", () => toggleChip(state.layer, head));
      chips.append(chip);
    }
  }

  function toggleChip(layer, head) {
    const isSelected = layer === state.layer && head === state.head;
    const at = state.overlay.findIndex(([l, h]) => l === layer && h === head);
    if (isSelected) {
      const rest = overlaid().slice(1);
      if (!rest.length) return; // one head always stays drawn
      state.overlay = rest.slice(1);
      [state.layer, state.head] = rest[0];
    } else if (at >= 0) {
      state.overlay.splice(at, 1);
    } else if (overlaid().length < MAX_OVERLAY) {
      state.overlay.push([layer, head]);
    } else {
      say(_("At most {count} heads at once: switch one off first.", { count: MAX_OVERLAY }));
      return;
    }
    render();
    settle();
  }

  // ------------------------------------------------------------ looking

  function hover(q) {
    state.hovered = q;
    look();
  }

  function pin(q) {
    state.pinned = state.pinned === q ? null : q;
    look();
    settle();
  }

  /** Redraw what a look changes (cheap): the mode's drawing, attributes, readout. */
  function look() {
    setAttributes();
    mode().draw();
    const q = query();
    const cell = mode().pointed();
    if (cell && state.hovered !== null) {
      say(describe(state.layer, state.head, cell[0], cell[1]));
    } else if (q !== null) {
      const said = describe(state.layer, state.head, q, null);
      say(state.pinned !== null ? _("{readout} (pinned)", { readout: said }) : said);
    } else {
      say(_("{name}: point at a token, or use ↑/↓ and Enter", { name: shownName() }));
    }
  }

  function render() {
    message.textContent = "";
    if (!data) return;
    if (state.setup === "B-A" && !comparable()) state.setup = a().name;
    if (!data.setups.some((s) => s.name === state.setup) && state.setup !== "B-A") {
      state.setup = a().name;
    }
    if (!available(state.mode)) state.mode = "lines";
    root.classList.toggle("aex-large", large());
    const setup = shown();
    state.layer = Math.min(state.layer, setup.layers - 1);
    state.head = Math.min(state.head, setup.heads - 1);
    if (query() !== null && query() >= setup.n) { state.pinned = null; state.hovered = null; }
    if (b() && !comparable()) {
      message.textContent = _("B − A needs the same layers, heads and tokens in both setups.");
    }
    drawBar();
    if (mode().overlays || chips.firstChild) drawChips();
    for (const other of Object.values(modes)) if (other !== mode()) other.forget();
    if (state.mode === "rollout" && rolledLayer(state.layer) !== state.layer) {
      message.textContent = n_("Only the rollout after the last layer was sent for {count} "
        + "token: it is drawn whichever layer is chosen.", "Only the rollout after the last layer "
        + "was sent for {count} tokens: it is drawn whichever layer is chosen.", setup.n);
    } else if (mode().oneHead && !full(state.layer, state.head)) {
      message.textContent = _("{head} is drawn in blocks until its full resolution arrives.",
        { head: headName(state.layer, state.head) });
    }
    look();
  }

  // ------------------------------------------------------------ keyboard

  root.addEventListener("keydown", (event) => {
    if (!data) return;
    const onButton = event.target.closest && event.target.closest("button");
    if (onButton && (event.key === "Enter" || event.key === " ")) return; // the button's own
    if (event.target.closest && event.target.closest("select")) return; // the layer's own keys
    const setup = shown();
    const index = state.layer * setup.heads + state.head;
    const count = setup.layers * setup.heads;
    const q = query();
    if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      const next = (index + (event.key === "ArrowRight" ? 1 : count - 1)) % count;
      choose(Math.floor(next / setup.heads), next % setup.heads);
    } else if (event.key === "PageDown" || event.key === "PageUp") {
      const step = event.key === "PageDown" ? 1 : setup.layers - 1;
      choose((state.layer + step) % setup.layers, state.head);
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      const step = event.key === "ArrowDown" ? 1 : -1;
      const next = q === null ? (step > 0 ? 0 : setup.n - 1) : (q + step + setup.n) % setup.n;
      state.cell = null;
      if (state.pinned !== null) { state.pinned = next; settle(); } // a new pin settles
      hover(next);
    } else if (event.key === "Enter" && q !== null) {
      pin(q);
    } else if (event.key === "Escape") {
      state.pinned = null;
      state.hovered = null;
      look();
      settle();
    } else {
      return;
    }
    event.preventDefault();
  });

  // ------------------------------------------------------------ the host's handle

  function update(next) {
    try {
      data = decodePayload(next);
    } catch (error) {
      data = null;
      stage.replaceChildren();
      message.textContent = _("Nothing to draw: {error}", { error: error.message });
      return;
    }
    const at = data.start && JSON.stringify(data.start);
    if (at && at !== opened) openAt(data.start);
    opened = at || opened;
    speak();
    for (const each of Object.values(modes)) each.forget();
    render();
    nameFigure();
  }

  /** Everything said again in the language spoken now (the page's changed), the data as it
   * is: nothing decoded or computed again. */
  function relabel() {
    if (!data) return;
    speak();
    render();
    nameFigure();
  }

  update(payload);
  return {
    update,
    relabel,
    destroy() {
      clearTimeout(settleTimer);
      root.remove();
    },
    get selection() {
      return { layer: state.layer, head: state.head, query: state.pinned, setup: state.setup,
        mode: state.mode };
    },
  };
}
