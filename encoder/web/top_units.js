/**
 * Top units: one token's most active feed-forward units after the activation, drawn as SVG (the
 * Activations view's figure): on the left, bars of the token's k largest values, largest on top,
 * each row named by its unit; on the right, a heatmap of the same units (rows) on every token of
 * the sentence (columns), viridis colours with a colour bar, the token's own column outlined.
 *
 * An ES module, no framework, no network: each host's glue calls `mount`, the whole joined
 * into one file per host (encoder/web/hosts.py). The stylesheet is top_units.css beside this file.
 *
 *   const chart = mount(host, data);   // host: an element or shadow root
 *   chart.update(newData);             // another token, layer, sentence or language
 *   chart.destroy();
 *
 * data: {title, notes: string[] (the lines under the title), tokens: string[] (one per
 *        position), token (the position whose units these are), units: string[k] (each row's
 *        label, "unit 200"), values: number[k] (the bars: the token's values, largest first),
 *        across: number[k][n] (the heatmap: each unit on every token),
 *        zmin, zmax (the colour scale's ends), scale (the colour bar's title), colour (the
 *        bars'), lang?, words?} (top_units.py beside it). Every word but the module's own
 *        (the readout's, the tools', the plot's label) comes translated; with `lang` and `words`
 *        (app.i18n.browser) the module's own are in that language too.
 * User text (tokens) is drawn with textContent only.
 *
 * Reading it: the mouse over a bar or a cell, or the keyboard (the plot is one Tab stop: ↑ and
 * ↓ the unit above and below, ← and → the token before and after in the direction they are
 * drawn, Home the first token, End the last, Page Up the first unit, Page Down the last; Escape
 * clears), chooses a cell: a ring marks it, a band its unit's bar, and the readout below gives
 * the unit's value on that token (a bar is its unit on the outlined token). In a right-to-left
 * language the figure is mirrored: the bars on the right, growing leftwards, the units named on
 * their right, the first token's column on the right, the colour bar on the left.
 *
 * DOM contract (it may sit inside a shadow root):
 *   root     [data-testid="top-units"] role="figure", named by the title, with data-units and
 *            data-tokens (how many), data-draw-ms (the last draw's time), data-cell (the chosen
 *            cell, "unit,token": its row and its position; "" when none), data-width (the
 *            width it was drawn for)
 *   plot     the svg [data-role="plot"]: tabindex="0", role="application",
 *            aria-roledescription, aria-label (what it shows, its largest value, how to read
 *            it); inside it [data-role="bar"][data-unit=i] (a unit's bar), [data-role="label"]
 *            [data-unit=i] (its name), [data-role="cell"][data-unit=i][data-token=j] (the
 *            heatmap's cells, their colour in `fill`), [data-role="chosen-column"] (the outlined
 *            column, data-token), [data-role="tick"] (the token labels shown: data-position, and
 *            the whole token in data-token-text), [data-role="axis"] (the bars' values),
 *            [data-role="colour-bar"], [data-role="ring"] (the chosen cell's mark) and
 *            [data-role="row"] (its unit's band; both hidden when none)
 *   readout  [data-role="readout"], aria-live="polite": the chosen cell's unit, token and value
 *   tools    figure_tools.js's [data-testid=figure-text]: "Show as a table" (a row a unit: its
 *            label, then its value on every token) and "Save as…" (the figure as SVG or PNG, the
 *            table as CSV)
 *   message  [data-role="message"]: why nothing is drawn
 */
import { viridis, rgb, element, rightToLeft, _, n_, number } from "./shared.js";
import {
  figureSaid, svgNode, FIGURE_INK, FIGURE_CHAR, niceScale, tokenLabel, figurePoint, mountFigure,
  colourBarScale, colourBar, figureRing, figureRingAt, angledRoom, tokenTick
} from "./figure_tools.js";

const UNITS_TEXT = 14; // px: every label (none under 12 px: the page's rule)
const UNITS_ROW = 28; // px: a unit's row
const UNITS_TOP = 32; // px: above the rows, the bars' values and the colour bar's title
const UNITS_MIN_WIDTH = 300; // px: narrower than this, drawn this wide (the page scrolls)
const UNITS_SHARES = [0.28, 0.72]; // the bars' and the heatmap's shares of the plots' width
const UNITS_GAP = 0.03; // between them, a share of the plots' width
const UNITS_OUTLINE = "#E69F00"; // the outlined token's column
const UNITS_ARROWS = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

const unitsPrompt = () =>
  _("Hover a bar or a cell, or Tab to the plot and use the arrow keys: one unit's value on one token.");

/** Why `data` cannot be drawn, or "". */
function unitsProblem(data) {
  const count = data && Array.isArray(data.tokens) ? data.tokens.length : 0;
  const k = data && Array.isArray(data.units) ? data.units.length : 0;
  if (!count || !k) return _("nothing to draw");
  const numbers = (row) => Array.isArray(row) && row.every(Number.isFinite);
  if (!numbers(data.values) || data.values.length !== k) return `the bars do not have ${k} values`;
  const ok = Array.isArray(data.across) && data.across.length === k
    && data.across.every((row) => numbers(row) && row.length === count);
  if (!ok) return `the heatmap does not have ${k} x ${count} values`;
  if (!Number.isInteger(data.token) || data.token < 0 || data.token >= count) {
    return `the token ${data.token} is not one of the ${count} positions`;
  }
  return "";
}

/** The bars' scale over [low, high]: the most steps (4 at most) whose labels fit side by side
 * in `width` px. */
function unitsBarScale(low, high, width) {
  for (let count = 4; count > 1; count -= 1) {
    const scale = niceScale(low, high, count);
    const widest = Math.max(...scale.ticks.map((t) => unitsWidth(number(t, scale.digits, false))));
    if (width / (scale.ticks.length - 1) >= widest + 10) return scale;
  }
  return niceScale(low, high, 1);
}

/** A label's width in px at `size`, estimated. */
const unitsWidth = (text, size = UNITS_TEXT) => Math.ceil([...String(text)].length * FIGURE_CHAR * size);

/** `value` on the colour scale of `d`, as a CSS colour (viridis from zmin to zmax). */
function unitsColour(d, value) {
  const span = d.zmax - d.zmin;
  return rgb(viridis(span > 0 ? (value - d.zmin) / span : 0));
}

/** Every unit as a table's row: its label, then its value on every token. */
function unitsTable(d) {
  if (!d) return { head: [_("unit")], body: [] };
  const head = [_("unit"), ...d.tokens.map((token, p) => `${p} ${token}`)];
  const body = d.units.map((unit, i) => [unit, ...d.across[i]]);
  return { head, body };
}

/** The plot's label: what it shows, its largest value and how to read it. */
function unitsLabel(d) {
  let most = 0;
  d.values.forEach((v, i) => { if (v > d.values[most]) most = i; });
  const units = n_("{count} unit", "{count} units", d.units.length);
  const tokens = n_("{count} token", "{count} tokens", d.tokens.length);
  return _("Bars of {units}, the most active on “{token}” (position {position}), and a heatmap "
    + "of the same units on {tokens}; the largest is {unit}, {value}. ↑ and ↓ choose a unit, "
    + "← and → a token, Home the first token, End the last; the value is read below the plot.", {
    units, tokens, token: d.tokens[d.token], position: d.token, unit: d.units[most],
    value: figureSaid(d.values[most]) });
}

/** `d` drawn into `canvas`, `width` px wide (what the choice needs kept in `state`): its
 * height. */
function drawFigure(state, canvas, d, width) {
  const at = unitsLayout(d, width);
  // the chosen unit's band, under everything
  const row = svgNode("rect", { "data-role": "row", x: at.R(0, at.heatLeft - at.gap / 2),
    width: at.heatLeft - at.gap / 2, height: UNITS_ROW, fill: "#e8e8e8",
    visibility: "hidden", "pointer-events": "none" });
  canvas.appendChild(row);
  drawUnitBars(canvas, d, at);
  drawUnitsHeatmap(canvas, d, at);
  // the colour bar: its bands from zmin (bottom) to zmax (top), its values beside it
  canvas.appendChild(colourBar({ width, left: at.scaleLeft, top: at.top, height: at.scaleHeight,
    low: d.zmin, high: d.zmax, colour: (v) => unitsColour(d, v), scale: at.colours,
    title: d.scale, size: UNITS_TEXT }));
  // the token labels, under their columns
  const base = at.top + at.rows + 8;
  for (const p of at.shown) {
    canvas.appendChild(tokenTick(d.tokens, p, at.X(at.heatLeft + (p + 0.5) * at.band), base,
      UNITS_TEXT, p === d.token));
  }
  // the chosen cell's ring: white inside black, seen on every colour
  const ring = figureRing();
  canvas.appendChild(ring);
  const { top, band, barsLeft, barsWidth, heatLeft, heatWidth, gap, R } = at;
  Object.assign(state, { top, band, barsLeft, barsRight: barsLeft + barsWidth,
    heatLeft, heatRight: heatLeft + heatWidth, gap, ring, row, R });
  return at.height;
}

/** Where each part goes across `width`, drawn left to right then mirrored for a right-to-left
 * language: the units' names | the bars | a gap | the heatmap | the colour bar and its values;
 * the token labels shown under the heatmap, and the height. */
function unitsLayout(d, width) {
  const rtl = rightToLeft();
  const k = d.units.length;
  const count = d.tokens.length;
  const names = Math.max(...d.units.map((u) => unitsWidth(u))) + 12;
  const colours = colourBarScale(d.zmin, d.zmax, Math.max(2, Math.floor((k * UNITS_ROW) / 28)),
    UNITS_TEXT);
  const scaleArea = 14 + Math.max(colours.width, unitsWidth(d.scale)) + 6;
  const plots = Math.max(60, width - names - scaleArea);
  const barsWidth = plots * (1 - UNITS_GAP) * UNITS_SHARES[0];
  const heatWidth = plots * (1 - UNITS_GAP) * UNITS_SHARES[1];
  const heatLeft = names + barsWidth + plots * UNITS_GAP;
  const band = heatWidth / count;
  const rows = k * UNITS_ROW;
  const scaleHeight = Math.max(rows, 3 * UNITS_ROW);
  // the token labels under the heatmap: as many as fit side by side at an angle, the
  // outlined token's always among them
  const room = UNITS_TEXT * 1.3;
  const every = Math.max(1, Math.ceil(count / Math.max(1, Math.floor(heatWidth / room))));
  const shown = [];
  for (let p = 0; p < count; p += every) {
    if (p === d.token || Math.abs(p - d.token) * band >= room) shown.push(p);
  }
  if (!shown.includes(d.token)) shown.push(d.token);
  shown.sort((a, b) => a - b);
  const longest = Math.max(...shown.map((p) => [...tokenLabel(d.tokens[p])].length));
  const labels = angledRoom(longest, UNITS_TEXT);
  return { rtl, colours, barsLeft: names, barsWidth, heatLeft, heatWidth, band, rows, shown,
    scaleLeft: heatLeft + heatWidth + 14, scaleHeight, gap: plots * UNITS_GAP, top: UNITS_TOP,
    height: Math.max(UNITS_TOP + rows + labels, UNITS_TOP + scaleHeight + 12),
    X: (x) => (rtl ? width - x : x), // a point
    R: (x, w) => (rtl ? width - x - w : x) }; // a box's left edge
}

/** The bars: their values' axis above them, zero at their base, each unit's name beside its. */
function drawUnitBars(canvas, d, at) {
  const { top, rows, barsLeft, barsWidth, X, R } = at;
  const values = unitsBarScale(Math.min(0, ...d.values), Math.max(0, ...d.values), barsWidth);
  const xOfValue = (v) => barsLeft + ((v - values.low) / (values.high - values.low)) * barsWidth;
  const axis = svgNode("g", { "data-role": "axis" });
  for (const tick of values.ticks) {
    const x = X(xOfValue(tick));
    axis.append(
      svgNode("line", { x1: x, x2: x, y1: top - 4, y2: top + rows,
        stroke: tick === 0 ? "#8c8c8c" : "#e3e3e3" }),
      svgNode("text", { x, y: top - 10, "text-anchor": "middle", "font-size": UNITS_TEXT },
        number(tick, values.digits, false)),
    );
  }
  canvas.appendChild(axis);
  const zero = xOfValue(0);
  d.units.forEach((unit, i) => {
    const y = top + i * UNITS_ROW;
    const end = xOfValue(d.values[i]);
    canvas.append(
      svgNode("rect", { "data-role": "bar", "data-unit": i,
        x: R(Math.min(zero, end), Math.abs(end - zero)).toFixed(2), y: y + UNITS_ROW * 0.15,
        width: Math.abs(end - zero).toFixed(2), height: UNITS_ROW * 0.7, fill: d.colour }),
      svgNode("text", { "data-role": "label", "data-unit": i, x: X(barsLeft - 8),
        y: y + UNITS_ROW / 2 + UNITS_TEXT * 0.35, "text-anchor": at.rtl ? "start" : "end",
        "font-size": UNITS_TEXT }, unit),
    );
  });
}

/** The heatmap, a cell a unit and a token, and the outlined token's column: orange, edged in
 * black to stand apart from yellow cells. */
function drawUnitsHeatmap(canvas, d, at) {
  const { top, rows, band, heatLeft, R } = at;
  const cells = svgNode("g", { "data-role": "heatmap" });
  d.across.forEach((line, i) => {
    const y = top + i * UNITS_ROW;
    line.forEach((v, p) => {
      cells.appendChild(svgNode("rect", { "data-role": "cell", "data-unit": i, "data-token": p,
        x: R(heatLeft + p * band, band).toFixed(2), y, width: band.toFixed(2),
        height: UNITS_ROW, fill: unitsColour(d, v) }));
    });
  });
  canvas.appendChild(cells);
  const column = svgNode("g", { "data-role": "chosen-column", "data-token": d.token,
    fill: "none", "pointer-events": "none" });
  const columnX = R(heatLeft + d.token * band, band);
  column.append(
    svgNode("rect", { x: columnX - 2.5, y: top - 2.5, width: band + 5, height: rows + 5,
      stroke: FIGURE_INK, "stroke-width": 1 }),
    svgNode("rect", { x: columnX, y: top, width: band, height: rows, stroke: UNITS_OUTLINE,
      "stroke-width": 3 }),
  );
  canvas.appendChild(column);
}

/** The ring, the band and the readout at the chosen cell. */
function showChosen({ root, readout, state }, chosen) {
  const d = state.data;
  const on = Boolean(d && chosen);
  root.dataset.cell = on ? `${chosen.unit},${chosen.token}` : "";
  if (state.ring) {
    state.row.setAttribute("visibility", on ? "visible" : "hidden");
    const y = on ? state.top + chosen.unit * UNITS_ROW : 0;
    figureRingAt(state.ring, on ? { x: state.R(state.heatLeft + chosen.token * state.band,
      state.band), y, width: state.band, height: UNITS_ROW } : null);
    if (on) state.row.setAttribute("y", y);
  }
  if (!on) {
    readout.textContent = d ? unitsPrompt() : "";
    return;
  }
  readout.textContent = _("{unit}, token {position} “{token}”: {value}", {
    unit: d.units[chosen.unit], position: chosen.token, token: d.tokens[chosen.token],
    value: figureSaid(d.across[chosen.unit][chosen.token]) });
}

/** The cell a key moves the choice (`chosen`) to (null: none), or undefined: not the
 * figure's key. */
function unitsKey(event, d, chosen) {
  const lastToken = d.tokens.length - 1;
  const lastUnit = d.units.length - 1;
  const at = chosen || { unit: 0, token: d.token };
  if (event.key in UNITS_ARROWS) {
    const [down, along] = UNITS_ARROWS[event.key];
    return chosen ? {
      unit: Math.min(lastUnit, Math.max(0, at.unit + down)),
      token: Math.min(lastToken, Math.max(0, at.token + along * (rightToLeft() ? -1 : 1))),
    } : at; // the first key: the outlined token's largest unit
  }
  if (event.key === "Home" || event.key === "End") {
    return { unit: at.unit, token: event.key === "Home" ? 0 : lastToken };
  }
  if (event.key === "PageUp" || event.key === "PageDown") {
    return { unit: event.key === "PageUp" ? 0 : lastUnit, token: at.token };
  }
  return event.key === "Escape" && chosen ? null : undefined;
}

export function mount(host, data) {
  let chosen = null; // {unit, token}: a row and a position
  const { root, plot, readout, state, start } = mountFigure(host, {
    name: "tpu", testid: "top-units", choice: "cell", untitled: "top units",
    minWidth: UNITS_MIN_WIDTH, role: () => _("heatmap"), problem: unitsProblem,
    note: (note) => element("div", {}, note),
    counts: { units: (d) => d.units.length, tokens: (d) => d.tokens.length },
    label: unitsLabel, table: unitsTable,
    forget: (d) => {
      if (chosen && (!d || chosen.unit >= d.units.length || chosen.token >= d.tokens.length)) {
        chosen = null;
      }
    },
    draw: (canvas, d, width) => drawFigure(state, canvas, d, width),
    show: () => show(), choose,
    key: (event, d) => unitsKey(event, d, chosen),
  });

  const show = () => showChosen({ root, readout, state }, chosen);

  function choose(next) {
    const same = next && chosen && next.unit === chosen.unit && next.token === chosen.token;
    if (same || (!next && !chosen)) return;
    chosen = next;
    show();
  }

  plot.addEventListener("mousemove", (event) => {
    const d = state.data;
    if (!d) return;
    const seen = figurePoint(plot, state, event);
    const x = rightToLeft() ? state.width - seen.x : seen.x; // as drawn left to right
    const unit = Math.floor((seen.y - state.top) / UNITS_ROW);
    if (unit < 0 || unit >= d.units.length) return;
    if (x >= 0 && x <= state.barsRight + state.gap / 2) {
      choose({ unit, token: d.token }); // a bar: its unit on the outlined token
    } else if (x >= state.heatLeft && x <= state.heatRight) {
      const token = Math.min(d.tokens.length - 1, Math.floor((x - state.heatLeft) / state.band));
      choose({ unit, token });
    }
  });

  return start(data);
}
