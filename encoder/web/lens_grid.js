/**
 * Lens grid: the masked-LM head read at each layer's residual stream (rows: after block 1 … L,
 * the last row the model's prediction, marked) at each mask of a sentence (columns), drawn as
 * SVG: each cell its top word and that word's probability, printed, and coloured by it (viridis
 * from 0 to 1, with a colour bar: the colour never the only carrier). The chosen cell's top five
 * words and their probabilities are listed under the grid ([data-testid=lens-top]).
 *
 * An ES module, no framework, no network: each host's glue calls `mount` (encoder/web/hosts.py).
 * The stylesheet is lens_grid.css beside this file.
 *
 * data: {title, notes: string[], tokens: string[] (the sentence's), masks: number[M] (each mask's
 *        position), layers: string[L] (each row's name), top_tokens: string[L][M][k],
 *        top_p: number[L][M][k] (best first), final?: number[L][M] (the prediction's
 *        probability at each layer), scale, prediction (the last row's mark), lang?, words?}
 *        (lens_grid.py: lens_payload). User text (tokens, words) is drawn with textContent.
 *
 * Reading it: the mouse over a cell, or the keyboard (the plot is one Tab stop, which chooses the
 * prediction of the first mask when nothing is chosen: ↑ ↓ a layer, ← → a mask in the direction
 * drawn, Home and End the first and last layer; Escape clears) chooses a cell: a ring marks it
 * and its top five are listed.
 *
 * DOM contract: root [data-testid="lens-grid"] (data-cell: "layer,mask" or ""), cells
 * [data-testid="lens-cell"] (data-layer, data-mask, data-token: its top word, data-probability),
 * each cell's texts [data-role=word] and [data-role=probability], the rows' names
 * [data-role=row-label] (the prediction's: data-prediction), the masks' [data-role=col-label];
 * the list [data-testid="lens-top"] of [data-role=top-word] items (data-token, data-probability);
 * figure_tools' table (a row a layer and a mask: its top five) and "Save as…".
 */
import { viridis, rgb, element, rightToLeft, _, number } from "./shared.js";
import {
  svgNode, FIGURE_INK, FIGURE_CHAR, mountFigure, colourBarScale, colourBar, figureRing,
  figureRingAt, figureInkOn
} from "./figure_tools.js";

const LENS_TEXT = 14; // px: every label
const LENS_ROW = 44; // px: a layer's row (its word, then its probability)
const LENS_MIN_WIDTH = 300;
const LENS_MIN_COL = 64; // px: a mask's column, at least
const LENS_MAX_COL = 180;
const LENS_ARROWS = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

const lensWidth = (text, size = LENS_TEXT) => Math.ceil([...String(text)].length * FIGURE_CHAR * size);


function lensProblem(data) {
  const masks = data && Array.isArray(data.masks) ? data.masks.length : 0;
  const layers = data && Array.isArray(data.layers) ? data.layers.length : 0;
  if (!masks || !layers) return _("nothing to draw");
  const grid = (g, ok) => Array.isArray(g) && g.length === layers
    && g.every((row) => Array.isArray(row) && row.length === masks && row.every(ok));
  const words = (w) => Array.isArray(w) && w.length > 0;
  if (!grid(data.top_tokens, words) || !grid(data.top_p, (p) => words(p) && p.every(Number.isFinite))) {
    return `the grid does not have ${layers} x ${masks} cells of words`;
  }
  return "";
}

function lensLayout(d, width) {
  const rtl = rightToLeft();
  const names = Math.max(...d.layers.map((n) => lensWidth(n)), lensWidth(d.prediction)) + 12;
  // the colour bar where it leaves each mask its least column (the cells print their numbers)
  let bar = colourBarScale(0, 1, 4, LENS_TEXT).width + 14;
  if ((width - names - bar) / d.masks.length < LENS_MIN_COL) bar = 0;
  const col = Math.max(LENS_MIN_COL, Math.min(LENS_MAX_COL,
    Math.floor((width - names - bar) / d.masks.length)));
  const top = LENS_TEXT * 2 + 16; // two lines over the columns: the mask, its position
  return { rtl, names, col, top, bar: bar > 0, width,
    height: top + d.layers.length * LENS_ROW + 14,
    X: (x) => (rtl ? width - x : x), R: (x, w) => (rtl ? width - x - w : x) };
}

/** Each mask's column head: its number, and its position (shorter where the column is narrow). */
function drawLensHeads(canvas, d, { names, col, X }) {
  d.masks.forEach((position, m) => {
    const x = X(names + m * col + col / 2);
    canvas.append(
      svgNode("text", { "data-role": "col-label", "data-mask": m, x, y: LENS_TEXT + 2,
        "font-size": LENS_TEXT, "font-weight": 600, "text-anchor": "middle" },
      _("mask {mask}", { mask: m + 1 })),
      svgNode("text", { "data-role": "col-position", "data-mask": m, x, y: 2 * LENS_TEXT + 8,
        "font-size": LENS_TEXT, "text-anchor": "middle" }, [_("position {position}", { position }),
        _("pos. {position}", { position })].find((t) => lensWidth(t) <= col - 10) || String(position)),
    );
  });
}

function drawLens(state, canvas, d, width) {
  const at = lensLayout(d, width);
  const { names, col, top, X, R, rtl } = at;
  const last = d.layers.length - 1;
  const cells = [];
  drawLensHeads(canvas, d, at);
  d.layers.forEach((name, l) => {
    const y = top + l * LENS_ROW;
    const final = l === last;
    const label = svgNode("text", { "data-role": "row-label", "data-layer": l,
      x: X(names - 10), y: y + (final ? LENS_ROW / 2 - 4 : LENS_ROW / 2 + LENS_TEXT * 0.35),
      "font-size": LENS_TEXT, "font-weight": final ? 700 : 400, "text-anchor": rtl ? "start" : "end" },
    name);
    if (final) label.setAttribute("data-prediction", "");
    canvas.appendChild(label);
    if (final) {
      canvas.appendChild(svgNode("text", { "data-role": "prediction-label", x: X(names - 10),
        y: y + LENS_ROW / 2 + LENS_TEXT, "font-size": LENS_TEXT, "font-weight": 700,
        "text-anchor": rtl ? "start" : "end" }, d.prediction));
    }
    d.masks.forEach((_position, m) => {
      const p = d.top_p[l][m][0];
      const word = d.top_tokens[l][m][0];
      const x = R(names + m * col, col);
      const fill = rgb(viridis(p));
      const rect = svgNode("rect", { "data-testid": "lens-cell", "data-role": "cell", "data-layer": l,
        "data-mask": m, "data-token": word, "data-probability": p, x, y, width: col - 2,
        height: LENS_ROW - 2, fill });
      const ink = figureInkOn(viridis(p));
      const chars = Math.max(2, Math.floor((col - 10) / (FIGURE_CHAR * LENS_TEXT)));
      const shown = [...word].length > chars ? `${[...word].slice(0, chars - 1).join("")}…` : word;
      canvas.append(rect,
        svgNode("text", { "data-role": "word", x: x + (col - 2) / 2, y: y + LENS_TEXT + 3,
          "font-size": LENS_TEXT, "font-weight": 600, "text-anchor": "middle", fill: ink,
          "pointer-events": "none" }, shown),
        svgNode("text", { "data-role": "probability", x: x + (col - 2) / 2, y: y + 2 * LENS_TEXT + 9,
          "font-size": LENS_TEXT, "text-anchor": "middle", fill: ink, "pointer-events": "none" },
        number(p, 2)));
      cells.push(rect);
    });
  });
  // the prediction's row set apart: a line over it
  const lineY = top + last * LENS_ROW - 1;
  canvas.appendChild(svgNode("line", { "data-role": "prediction-line", x1: X(0),
    x2: X(names + d.masks.length * col), y1: lineY, y2: lineY, stroke: FIGURE_INK, "stroke-width": 2 }));
  if (at.bar) canvas.appendChild(colourBar({ width, left: names + d.masks.length * col + 10, top,
    height: d.layers.length * LENS_ROW - 2, low: 0, high: 1, colour: (v) => rgb(viridis(v)),
    scale: colourBarScale(0, 1, 4, LENS_TEXT), title: "", size: LENS_TEXT }));
  const ring = figureRing();
  canvas.appendChild(ring);
  Object.assign(state, { ring, box: (l, m) => ({ x: R(names + m * col, col), y: top + l * LENS_ROW,
    width: col - 2, height: LENS_ROW - 2 }) });
  return at.height;
}

function lensTable(d) {
  const head = [_("layer"), _("mask"), _("position"), _("top words and their probabilities")];
  if (!d) return { head, body: [] };
  const body = [];
  d.layers.forEach((name, l) => d.masks.forEach((position, m) => {
    const said = d.top_tokens[l][m].map((w, k) => `${w} ${number(d.top_p[l][m][k], 4)}`).join("; ");
    body.push([name, m + 1, position, said]);
  }));
  return { head, body };
}

function lensLabel(d) {
  const last = d.layers.length - 1;
  const predicted = d.masks.map((_p, m) => `${m + 1}: “${d.top_tokens[last][m][0]}” `
    + `(${number(d.top_p[last][m][0], 2)})`).join("; ");
  return _("A grid of the top word at each of {layers} layers (rows) for each of {masks} masks "
    + "(columns), each with its probability; the last row is the prediction: {predicted}. The "
    + "arrow keys choose a cell; its top five words are listed below the plot.",
  { layers: d.layers.length, masks: d.masks.length, predicted });
}

function lensShow({ root, readout, state, chosen }) {
  const d = state.data;
  root.dataset.cell = chosen && d ? `${chosen.layer},${chosen.mask}` : "";
  if (state.ring) figureRingAt(state.ring, chosen && d ? state.box(chosen.layer, chosen.mask) : null);
  if (!d || !chosen) {
    readout.textContent = d ? _("Hover a cell, or Tab to the plot: a cell's five top words.") : "";
    return;
  }
  const { layer, mask } = chosen;
  const last = d.layers.length - 1;
  const head = element("div", { class: "lens-top-title" }, _("Mask {mask} (position {position}), {layer}: the top five", {
    mask: mask + 1, position: d.masks[mask], layer: d.layers[layer] }));
  const list = element("ol", { "data-testid": "lens-top", class: "lens-top" });
  d.top_tokens[layer][mask].forEach((word, k) => {
    const p = d.top_p[layer][mask][k];
    const item = element("li", { "data-role": "top-word", "data-token": word, "data-probability": p });
    const bar = element("span", { class: "lens-bar", "aria-hidden": "true" });
    bar.style.inlineSize = `${Math.max(1, Math.round(p * 100))}%`;
    const track = element("span", { class: "lens-track", "aria-hidden": "true" });
    track.appendChild(bar);
    item.append(element("span", { class: "lens-word", dir: "auto" }, word),
      element("span", { class: "lens-p" }, number(p, 3)), track);
    list.appendChild(item);
  });
  const parts = [head, list];
  const predicted = d.top_tokens[last][mask][0];
  if (d.final && layer !== last && !d.top_tokens[layer][mask].includes(predicted)) {
    parts.push(element("div", { "data-role": "final" }, _("The prediction, “{word}”, has {p} here.", {
      word: predicted, p: number(d.final[layer][mask], 4) })));
  }
  readout.replaceChildren(...parts);
}

export function mount(host, data) {
  let chosen = null;
  const { root, plot, readout, state, start } = mountFigure(host, {
    name: "lens", testid: "lens-grid", choice: "cell", untitled: "lens grid",
    minWidth: LENS_MIN_WIDTH, role: () => _("grid"), problem: lensProblem,
    note: (note) => element("div", {}, note),
    counts: { layers: (d) => d.layers.length, masks: (d) => d.masks.length },
    label: lensLabel, table: lensTable,
    forget: (d) => {
      if (chosen && (!d || chosen.layer >= d.layers.length || chosen.mask >= d.masks.length)) chosen = null;
    },
    draw: (canvas, d, width) => drawLens(state, canvas, d, width),
    show: () => lensShow({ root, readout, state, chosen }),
    choose,
    key: (event, d) => {
      const last = d.layers.length - 1;
      const at = chosen || { layer: last, mask: 0 };
      if (event.key in LENS_ARROWS) {
        const [down, along] = LENS_ARROWS[event.key];
        return chosen ? { layer: Math.min(last, Math.max(0, at.layer + down)),
          mask: Math.min(d.masks.length - 1, Math.max(0, at.mask + along * (rightToLeft() ? -1 : 1))) } : at;
      }
      if (event.key === "Home" || event.key === "End") return { layer: event.key === "Home" ? 0 : last, mask: at.mask };
      return event.key === "Escape" && chosen ? null : undefined;
    },
  });

  function choose(next) {
    const same = next && chosen && next.layer === chosen.layer && next.mask === chosen.mask;
    if (same || (!next && !chosen)) return;
    chosen = next;
    lensShow({ root, readout, state, chosen });
  }

  plot.addEventListener("focus", () => {
    if (!chosen && state.data) choose({ layer: state.data.layers.length - 1, mask: 0 });
  });
  plot.addEventListener("mousemove", (event) => {
    const cell = event.target instanceof Element ? event.target.closest("[data-role=cell]") : null;
    if (!cell || !state.data) return;
    choose({ layer: Number(cell.dataset.layer), mask: Number(cell.dataset.mask) });
  });
  return start(data);
}
