/**
 * What the explorer says of its look (explorer `x`, attention_explorer.js's mount): the readout
 * of a query or a cell, the figure's sentence of its own numbers, and its saved title, table and
 * SVG.
 */
import { _, number } from "../shared.js";
import { figureRounded, svgDocument, svgNode } from "../figure_tools.js";
import { fixed, quote, signedFixed, textWidth, TITLE_CHARS } from "./draw.js";
import { READINGS } from "./matrix.js";

/** The readout of query `q` (and key `k`, or its largest key when null) in the mode's
 * reading (the weights in lines and every head). */
export function describe(x, layer, head, q, k) {
  const reading = x.mode().reading || READINGS.weights;
  const weights = reading === READINGS.weights ? x.full(layer, head) : x.mode().read(layer, head);
  const tokens = x.shown().tokens;
  const named = reading.named(x, layer, head);
  if (!weights) return _("{name}: drawn in blocks; loading it in full", { name: named });
  const written = x.signed() ? signedFixed : fixed; // a difference says its sign
  if (k === null) {
    let best = 0;
    for (let j = 1; j < weights.n; j++) if (weights.at(q, j) > weights.at(q, best)) best = j;
    const values = { name: named, query: quote(tokens[q]), key: quote(tokens[best]),
      value: written(weights.at(q, best)) };
    return x.signed() ? _("{name} (B − A): {query} gains most on {key} {value}", values)
      : reading.best(values);
  }
  const values = { name: named, query: quote(tokens[q]), key: quote(tokens[k]),
    value: written(weights.at(q, k)) };
  if (x.masked(layer, q, k, reading === READINGS.rollout ? "rollout" : "weights")) {
    return _("{name}: {query} → {key} outside the window (masked)", values);
  }
  return x.signed() ? _("{name} (B − A): {query} → {key} {value}", values)
    : _("{name}: {query} → {key} {value}", values);
}

/** The matrix the look draws: the chosen head's weights (lines, matrix, every head), what it
 * moves, or the rollout; B − A's differences; null where not in the payload. */
export function lookMatrix(x) {
  const reading = x.mode().reading || READINGS.weights;
  const read = x.mode().read || reading.read(x);
  return { reading, weights: read(x.state.layer, x.state.head) };
}

/** The setup shown, by name: "A", or "B − A" for the difference of two named others. */
export const setupTitle = (x) => (x.signed() ? `${x.b().name} − ${x.a().name}` : x.shown().name);

/** The look's head (or rollout's layer) in words, with the setup: "Layer 2, head 1 of A". */
export function lookName(x) {
  const { reading } = lookMatrix(x);
  const layer = x.shown().layerLabels[x.state.layer];
  const values = { layer, head: x.state.head, setup: setupTitle(x) };
  if (reading === READINGS.moves) return _("What layer {layer}, head {head} of {setup} moves", values);
  if (reading === READINGS.rollout) {
    return _("Rollout after layer {layer} of {setup}",
      { ...values, layer: x.shown().layerLabels[x.rolledLayer(x.state.layer)] });
  }
  if (x.state.mode === "heads") {
    return _("Every head of {setup} ({layers} layers × {heads} heads), layer {layer}, head "
      + "{head} chosen", { ...values, layers: x.shown().layers, heads: x.shown().heads });
  }
  return _("Layer {layer}, head {head} of {setup}", values);
}

/** Labels of a matrix's rows and columns: "3 it" (index, token), or a block's tokens. */
export function matrixLabels(x, n) {
  const setup = x.shown();
  if (n === setup.n) return setup.tokens.map((token, i) => `${i} ${token}`);
  const starts = setup.tiles ? setup.tiles.starts : [];
  return starts.map((start, i) => _("tokens {start}–{end}",
    { start, end: (i + 1 < starts.length ? starts[i + 1] : setup.n) - 1 }));
}

/** The look in one sentence of its own numbers (computed when it settles: O(T²)). Weights
 * (and what a head moves, the rollout): the query with the largest single value (or the
 * pinned one) and its key, then how many queries put their largest on each key, the most
 * chosen named; B − A: its largest increase and decrease, query → key. */
export function figureSentence(x) {
  if (x.mode().sentence) return x.mode().sentence(); // the neuron view's own
  const { reading, weights } = lookMatrix(x);
  const head = lookName(x);
  const tokens = x.shown().tokens;
  if (!weights) return _("{name}: not in this payload.", { name: head });
  if (weights.n !== tokens.length) {
    return _("{head}: drawn in blocks until its full resolution arrives.", { head });
  }
  const n = weights.n;
  const pinned = x.state.pinned !== null && x.state.pinned < n ? x.state.pinned : null;
  if (x.signed()) {
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
export function inputText(x) {
  const words = x.shown().tokens.filter((t) => !/^(\[[A-Z]+\]|\x3c\/?s>|\x3cpad>)$/.test(t));
  const text = words.join(" ").replace(/ ##/g, "").replace(/\s+/g, " ").trim();
  return text.length > TITLE_CHARS ? `${text.slice(0, TITLE_CHARS - 1)}…` : text;
}

/** A saved figure's title: setup, input, layer and head, mode. */
export function figureTitle(x) {
  const { reading } = lookMatrix(x);
  const layer = x.shown().layerLabels[x.state.layer];
  const values = { setup: setupTitle(x), layer, head: x.state.head };
  const look = reading === READINGS.rollout
    ? _("{setup}, rollout after layer {layer}",
      { ...values, layer: x.shown().layerLabels[x.rolledLayer(x.state.layer)] })
    : { lines: () => _("{setup}, layer {layer}, head {head}, lines", values),
      matrix: () => _("{setup}, layer {layer}, head {head}, matrix", values),
      heads: () => _("{setup}, layer {layer}, head {head}, every head", values),
      moves: () => _("{setup}, layer {layer}, head {head}, what it moves", values),
      neuron: () => _("{setup}, layer {layer}, head {head}, q · k", values) }[x.state.mode]();
  return `${look}: "${inputText(x)}"`;
}

/** The look's matrix as a table: a row per query (its index and token), a column per key. */
export function figureTable(x) {
  if (x.mode().table) return x.mode().table(); // the neuron view's own
  const { weights } = lookMatrix(x);
  if (!weights) return { head: [_("query \\ key")], body: [] };
  const labels = matrixLabels(x, weights.n);
  const body = labels.map((label, q) => {
    const row = [label];
    for (let k = 0; k < weights.n; k++) row.push(figureRounded(weights.at(q, k)));
    return row;
  });
  return { head: [_("query \\ key"), ...labels], body };
}

/** The look as one SVG document: its title's lines above the mode's own drawing. */
export function figureSvg(x) {
  const drawing = x.mode().svg ? x.mode().svg() : null;
  const heading = figureTitle(x);
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

