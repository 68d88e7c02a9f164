import { element, _ } from "../shared.js";
import { svgNode } from "../figure_tools.js";
import {
  HEAD_COLOURS, HEAD_DASHES, SIGNED_RGB, LINE_MIN, ALPHA_STEPS, ROW, LINES_ALL, WINDOW, shownPeak,
  fixed, signedFixed, legendOf, textWidth, shortToken, svgLegend,
} from "./draw.js";

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
 * LINES_ALL tokens, a window of WINDOW tokens that follows the chosen query. The functions below
 * share `m`: {explorer, built}, built = {canvas, keys, queries, setup, start, end, banner,
 * outside, scroll, legend, seen, look, measure, large}. */
export function linesMode(explorer) {
  const m = { explorer, built: null };
  return { label: () => _("Lines"), overlays: true, oneHead: true, pointed: () => null,
    build: (start, end) => build(m, start, end), draw: () => draw(m), svg: () => svg(m),
    forget() { m.built = null; } };
}

/** The [start, end) of tokens shown: every token, or the window holding query `q` (kept while
 * `q` is in it, so that pointing inside it never moves it). */
function span({ explorer, built }, n, q) {
  if (n <= LINES_ALL) return [0, n];
  const kept = built && built.setup === explorer.shown() ? [built.start, built.end] : null;
  if (kept && (q === null || (q >= kept[0] && q < kept[1]))) return kept;
  const start = q === null ? 0 : Math.min(Math.max(q - Math.floor(WINDOW / 2), 0), n - WINDOW);
  return [start, start + WINDOW];
}

/** The tokens [start, end) as two columns, queries and keys, the canvas between them. */
function build(m, start, end) {
  const { explorer } = m;
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
  const banner = end - start < setup.n ? windowBanner(start, end, setup.n) : null;
  const legend = element("div");
  explorer.stage.replaceChildren(...(banner ? [banner] : []), scroll, legend);
  m.built = { canvas, keys, queries, setup, start, end, outside: banner && banner.lastChild,
    banner, scroll, legend, seen: null, look: null, large: explorer.large() };
}

/** A long input's banner: which tokens these are (its last child: what lies outside). */
function windowBanner(start, end, count) {
  const said = _("Tokens {start}–{end} of {count}: a window of {window} around the chosen "
    + "query (↑/↓ move it past its edge; the matrix shows every token).", { start,
    end: end - 1, count, window: WINDOW });
  const banner = element("div", { class: "aex-note aex-window", "data-role": "window",
    "data-start": String(start), "data-end": String(end) }, `${said} `);
  banner.append(element("span"));
  return banner;
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

/** What a look changes: the lines, their legend, the chosen query, the weights beside the keys
 * and what lies outside a window. */
function draw(m) {
  const { explorer } = m;
  const setup = explorer.shown();
  const q0 = explorer.query();
  const [start, end] = span(m, setup.n, q0);
  if (!m.built || m.built.setup !== setup || m.built.start !== start
    || m.built.large !== explorer.large()) build(m, start, end);
  const built = m.built;
  const look = lookAt(explorer, q0, start, end);
  strokeLines(built.canvas, look);
  built.look = look;
  const signed = explorer.signed();
  const measure = built.measure = signed ? _("line opacity") : _("line opacity (weight)");
  const legend = legendOf(signed, look.scale, measure, "lines");
  if (legend.dataset.key !== built.legend.dataset.key) {
    built.legend.replaceWith(legend);
    built.legend = legend;
  }
  showQuery(built, q0);
  const selected = explorer.full(explorer.state.layer, explorer.state.head);
  const written = signed ? signedFixed : fixed; // B − A's weights say their sign
  built.keys.forEach((node, i) => {
    node.lastChild.textContent = q0 !== null && selected ? written(selected.at(q0, start + i)) : "";
  });
  if (built.outside) sayOutside(built, look, q0 !== null && selected ? selected : null, q0);
}

/** The look of query `q0` (or every row) over tokens [start, end): the overlaid heads' weights,
 * the rows drawn and the weight that is a full line. */
function lookAt(explorer, q0, start, end) {
  const { full, tile, signed } = explorer;
  const n = explorer.shown().n;
  const drawn = explorer.overlaid().map(([layer, head]) => full(layer, head)
    || (signed() ? null : tile(layer, head)));
  const present = drawn.filter((weights) => weights && weights.n === n);
  const rows = q0 !== null ? [q0] : Array.from({ length: end - start }, (_, i) => start + i);
  const windowed = end - start < n;
  // a window's lines are stretched to its own largest weight (its weights are about 1/n)
  const scale = !present.length ? 1 : windowed
    ? Math.max(1e-6, ...present.map((weights) => shownPeak(weights, rows, start, end)))
    : explorer.colourScale(present);
  const row = explorer.large() ? ROW.large : ROW.normal;
  return { drawn, rows, start, end, scale, n, row, width: 180, signed: signed() };
}

/** The look's lines on the canvas: one path per head, colour and opacity step (a few strokes
 * however many lines); each overlaid head has its own dash pattern as well as its own colour. */
function strokeLines(canvas, look) {
  const { start, end, row, width } = look;
  const ratio = window.devicePixelRatio || 1;
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
}

/** The chosen query marked, and in sight within its scroll box. */
function showQuery(built, q0) {
  const { queries, start } = built;
  queries.forEach((node, i) => node.classList.toggle("aex-active", start + i === q0));
  if (q0 !== null && q0 !== built.seen) {
    const node = queries[q0 - start];
    const box = built.scroll;
    if (node.offsetTop < box.scrollTop) box.scrollTop = node.offsetTop;
    const bottom = node.offsetTop + node.offsetHeight - box.clientHeight;
    if (bottom > box.scrollTop) box.scrollTop = bottom;
  }
  built.seen = q0;
}

/** A window's banner: the scale its lines are stretched to, and the chosen query's weight
 * outside it (`selected`: the chosen head's weights, or null). */
function sayOutside(built, look, selected, q0) {
  const { start, end, n } = look;
  let rest = 0;
  if (selected) {
    for (let k = 0; k < n; k++) if (k < start || k >= end) rest += selected.at(q0, k);
  }
  const stretchedTo = _("Lines stretched to the largest weight shown, {scale}.",
    { scale: fixed(look.scale) });
  const outside = _("Weight on the tokens outside the window: {weight}.",
    { weight: fixed(rest) });
  built.outside.textContent = selected ? `${stretchedTo} ${outside}` : stretchedTo;
}

/** The look as a saved figure's drawing: the tokens as text, the lines as SVG paths (with
 * their heads' dashes), the weights beside the keys, the heads' legend, the opacity legend. */
function svg(m) {
  const { explorer, built } = m;
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
  group.append(svgLinks(look, explorer.overlaid(), left, top));
  const [y, x] = svgHeads(group, explorer, look, top + (end - start) * look.row + 14);
  const [legend, legendWidth] = svgLegend(look.signed, look.scale, built.measure, 0, y,
    "lines");
  group.append(legend);
  return { group, width: Math.ceil(Math.max(left + look.width + right, x, legendWidth)),
    height: y + 16 };
}

/** The look's lines as SVG paths, one per head, colour and opacity step, `left` px in. */
function svgLinks(look, on, left, top) {
  const { start, row, width } = look;
  const d = new Map(); // id -> path data
  eachLine(look, (id, q, k) => {
    d.set(id, `${d.get(id) || ""}M0 ${((q - start + 0.5) * row).toFixed(1)}L${width} `
      + `${((k - start + 0.5) * row).toFixed(1)}`);
  });
  const links = svgNode("g", { transform: `translate(${left},${top})`, fill: "none",
    "stroke-width": 2 });
  for (const [id, path] of d) {
    const [index, colour, step] = id.split("|");
    const dash = HEAD_DASHES[Number(index)];
    links.append(svgNode("path", { d: path, stroke: colour,
      "stroke-opacity": Math.min(1, (Number(step) + 1) / ALPHA_STEPS).toFixed(3),
      "stroke-dasharray": dash.length ? dash.join(" ") : "none",
      "data-layer": on[index][0], "data-head": on[index][1] }));
  }
  return links;
}

/** Which line is which head, at `y`: its colour and dash, its name; [the next y, the width]. */
function svgHeads(group, explorer, look, y) {
  let x = 0;
  explorer.overlaid().forEach(([layer, head], index) => {
    const words = explorer.headName(layer, head);
    const dash = HEAD_DASHES[index];
    group.append(svgNode("line", { x1: x, y1: y + 5, x2: x + 30, y2: y + 5,
      stroke: look.signed ? "#1b1b1b" : HEAD_COLOURS[index], "stroke-width": 2.5,
      "stroke-dasharray": dash.length ? dash.join(" ") : "none" }));
    group.append(svgNode("text", { x: x + 36, y: y + 9, "font-size": 12 }, words));
    x += 36 + textWidth(words, 12) + 16;
  });
  return [y + 22, x];
}
