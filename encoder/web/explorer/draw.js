/**
 * What the explorer's modes draw with: its measures, the colours of a weight, the words of a
 * value, the legends under a scale, and the pieces of a saved SVG.
 */
import {
  SERIES_COLOURS, VIRIDIS, viridis, diverging, rgb, element, spoken, rightToLeft, _, number,
} from "../shared.js";
import { svgNode } from "../figure_tools.js";

export const MAX_OVERLAY = 8;
// the overlaid heads' colours: apart in every common colour vision, 3:1 on white (shared.js)
export const HEAD_COLOURS = SERIES_COLOURS;
// ... and their dash patterns (px), one per overlay index: colour is never the only carrier
export const HEAD_DASHES = [[], [9, 4], [2, 3], [9, 3, 2, 3], [16, 5], [5, 5], [2, 7],
  [16, 3, 2, 3, 2, 3]];
export const SIGNED_RGB = { more: "#B2182B", less: "#2166AC" }; // B − A's lines: B more, B less
export const SIGN_MIN = 0.25; // a B − A cell this far (of its scale) from white gets a + or − glyph
export const TITLE_CHARS = 60; // the input's first characters in a saved figure's title
export const SVG_SIDE = 640; // a saved matrix's cells at most this wide (whole pixels per cell)
export const MINUS = "\u2212"; // a difference's sign, as the page writes it
export const LINE_MIN = 0.01; // lines below this weight are not drawn (invisible at that opacity)
export const ALPHA_STEPS = 16; // lines are stroked in this many opacities, one path each
export const ROW = { normal: 22, large: 30 }; // px per token row in the lines view
export const LINES_ALL = 96; // up to this many tokens the lines view lists them all; past it, a window
export const WINDOW = 28; // tokens the lines view shows around the chosen query of a long input
export const MATRIX_PX = 720; // the matrix's side at most (the window's height bounds it too)
export const MATRIX_MIN_PX = 240; // ... but never below this
export const LABEL_PX = { normal: 14, large: 20 }; // a matrix cell this tall or more gets its token
export const SETTLE_MS = 250;
const MASKED_RGB = [218, 218, 218]; // cells a local window masks: a grey no scale colour takes

// ---------------------------------------------------------------------------- colours

/** The largest |weight| of a reader (at least a tiny number, so that it can divide). */
export function peak(weights) {
  let top = 1e-6;
  for (let q = 0; q < weights.n; q++) {
    for (let k = 0; k < weights.n; k++) top = Math.max(top, Math.abs(weights.at(q, k)));
  }
  return top;
}

/** The largest |weight| from the queries `rows` to the keys start..end−1. */
export function shownPeak(weights, rows, start, end) {
  let top = 0;
  for (const q of rows) {
    for (let k = start; k < end; k++) top = Math.max(top, Math.abs(weights.at(q, k)));
  }
  return top;
}

/** Paint a weights reader onto a canvas at one pixel per cell; colours run from 0 to `scale`
 * (from −scale to scale when signed); the cells `masked(q, k)` says a window masks are
 * MASKED_RGB. Returns how many cells were masked. */
export function paint(canvas, weights, signed, scale, masked = () => false) {
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
export const quote = (token) => (rightToLeft() ? `\u2068"${token}"\u2069` : `"${token}"`);
export const fixed = (value) => number(Math.abs(value) < 5e-4 ? 0 : value, 3, false);
/** A difference with its sign: "+0.120", "−0.080" ("0.000" for none to three decimals). */
export const signedFixed = (value) => {
  const text = fixed(Math.abs(value));
  return text === number(0, 3, false) ? text : `${value > 0 ? "+" : MINUS}${text}`;
};

// ---------------------------------------------------------------------------- legends, SVG

/** A colour scale's legend: what it measures, its two ends' numbers and a bar between them
 * (B − A: "B less −0.3 ▭ +0.3 B more"); `kind` "lines" is a ramp of one line's opacity. */
export function legendOf(signed, scale, measure, kind = "cells") {
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
export function textWidth(text, px) {
  measurer = measurer || document.createElement("canvas").getContext("2d");
  measurer.font = `${px}px system-ui, sans-serif`;
  return measurer.measureText(text).width;
}

/** A token as a saved figure labels it: at most 16 characters. */
export const shortToken = (token) => (token.length > 16 ? `${token.slice(0, 15)}…` : token);

/** `canvas` (one pixel per cell) as a PNG data URL at `factor` whole pixels per cell, crisp. */
export function crisp(canvas, factor) {
  const big = document.createElement("canvas");
  big.width = canvas.width * factor;
  big.height = canvas.height * factor;
  const context = big.getContext("2d");
  context.imageSmoothingEnabled = false;
  context.drawImage(canvas, 0, 0, big.width, big.height);
  return big.toDataURL("image/png");
}

/** A saved figure's legend at (x, y): as legendOf, the bar a gradient; returns [group, width]. */
export function svgLegend(signed, scale, measure, x, y, kind = "cells") {
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

