/**
 * The neuron view: how one attention weight is made, the explorer's "q · k" mode (explorer `x`,
 * attention_explorer.js's mount). For the chosen head, query token and key token: q and k
 * dimension by dimension (RoPE's turned ones where the model turns them: the payload's "qk",
 * encoder.inspect.neuron.qk_vectors), their elementwise product, its sum q·k, the scale
 * 1/√d_k, the score, and the softmax weight, read from the explorer's own weights for that cell.
 * Every number is computed here from the payload: a new query, key or head draws in one frame
 * and sends nothing. Opened by the key N (from any mode, at the chosen query and the cell
 * pointed at or the query's largest weight) or a click on a matrix cell; "[" and "]" step the
 * key token, ↑/↓ the query, ←/→ the head, as everywhere in the explorer.
 *
 * DOM contract (on the explorer's stage):
 *   [data-testid="neuron-view"] with data-layer, data-head, data-query, data-key
 *   [data-role="neuron-query"], [data-role="neuron-key"]: select elements of the tokens
 *   [data-testid="neuron-q"], [data-testid="neuron-k"], [data-testid="neuron-product"]: rows
 *     (one per block of dimensions that fits the width) of cells with data-dim and data-value,
 *     each value printed in its cell (colour: blue below 0, red above, never the only carrier)
 *   [data-testid="neuron-sum"], [data-testid="neuron-score"], [data-testid="neuron-weight"]:
 *     data-value (the score: "-Infinity" where the key is masked)
 */
import { _, diverging, element, n_, number, rgb } from "./shared.js";
import { figureInkOn, svgNode } from "./figure_tools.js";
import { fixed, quote } from "./explorer/draw.js";
import { qkVectors } from "./explorer/payload.js";

const CELL_PX = { normal: 54, large: 68 }; // a dimension's column: "−1.23" at 14 px (16 px)
const ROW_LABEL_PX = { normal: 48, large: 60 }; // "q∘k"; the dimensions' row: "#"
const GAP_PX = 2; // between a block's columns (neuron_view.css)
const DIGITS = 2; // decimals printed in a cell
const SVG_CELL = 46; // a saved figure's cell width
// the colours go this far towards the diverging scale's ends: its printed number keeps 4.5:1
// (between 0.68 and 0.76 of the red end neither dark nor white text would)
const TINT = 0.66;

/** The chosen cell's numbers, or null where the payload holds no q and k for the head (or the
 * look is B − A). The key: the one chosen, else the query's largest weight. */
export function neuronCell(x) {
  const { state } = x;
  if (x.signed()) return null;
  const setup = x.shown();
  const vectors = qkVectors(setup, state.layer, state.head);
  const weights = x.full(state.layer, state.head);
  if (!vectors || !weights) return null;
  const query = Math.min(x.query() ?? 0, setup.n - 1);
  let key = state.key;
  if (key === null || key >= setup.n) {
    key = 0;
    for (let j = 1; j < setup.n; j++) if (weights.at(query, j) > weights.at(query, key)) key = j;
  }
  const q = vectors.q(query);
  const k = vectors.k(key);
  const product = q.map((value, i) => value * k[i]);
  const dot = product.reduce((sum, value) => sum + value, 0);
  const scale = 1 / Math.sqrt(vectors.dk);
  const masked = x.masked(state.layer, query, key);
  let keys = 0;
  for (let j = 0; j < setup.n; j++) keys += x.masked(state.layer, query, j) ? 0 : 1;
  return { query, key, q, k, product, dot, scale, dk: vectors.dk, masked, keys,
    score: masked ? -Infinity : dot * scale, weight: weights.at(query, key), tokens: setup.tokens };
}

/** The explorer's neuron mode. The functions below share `m`: {x, built}. */
export function neuronMode(x) {
  const m = { x, built: null };
  return { label: () => _("q · k"), overlays: false, oneHead: true, pointed: () => null,
    build: () => build(m), draw: () => draw(m), svg: () => svg(m), table: () => table(m),
    sentence: () => sentence(m), forget() { m.built = null; } };
}

/** Open the neuron view at query `q` (pinned) and key `k` (null: the query's largest weight). */
export function openNeuron(x, q, k) {
  if (x.state.mode !== "neuron") x.state.before = x.state.mode;
  x.state.mode = "neuron";
  x.state.pinned = q;
  x.state.key = k;
  x.render();
  x.settle();
}

/** The stage's elements: the two token pickers, the rows' box, the sum, score and weight. */
function build(m) {
  const { x } = m;
  const setup = x.shown();
  const large = x.large();
  const picker = (role, word, choose) => {
    const select = element("select", { "data-role": role, class: "aex-layer" });
    setup.tokens.forEach((token, i) => select.append(element("option", { value: String(i) },
      `${i} ${token}`)));
    select.addEventListener("change", () => choose(Number(select.value)));
    const label = element("label", { class: "aex-layer-label" }, `${word} `);
    label.append(select);
    return [label, select];
  };
  const [queryLabel, querySelect] = picker("neuron-query", _("Query"), (q) => {
    x.state.pinned = q;
    x.look();
    x.settle();
  });
  const [keyLabel, keySelect] = picker("neuron-key", _("Key"), (k) => stepKey(x, k));
  const root = element("div", { class: "nv", "data-testid": "neuron-view" });
  const rows = element("div", { class: "nv-rows" });
  const line = (testid) => element("div", { class: "nv-line", "data-testid": testid });
  const sum = line("neuron-sum");
  const score = line("neuron-score");
  const weight = line("neuron-weight");
  const note = element("div", { class: "aex-note", "data-role": "scale" });
  root.append(element("div", { class: "nv-pick" }, null), rows, sum, score, weight, note);
  root.firstChild.append(queryLabel, keyLabel);
  x.stage.replaceChildren(root);
  m.built = { setup, large, root, rows, sum, score, weight, note, querySelect, keySelect,
    width: 0 };
}

/** Key `k` chosen (wrapped into the tokens), drawn at once. */
export function stepKey(x, k) {
  const n = x.shown().n;
  x.state.key = ((k % n) + n) % n;
  x.look();
}

/** Dimensions per block of rows: as many columns as the stage's width holds, evened out. */
function perBlock(m, dk) {
  const large = m.built.large ? "large" : "normal";
  const wide = m.built.rows.clientWidth || m.x.stage.clientWidth || 720; // the rows' own box
  const fits = Math.max(4, Math.floor((wide - ROW_LABEL_PX[large] - 16) / (CELL_PX[large] + GAP_PX)));
  return Math.ceil(dk / Math.ceil(dk / fits)); // blocks of even length
}

/** A cell of `value` coloured on the row's `scale`, its number printed. */
function valueCell(value, dim, scale) {
  const colour = diverging((TINT * value) / scale);
  return element("span", { class: "nv-cell", "data-dim": String(dim), "data-value": String(value),
    dir: "ltr", // a number: its minus stays on its left in a right-to-left page
    style: `background:${rgb(colour)};color:${figureInkOn(colour)}` }, number(value, DIGITS, false));
}

const peakOf = (...arrays) => Math.max(1e-9, ...arrays.flatMap((a) => Array.from(a, Math.abs)));

/** The rows q, k, q∘k in blocks of dimensions, each a grid: a label column, a cell a dimension. */
function drawRows(m, cell) {
  const { built } = m;
  const large = built.large ? "large" : "normal";
  const each = perBlock(m, cell.dk);
  const scales = { q: peakOf(cell.q, cell.k), product: peakOf(cell.product) };
  const blocks = [];
  for (let start = 0; start < cell.dk; start += each) {
    const end = Math.min(cell.dk, start + each);
    const block = element("div", { class: "nv-block", style: `grid-template-columns:`
      + `${ROW_LABEL_PX[large]}px repeat(${end - start}, ${CELL_PX[large]}px)` });
    block.append(element("span", { class: "nv-label", title: _("dimension") }, "#"));
    for (let i = start; i < end; i++) block.append(element("span", { class: "nv-dim" }, String(i)));
    for (const [testid, word, values, scale] of [["neuron-q", "q", cell.q, scales.q],
      ["neuron-k", "k", cell.k, scales.q], ["neuron-product", "q∘k", cell.product,
        scales.product]]) {
      const row = element("div", { class: "nv-row", "data-testid": testid });
      row.append(element("span", { class: "nv-label" }, word));
      for (let i = start; i < end; i++) row.append(valueCell(values[i], i, scale));
      block.append(row);
    }
    blocks.push(block);
  }
  built.rows.replaceChildren(...blocks);
}

/** What a look changes: the pickers, the rows, the sum, the score and the weight. */
function draw(m) {
  const { x } = m;
  if (!m.built || m.built.setup !== x.shown() || m.built.large !== x.large()) build(m);
  const { built } = m;
  const cell = neuronCell(x);
  built.root.hidden = !cell;
  if (!cell) {
    x.message.textContent = missing(x);
    return;
  }
  Object.assign(built.root.dataset, { layer: String(x.state.layer), head: String(x.state.head),
    query: String(cell.query), key: String(cell.key) });
  built.querySelect.value = String(cell.query);
  built.keySelect.value = String(cell.key);
  drawRows(m, cell);
  const values = valuesOf(cell);
  built.sum.dataset.value = String(cell.dot);
  built.sum.textContent = _("q·k = the sum of q∘k over {dk} dimensions = {dot}", values);
  built.score.dataset.value = String(cell.score);
  built.score.textContent = cell.masked
    ? _("The key is outside the local window: masked, score −∞.")
    : _("× 1/√{dk} = {score}: the score", values);
  built.weight.dataset.value = String(cell.weight);
  built.weight.textContent = n_("after the softmax over {count} key: weight {weight}",
    "after the softmax over {count} keys: weight {weight}", cell.keys, values);
  built.note.textContent = _("Colours: blue below 0, red above; q and k share a scale, q∘k has "
    + "its own. The numbers are printed in the cells.");
}

/** Why no cell is drawn: B − A, the heads' q and k on their way (asked of the host), or not sent. */
function missing(x) {
  const name = x.headName(x.state.layer, x.state.head);
  if (x.signed()) return _("The neuron view shows one setup: choose A or B.");
  return x.asks && !x.shown().qk.size ? _("{name}: its queries and keys are on their way…",
    { name }) : _("{name}: its queries and keys are not in this payload.", { name });
}

const valuesOf = (cell) => ({ dk: cell.dk, dot: fixed(cell.dot), score: fixed(cell.score),
  weight: fixed(cell.weight), query: quote(cell.tokens[cell.query]),
  key: quote(cell.tokens[cell.key]) });

/** The cell in one sentence of its own numbers. */
function sentence(m) {
  const cell = neuronCell(m.x);
  const head = m.x.headName(m.x.state.layer, m.x.state.head);
  if (!cell) return missing(m.x);
  const values = { ...valuesOf(cell), head };
  if (cell.masked) {
    return _("{head}: {query} → {key}: q·k = {dot}, but the key is masked: weight 0.", values);
  }
  return n_("{head}: {query} → {key}: q·k = {dot}, × 1/√{dk} = {score}; after the softmax over "
    + "{count} key: {weight}.", "{head}: {query} → {key}: q·k = {dot}, × 1/√{dk} = {score}; "
    + "after the softmax over {count} keys: {weight}.", cell.keys, values);
}

/** The cell as a table: a row a dimension (q, k, q∘k), then the sum, score and weight. */
function table(m) {
  const cell = neuronCell(m.x);
  const head = [_("dimension"), "q", "k", "q∘k"];
  if (!cell) return { head, body: [] };
  const body = Array.from(cell.q, (value, i) => [String(i), value, cell.k[i], cell.product[i]]);
  body.push([_("sum (q·k)"), "", "", cell.dot], [_("score"), "", "", cell.masked ? "−∞" : cell.score],
    [_("weight"), "", "", cell.weight]);
  return { head, body };
}

/** The look as a saved figure's drawing: the three rows as cells with their numbers, the sum,
 * score and weight as text below. */
function svg(m) {
  const cell = neuronCell(m.x);
  if (!cell || !m.built) return null;
  const group = svgNode("g", { "font-size": 12, fill: "#1b1b1b" });
  const rows = [["q", cell.q, peakOf(cell.q, cell.k)], ["k", cell.k, peakOf(cell.q, cell.k)],
    ["q∘k", cell.product, peakOf(cell.product)]];
  const each = Math.min(cell.dk, 16);
  let y = 0;
  for (let start = 0; start < cell.dk; start += each) {
    for (let i = start; i < Math.min(cell.dk, start + each); i++) {
      group.append(svgNode("text", { x: 44 + (i - start + 0.5) * SVG_CELL, y: y + 12,
        "text-anchor": "middle", fill: "#555555" }, String(i)));
    }
    rows.forEach(([word, values, scale], r) => {
      const top = y + 18 + r * 22;
      group.append(svgNode("text", { x: 0, y: top + 15 }, word));
      for (let i = start; i < Math.min(cell.dk, start + each); i++) {
        const colour = diverging((TINT * values[i]) / scale);
        const left = 44 + (i - start) * SVG_CELL;
        group.append(svgNode("rect", { x: left, y: top, width: SVG_CELL - 2, height: 20,
          fill: rgb(colour) }), svgNode("text", { x: left + SVG_CELL / 2 - 1, y: top + 15,
          "text-anchor": "middle", fill: figureInkOn(colour) }, number(values[i], DIGITS, false)));
      }
    });
    y += 18 + 3 * 22 + 10;
  }
  for (const line of [m.built.sum, m.built.score, m.built.weight]) {
    group.append(svgNode("text", { x: 0, y: y + 14, "font-size": 14 }, line.textContent));
    y += 20;
  }
  return { group, width: 44 + each * SVG_CELL, height: y + 4 };
}
